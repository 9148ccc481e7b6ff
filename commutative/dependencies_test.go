package commutative

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func ordered(stream string, index int) Observed {
	return Observed{Order: Ordered, Stream: stream, Index: index}
}

func unordered() Observed { return Observed{Order: OrderDependent} }

func inRegion(region string) Observed { return Observed{Order: Commutative, Region: region} }

// interleave returns a random interleaving of the given streams, keeping
// each stream's own order.
func interleave(rng *rand.Rand, streams ...[]Observed) []Observed {
	var out []Observed
	next := make([]int, len(streams))
	for {
		var open []int
		for i, s := range streams {
			if next[i] < len(s) {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		pick := open[rng.IntN(len(open))]
		out = append(out, streams[pick][next[pick]])
		next[pick]++
	}
}

func orderedStream(name string, n int) []Observed {
	s := make([]Observed, n)
	for i := range s {
		s[i] = ordered(name, i)
	}
	return s
}

func unorderedSet(n int) []Observed {
	s := make([]Observed, n)
	for i := range s {
		s[i] = unordered()
	}
	return s
}

func count(t *testing.T, pattern []Observed) int {
	t.Helper()
	deps, err := MinimalDependencies(pattern)
	require.NoError(t, err)
	require.Len(t, deps.Receptions, deps.Count, "one carrying reception per dependency")
	return deps.Count
}

func TestTotallyOrderedNeedsNone(t *testing.T) {
	for n := 0; n <= 10; n++ {
		require.Equal(t, 0, count(t, orderedStream("a", n)), "n=%d", n)
	}
}

func TestUnorderedNeedsNMinusOne(t *testing.T) {
	for n := 1; n <= 10; n++ {
		require.Equal(t, n-1, count(t, unorderedSet(n)), "n=%d", n)
	}
}

func TestTwoInterleavedOrderedSequencesNeedMin(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for m := 1; m <= 6; m++ {
		for n := 1; n <= 6; n++ {
			for trial := 0; trial < 20; trial++ {
				pattern := interleave(rng, orderedStream("a", m), orderedStream("b", n))
				require.Equal(t, min(m, n), count(t, pattern), "m=%d n=%d %v", m, n, pattern)
			}
		}
	}
}

func TestKOrderedSequencesNeedSumMinusMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		k := 1 + rng.IntN(6)
		streams := make([][]Observed, k)
		sum, longest := 0, 0
		for i := range streams {
			size := 1 + rng.IntN(8)
			streams[i] = orderedStream(fmt.Sprintf("x%d", i), size)
			sum += size
			longest = max(longest, size)
		}
		pattern := interleave(rng, streams...)
		require.Equal(t, sum-longest, count(t, pattern), "sizes %v", streams)
	}
}

func TestUnorderedInterleavedWithOrderedNeedsN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 6; n++ {
		for m := n; m <= n+4; m++ { // the ordered sequence is the longest
			pattern := interleave(rng, unorderedSet(n), orderedStream("o", m))
			require.Equal(t, n, count(t, pattern), "n=%d m=%d", n, m)
		}
	}
}

func TestTwoUnorderedSetsNeedAllButOne(t *testing.T) {
	require.Equal(t, 3+4-1, count(t, append(unorderedSet(3), unorderedSet(4)...)))
}

func TestCommutativeRegionNeedsNone(t *testing.T) {
	for n := 1; n <= 64; n *= 2 {
		pattern := make([]Observed, n)
		for i := range pattern {
			pattern[i] = inRegion("ghosts")
		}
		require.Equal(t, 0, count(t, pattern), "n=%d", n)
	}
}

func TestRegionsPlacedInAnOrderedSequenceNeedNone(t *testing.T) {
	var pattern []Observed
	for iteration := 0; iteration < 5; iteration++ {
		for face := 0; face < 6; face++ {
			r := inRegion(fmt.Sprintf("iter%d", iteration))
			r.Stream = "steps"
			pattern = append(pattern, r)
		}
		pattern = append(pattern, ordered("steps", iteration))
	}
	// The program places both kinds in the one "steps" sequence.
	deps, err := MinimalDependencies(pattern)
	require.NoError(t, err)
	require.Equal(t, 0, deps.Count)
}

func TestUnorderedAroundRegionCountsRegionAsOneEvent(t *testing.T) {
	pattern := []Observed{unordered(), inRegion("r"), inRegion("r"), inRegion("r"), unordered()}
	deps, err := MinimalDependencies(pattern)
	require.NoError(t, err)
	// Three sequences of one logical event each: two dependencies.
	require.Equal(t, 2, deps.Count)
}

func TestInconsistentPatternsAreRejected(t *testing.T) {
	for name, pattern := range map[string][]Observed{
		"ordered out of order":   {ordered("a", 1), ordered("a", 0)},
		"ordered without stream": {{Order: Ordered}},
		"region not contiguous":  {inRegion("r"), unordered(), inRegion("r")},
		"commutative no region":  {{Order: Commutative}},
		"unknown order":          {{Order: Order(9)}},
		"ordered index repeated": {ordered("a", 0), ordered("a", 0)},
	} {
		_, err := MinimalDependencies(pattern)
		require.ErrorIs(t, err, ErrPattern, name)
	}
}
