//go:build amd64 && !amd64.v3

package kernel

import "testing"

// TestDigestsArePinned guards the operation order: the kernel's
// arithmetic follows the reference's term by term, and any reordering of
// a sum changes these digests. They hold for amd64 builds without fused
// multiply-add (GOAMD64 v1 or v2); with FMA (amd64.v3, arm64) the compiler
// contracts products and sums and the bits differ.
func TestDigestsArePinned(t *testing.T) {
	for _, tc := range []struct {
		cycles int
		digest uint64
	}{
		{50, 0x966e686b8f35ad47},
		{0, 0x8a9546c5a721b8e2}, // to the stop time: 231 cycles
	} {
		if raceDetectorEnabled && tc.cycles == 0 {
			continue
		}
		res, err := Run(10, tc.cycles)
		if err != nil {
			t.Fatal(err)
		}
		if res.Digest != tc.digest {
			t.Errorf("10³ after %d cycles: digest %016x, pinned %016x", res.Iterations, res.Digest, tc.digest)
		}
	}
}
