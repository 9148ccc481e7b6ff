package stencil3d

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestSweepRowVectorPaths checks both vector versions against sweepRowGo,
// whichever sweepRow picks on this CPU: SSE2 always, AVX2 if the CPU has
// it.
func TestSweepRowVectorPaths(t *testing.T) {
	t.Run("SSE2", func(t *testing.T) {
		checkRow(t, rand.New(rand.NewPCG(7, 8)), func(out, c, ym, yp, zm, zp []float64) {
			sweepRowSIMD(false, out, c, ym, yp, zm, zp)
		})
	})
	t.Run("AVX2", func(t *testing.T) {
		if !cpu.X86.HasAVX2 {
			t.Skip("this CPU has no AVX2")
		}
		checkRow(t, rand.New(rand.NewPCG(9, 10)), func(out, c, ym, yp, zm, zp []float64) {
			sweepRowSIMD(true, out, c, ym, yp, zm, zp)
		})
	})
}
