package sortmerge

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Into sorts a slice whose prefix is sorted, whatever the new tail holds,
// and leaves it alone when the tail already follows the prefix.
func TestInto(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		seen := map[uint64]bool{}
		var ts []uint64
		for len(ts) < r.IntN(40) {
			v := uint64(r.IntN(100))
			if !seen[v] {
				seen[v] = true
				ts = append(ts, v)
			}
		}
		sorted := r.IntN(len(ts) + 1)
		slices.Sort(ts[:sorted])
		want := slices.Sorted(slices.Values(ts))
		got, _ := Into(slices.Clone(ts), sorted, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: Into(%v, %d) = %v, want %v", seed, ts, sorted, got, want)
		}
	}
}
