package actor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShapeLinearRoundTrip(t *testing.T) {
	for _, s := range []Shape{{7}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2, 2, 3}} {
		require.NoError(t, s.Validate())
		seen := map[Index]bool{}
		for lin := 0; lin < s.Size(); lin++ {
			i := s.At(lin)
			require.True(t, s.Contains(i))
			require.Equal(t, lin, s.Linear(i))
			require.False(t, seen[i])
			seen[i] = true
		}
		require.False(t, s.Contains(s.At(s.Size()-1).add(len(s)-1, 1)))
	}
	require.Error(t, Shape{}.Validate())
	require.Error(t, Shape{1, 2, 3, 4, 5, 6, 7}.Validate())
	require.Error(t, Shape{3, 0}.Validate())
	require.Equal(t, Idx(2, 0, 4), Shape{3, 2, 5}.Wrap(Idx(-1, 2, 9)))
	require.Equal(t, "(1,2)", Idx(1, 2).String())
}

func (i Index) add(d, by int) Index {
	i[d] += int32(by)
	return i
}

func TestMapsCoverEveryPE(t *testing.T) {
	for _, m := range []Map{BlockMap, RoundRobinMap} {
		for _, n := range []int{1, 5, 64} {
			for pes := 1; pes <= 8; pes++ {
				count := make([]int, pes)
				for lin := 0; lin < n; lin++ {
					p := m(lin, n, pes)
					require.True(t, p >= 0 && p < pes)
					count[p]++
				}
				lo, hi := n, 0
				for _, c := range count {
					lo, hi = min(lo, c), max(hi, c)
				}
				require.LessOrEqual(t, hi-lo, 1, "map is balanced to within one element")
			}
		}
	}
}

func TestDeclarationErrors(t *testing.T) {
	j := NewJob()
	require.ErrorContains(t, j.Err(), "no main element")
	c := NewCollection(j, "c", Shape{0}, BlockMap, func(Index) *nopTask { return &nopTask{} })
	NewCollection(j, "c", Shape{2}, nil, func(Index) *nopTask { return &nopTask{} })
	err := j.Err()
	require.ErrorContains(t, err, "extent 0")
	require.ErrorContains(t, err, "declared twice")
	require.ErrorContains(t, err, "no map")
	_ = c
	require.Panics(t, func() { AnnotateCommutative(0) })
	require.True(t, AnnotateOrderDependent().NeedsDeterminant())
	require.False(t, AnnotateOrdered().NeedsDeterminant())
	require.False(t, AnnotateCommutative(6).NeedsDeterminant())
	require.Equal(t, "commutative(6)", AnnotateCommutative(6).String())
}

type nopTask struct{}

func (*nopTask) MarshalBinary() ([]byte, error) { return nil, nil }
func (*nopTask) UnmarshalBinary([]byte) error   { return nil }

// A collection's ordered and commutative handlers must be told apart by
// keys once there are two of them: an unkeyed one admits its messages at
// any moment. One unkeyed handler alone, or beside order-dependent ones,
// is fine.
func TestUnkeyedOrderedHandlersAreRefused(t *testing.T) {
	declare := func(keyFirst, keySecond bool, second Annotation) error {
		j := NewJob()
		c := NewCollection(j, "main", Shape{1}, BlockMap, func(Index) *nopTask { return &nopTask{} })
		var opts1, opts2 []HandlerOption
		if keyFirst {
			opts1 = append(opts1, KeyBy(func(*Start) uint64 { return 0 }))
		}
		if keySecond {
			opts2 = append(opts2, KeyBy(func(*ReductionResult) uint64 { return 1 }))
		}
		start := Handle(c, "start", AnnotateOrdered(), func(*nopTask, Context, *Start) {}, opts1...)
		Handle(c, "done", second, func(*nopTask, Context, *ReductionResult) {}, opts2...)
		Main(j, start, Idx(0))
		return j.Err()
	}
	err := declare(false, false, AnnotateOrdered())
	require.ErrorIs(t, err, ErrUnkeyedOrder)
	// Handlers are kept in name order: "done" is named first.
	require.ErrorContains(t, err, `collection "main": handler "done" (ordered) has no KeyBy, and "start" (ordered) is also ordered`)
	err = declare(true, false, AnnotateCommutative(2))
	require.ErrorContains(t, err, `handler "done" (commutative(2)) has no KeyBy, and "start" (ordered)`)
	require.NoError(t, declare(true, true, AnnotateOrdered()))
	require.NoError(t, declare(false, false, AnnotateOrderDependent()))
}
