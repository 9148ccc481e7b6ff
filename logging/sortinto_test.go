package logging

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sortInto sorts a slice whose prefix is sorted, whatever the new tail
// holds, and leaves it alone when the tail already follows the prefix.
func TestSortInto(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		seen := map[TaskID]bool{}
		var ts []TaskID
		for len(ts) < r.IntN(40) {
			v := TaskID(r.IntN(100))
			if !seen[v] {
				seen[v] = true
				ts = append(ts, v)
			}
		}
		sorted := r.IntN(len(ts) + 1)
		slices.Sort(ts[:sorted])
		want := slices.Sorted(slices.Values(ts))
		got, _ := sortInto(slices.Clone(ts), sorted, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: sortInto(%v, %d) = %v, want %v", seed, ts, sorted, got, want)
		}
	}
}
