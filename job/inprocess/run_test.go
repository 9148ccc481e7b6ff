package inprocess_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

type stateless struct{}

func (*stateless) MarshalBinary() ([]byte, error) { return nil, nil }
func (*stateless) UnmarshalBinary([]byte) error   { return nil }

// sumApp: main asks n cells for their index and prints the sum; with
// exit false it never calls Exit.
func sumApp(n int, exit bool) actor.App {
	return actor.App{Name: "sum", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		cells := actor.NewCollection(j, "cells", actor.Shape{n}, actor.RoundRobinMap, func(actor.Index) *stateless { return &stateless{} })
		var total *actor.Proxy[*actor.ReductionResult]
		ask := actor.Handle(cells, "ask", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *wrapperspb.Int64Value) {
			ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(ctx.Index()[0])}}, total.At(actor.Idx(0)))
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *actor.Start) {
			ctx.Expect(1)
			ask.Broadcast(ctx, wrapperspb.Int64(0))
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		total = actor.Handle(mains, "total", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Printf("total %d of %d", r.Ints[0], r.Contributors)
			if exit {
				ctx.Exit(3)
			}
		}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
}

// A job runs to its end on every PE count, with its output, its status
// and every PE's counters; WithDebug shows the coordinator's notes.
func TestRun(t *testing.T) {
	for _, pes := range []int{1, 3} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var debug strings.Builder
		res, err := inprocess.Run(ctx, sumApp(10, true), nil, pes, nil, inprocess.WithDebug(&debug))
		cancel()
		require.NoError(t, err)
		require.Equal(t, 3, res.Status)
		require.Equal(t, []string{"total 45 of 10"}, res.Output)
		require.Len(t, res.Stats, pes)
		var delivered uint64
		for _, s := range res.Stats {
			delivered += s.Delivered
		}
		// Start, 10 asks, 10 contributions, the total.
		require.Equal(t, uint64(22), delivered)
		require.Contains(t, debug.String(), "coordinator: checkpoint 1 staged and copied to buddies")
		require.NotContains(t, debug.String(), "coordinator phase", "the states are shown only for a job that fails")
	}
}

// A job that fails says why; WithDebug then shows every PE's state and
// the coordinator's.
func TestRunFailureWithDebug(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var debug strings.Builder
	res, err := inprocess.Run(ctx, sumApp(4, false), nil, 2, nil, inprocess.WithDebug(&debug))
	require.ErrorIs(t, err, job.ErrQuiescentWithoutExit)
	require.Equal(t, []string{"total 6 of 4"}, res.Output)
	require.Contains(t, debug.String(), "coordinator: diagnosing")
	require.Contains(t, debug.String(), "PE 0 gen 0")
	require.Contains(t, debug.String(), "PE 1 gen 0")
	require.Contains(t, debug.String(), "coordinator phase")
}

// A sender may change a message, and the buffer it holds, as soon as Send
// returns (actor.Proxy.Send): main sends one BytesValue three times to a
// cell on another PE, writing its buffer again between the sends, and the
// cell gets the three contents it was sent with, under each protocol.
func TestSendersMayReuseAMessage(t *testing.T) {
	app := actor.App{Name: "reuse", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		cells := actor.NewCollection(j, "cells", actor.Shape{2}, actor.RoundRobinMap, func(actor.Index) *stateless { return &stateless{} })
		var got []string
		take := actor.Handle(cells, "take", actor.AnnotateOrderDependent(), func(_ *stateless, ctx actor.Context, m *wrapperspb.BytesValue) {
			got = append(got, string(m.Value))
			if len(got) == 3 {
				ctx.Printf("%s", strings.Join(got, " "))
				ctx.Exit(0)
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *actor.Start) {
			buf := []byte("aaaa")
			m := &wrapperspb.BytesValue{Value: buf}
			for _, c := range []byte("abc") {
				for i := range buf {
					buf[i] = c
				}
				take.Send(ctx, actor.Idx(1), m)
			}
			m.Value = []byte("zz")
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := inprocess.Run(ctx, app, nil, 2, nil, inprocess.WithProtocol(kind))
		cancel()
		require.NoError(t, err, "%v", kind)
		require.Equal(t, []string{"aaaa bbbb cccc"}, res.Output, "%v", kind)
	}
}
