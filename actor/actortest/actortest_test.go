package actortest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/actor/actortest"
	"github.com/gochare/gochare/actor/regioncheck"
	"github.com/gochare/gochare/internal/sums"
	"github.com/gochare/gochare/job/inprocess"
)

func define(t *testing.T, args ...string) *actor.Job {
	t.Helper()
	j := actor.NewJob()
	require.NoError(t, sums.Define(j, args))
	require.NoError(t, j.Err())
	return j
}

func region(round uint64) []any {
	var msgs []any
	for i := range sums.Parts {
		msgs = append(msgs, sums.Add{Round: round, F: sums.FloatValues[i], I: sums.IntValues[i]})
	}
	return msgs
}

func TestHelperCatchesFloatsSummedInArrivalOrder(t *testing.T) {
	j := define(t, "--float")
	err := actortest.CommutativeErr(j, "acc", "add", actor.Idx(1), &sums.Accumulator{}, 0, region(0)...)
	require.ErrorIs(t, err, regioncheck.ErrNotCommutative)
	for _, want := range []string{`collection "acc"`, `handler "add"`, "region key 0", "the packed state differs"} {
		require.Contains(t, err.Error(), want)
	}
	// The integer sums of the same job commute: the float field stays 0.
	require.NoError(t, actortest.CommutativeErr(define(t), "acc", "add", actor.Idx(1), &sums.Accumulator{F: 0.5, I: 7}, 3, region(3)...))
	actortest.CheckCommutative(t, define(t), "acc", "add", actor.Idx(0), &sums.Accumulator{}, 0, region(0)...)
}

func TestHelperRefusesWhatIsNotARegion(t *testing.T) {
	j := define(t)
	for _, c := range []struct {
		coll, handler string
		at            actor.Index
		msgs          []any
		want          string
	}{
		{"nope", "add", actor.Idx(0), region(0), "no collection"},
		{"acc", "nope", actor.Idx(0), region(0), "no handler"},
		{"parts", "emit", actor.Idx(0), nil, "not commutative"},
		{"acc", "add", actor.Idx(5), region(0), "outside collection"},
		{"acc", "add", actor.Idx(0), region(0)[:3], "has 4 messages, 3 given"},
		{"acc", "add", actor.Idx(0), append(region(0)[:3], "text"), "message 3"},
	} {
		err := actortest.CommutativeErr(j, c.coll, c.handler, c.at, &sums.Accumulator{}, 0, c.msgs...)
		require.ErrorContains(t, err, c.want, "%+v", c)
	}
}

// sendsOnLast is a task whose commutative handler sends once it has seen
// the region's last message: the same sends in every order, but made by
// the handlers of different messages.
type sendsOnLast struct{ Seen int }

func TestHelperCatchesSendsMadeByAnotherMessagesHandler(t *testing.T) {
	j := actor.NewJob()
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *sendsOnLast { return &sendsOnLast{} })
	var done *actor.Proxy[int64]
	gather := actor.Handle(mains, "gather", actor.AnnotateCommutative(3), func(s *sendsOnLast, ctx actor.Context, v int64) {
		s.Seen++
		if s.Seen == 3 {
			done.Send(ctx, actor.Idx(0), 1)
			s.Seen = 0
		}
	})
	done = actor.Handle(mains, "done", actor.AnnotateOrderDependent(), func(*sendsOnLast, actor.Context, int64) {})
	actor.Main(j, actor.Handle(mains, "start", actor.AnnotateOrderDependent(), func(*sendsOnLast, actor.Context, *actor.Start) {}), actor.Idx(0))
	require.NoError(t, j.Err())
	_ = gather
	err := actortest.CommutativeErr(j, "main", "gather", actor.Idx(0), &sendsOnLast{}, 0, int64(1), int64(2), int64(3))
	require.ErrorIs(t, err, regioncheck.ErrNotCommutative)
	require.ErrorContains(t, err, "the handler of message 1 did more: send to main(0).done key 0")
}

// The same job under --check-annotations, in one process: the float sums
// stop it naming the collection, the handler and the region key; the
// integer sums pass, on 1 to 3 PEs.
func TestInProcessJobCheck(t *testing.T) {
	for pes := 1; pes <= 3; pes++ {
		t.Run(fmt.Sprintf("%dpes", pes), func(t *testing.T) {
			res, err := inprocess.Run(context.Background(), sums.App, []string{"--float"}, pes, nil, inprocess.WithCheckAnnotations(2))
			require.ErrorIs(t, err, regioncheck.ErrNotCommutative, "%+v", res)
			require.ErrorContains(t, err, `collection "acc", handler "add", region key 0`)

			res, err = inprocess.Run(context.Background(), sums.App, []string{"--rounds", "3"}, pes, nil, inprocess.WithCheckAnnotations(2))
			require.NoError(t, err)
			require.Equal(t, []string{
				"round 0: float sum 0, integer sum 20",
				"round 1: float sum 0, integer sum 40",
				"round 2: float sum 0, integer sum 60",
			}, res.Output)
			checked := uint64(0)
			for _, st := range res.Stats {
				checked += st.RegionsChecked
			}
			require.Equal(t, uint64(3*sums.Accumulators), checked, "one region per accumulator and round")
			// Without the check the float job runs to its end.
			res, err = inprocess.Run(context.Background(), sums.App, []string{"--float"}, pes, nil)
			require.NoError(t, err)
			require.Len(t, res.Output, 2)
			require.True(t, strings.HasPrefix(res.Output[0], "round 0: float sum "), res.Output[0])
		})
	}
}

func TestCheckErrorUnwrapsToSentinel(t *testing.T) {
	require.False(t, errors.Is(regioncheck.ErrRerun, regioncheck.ErrNotCommutative))
}
