package scheduler_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
)

func run(t *testing.T, app actor.App, pes int, kind logging.Kind) inprocess.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := inprocess.Run(ctx, app, nil, pes, nil, inprocess.WithProtocol(kind))
	require.NoError(t, err)
	return res
}

func TestRingResultsIndependentOfPlacement(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) { testRing(t, kind) })
	}
}

func testRing(t *testing.T, kind logging.Kind) {
	const n, rounds = 23, 12
	want := scheduler.ExpectedRing(n, rounds)
	// The order-sensitive float sum must differ from a plain left-to-right
	// sum, or the test would not show that the tree is respected.
	plain := 0.0
	for me := 0; me < n; me++ {
		plain += scheduler.Contribution(me)
	}
	require.NotEqual(t, fmt.Sprintf("sum %x", math.Float64bits(plain)), strings.Fields(want[0])[0]+" "+strings.Fields(want[0])[1])
	for _, pes := range []int{1, 2, 3, 5} {
		for name, m := range map[string]actor.Map{"block": actor.BlockMap, "roundrobin": actor.RoundRobinMap} {
			t.Run(fmt.Sprintf("%s/%dpes", name, pes), func(t *testing.T) {
				res := run(t, scheduler.RingApp(n, rounds, m), pes, kind)
				require.Equal(t, 0, res.Status)
				require.Equal(t, want, res.Output)
				var delivered uint64
				var determinants int
				for _, s := range res.Stats {
					require.Zero(t, s.Dropped)
					delivered += s.Delivered
					determinants += s.Protocol.Determinants
				}
				switch kind {
				case logging.KindPartialDet:
					// Only the replies to main are order-dependent.
					require.Equal(t, (n+1)/2, determinants)
				case logging.KindFullDet:
					require.Equal(t, int(delivered), determinants)
				case logging.KindNone:
					require.Zero(t, determinants)
				}
				// start + n begins + 2 per scheduler.Worker per round + 3 reductions
				// of n contributions at the reducer + 3 results + pings +
				// replies + quiescence callback.
				require.Equal(t, uint64(1+n+2*n*rounds+3*n+3+2*((n+1)/2)+1), delivered)
			})
		}
	}
}

func TestQuiescenceWithoutExitIsAnError(t *testing.T) {
	app := actor.App{Name: "stuck", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *scheduler.MainTask { return &scheduler.MainTask{} })
		workers := actor.NewCollection(j, "w", actor.Shape{4}, actor.BlockMap, func(actor.Index) *scheduler.Worker { return &scheduler.Worker{} })
		// Keyed with key 7 while workers expect 0: waits forever.
		wait := actor.Handle(workers, "wait", actor.AnnotateOrdered(), func(w *scheduler.Worker, ctx actor.Context, m *testmsg.Num) {},
			actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }))
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *scheduler.MainTask, ctx actor.Context, m *actor.Start) {
			wait.Broadcast(ctx, &testmsg.Num{Key: 7})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := inprocess.Run(ctx, app, nil, 2, nil)
	require.ErrorIs(t, err, job.ErrQuiescentWithoutExit)
	// The error says what waits, and for what.
	require.ErrorContains(t, err, "w(0): expects key 0; holds 1 of w.wait key 7 (from main(0) on PE 0)")
	require.ErrorContains(t, err, "w(3): expects key 0; holds 1 of w.wait key 7 (from main(0) on PE 0)")
	var delivered uint64
	for _, s := range res.Stats {
		delivered += s.Delivered
	}
	require.Equal(t, uint64(1), delivered, "only Start is handled; the four keyed messages wait")
}

// A callback handler keyed by the reduction number receives the results
// in number order; a task inside an open commutative region at a
// checkpoint is reported by name instead of failing the PE.
func TestKeyedCallbacksAndRegionAtCheckpoint(t *testing.T) {
	app := func(openRegion bool) actor.App {
		return actor.App{Name: "keyed", Define: func(j *actor.Job, args []string) error {
			mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *scheduler.MainTask { return &scheduler.MainTask{} })
			workers := actor.NewCollection(j, "w", actor.Shape{5}, actor.RoundRobinMap, func(actor.Index) *scheduler.SyncWorker { return &scheduler.SyncWorker{} })
			workers.UsesAtSync()
			var results *actor.Proxy[*actor.ReductionResult]
			var half *actor.Proxy[*testmsg.Num]
			step := actor.Handle(workers, "step", actor.AnnotateOrdered(), func(w *scheduler.SyncWorker, ctx actor.Context, m *testmsg.Num) {
				for n := 0; n < 3; n++ {
					ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(n)}}, results.At(actor.Idx(0)))
				}
				if openRegion && ctx.Index()[0] == 0 {
					half.Send(ctx, actor.Idx(0), &testmsg.Num{})
				}
				ctx.AtSync(0)
			})
			// Start has key 0, result n key n+2; the half region (key 1)
			// comes first when it is sent at all.
			results = actor.Handle(mains, "results", actor.AnnotateOrdered(), func(t *scheduler.MainTask, ctx actor.Context, r *actor.ReductionResult) {
				ctx.Printf("result %d = %d", r.Number, r.Ints[0])
				ctx.Expect(r.Number + 3)
				if r.Number == 2 && !openRegion {
					ctx.Exit(0)
				}
			}, actor.KeyBy(func(r *actor.ReductionResult) uint64 { return r.Number + 2 }))
			half = actor.Handle(mains, "half", actor.AnnotateCommutative(2), func(t *scheduler.MainTask, ctx actor.Context, m *testmsg.Num) {},
				actor.KeyBy(func(*testmsg.Num) uint64 { return 1 }))
			start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *scheduler.MainTask, ctx actor.Context, m *actor.Start) {
				if openRegion {
					ctx.Expect(1)
				} else {
					ctx.Expect(2)
				}
				step.Broadcast(ctx, &testmsg.Num{})
			}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
			actor.Main(j, start, actor.Idx(0))
			return nil
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := inprocess.Run(ctx, app(false), nil, 3, nil, inprocess.WithProtocol(logging.KindPartialDet))
	require.NoError(t, err)
	require.Equal(t, []string{"result 0 = 0", "result 1 = 5", "result 2 = 10"}, res.Output)

	_, err = inprocess.Run(ctx, app(true), nil, 3, nil, inprocess.WithProtocol(logging.KindPartialDet), inprocess.WithCheckpointEvery(1))
	require.ErrorIs(t, err, scheduler.ErrRegionAtCheckpoint)
	require.ErrorContains(t, err, "main(0) is inside a region of handler half")
}

// A handler that panics stops the job, in process as on PE processes,
// with the panic's value, the task, the handler and the stack.
func TestHandlerPanicStopsTheJob(t *testing.T) {
	app := actor.App{Name: "panics", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *scheduler.MainTask { return &scheduler.MainTask{} })
		workers := actor.NewCollection(j, "w", actor.Shape{4}, actor.BlockMap, func(actor.Index) *scheduler.Worker { return &scheduler.Worker{} })
		work := actor.Handle(workers, "work", actor.AnnotateOrdered(), func(w *scheduler.Worker, ctx actor.Context, m *testmsg.Num) {
			if ctx.Index()[0] == 2 {
				var table map[string]int
				table["boom"]++ // a nil map: the kind of bug a handler has
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *scheduler.MainTask, ctx actor.Context, m *actor.Start) {
			work.Broadcast(ctx, &testmsg.Num{})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := inprocess.Run(ctx, app, nil, 3, nil, inprocess.WithProtocol(kind))
		cancel()
		require.ErrorIs(t, err, scheduler.ErrHandlerPanic)
		require.ErrorContains(t, err, "w(2), handler work")
		require.ErrorContains(t, err, "assignment to entry in nil map")
		require.ErrorContains(t, err, "job_test.go") // the stack
	}
}

// Under partialdet, two messages without a determinant that a task could
// handle next stop the job with both handlers named: the program does not
// order them, so no replay could follow the order they had.
func TestAmbiguousOrderIsReported(t *testing.T) {
	app := actor.App{Name: "ambiguous", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *scheduler.MainTask { return &scheduler.MainTask{} })
		sinks := actor.NewCollection(j, "sink", actor.Shape{1}, actor.BlockMap, func(actor.Index) *scheduler.Worker { return &scheduler.Worker{} })
		// Both keyed 0: the keys do not tell them apart.
		key := actor.KeyBy(func(*testmsg.Num) uint64 { return 0 })
		left := actor.Handle(sinks, "left", actor.AnnotateOrdered(), func(w *scheduler.Worker, ctx actor.Context, m *testmsg.Num) {}, key)
		right := actor.Handle(sinks, "right", actor.AnnotateOrdered(), func(w *scheduler.Worker, ctx actor.Context, m *testmsg.Num) {}, key)
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *scheduler.MainTask, ctx actor.Context, m *actor.Start) {
			left.Send(ctx, actor.Idx(0), &testmsg.Num{})
			right.Send(ctx, actor.Idx(0), &testmsg.Num{})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := inprocess.Run(ctx, app, nil, 2, nil, inprocess.WithProtocol(logging.KindPartialDet))
	require.ErrorIs(t, err, scheduler.ErrAmbiguousOrder)
	require.ErrorContains(t, err, `sink(0) could handle "left" (ordered, key 0) from main(0) or "right" (ordered, key 0) from main(0) next`)
	// Under none the order does not matter to recovery: the job runs.
	_, err = inprocess.Run(ctx, app, nil, 2, nil, inprocess.WithProtocol(logging.KindNone))
	require.ErrorIs(t, err, job.ErrQuiescentWithoutExit)
}

// A job that stops making progress (here a handler that never returns)
// ends after the stall timeout with a diagnosis that names the handler,
// instead of hanging.
func TestStallIsDiagnosed(t *testing.T) {
	release := make(chan struct{})
	app := actor.App{Name: "stuck", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *scheduler.MainTask { return &scheduler.MainTask{} })
		workers := actor.NewCollection(j, "w", actor.Shape{4}, actor.BlockMap, func(actor.Index) *scheduler.Worker { return &scheduler.Worker{} })
		work := actor.Handle(workers, "work", actor.AnnotateOrdered(), func(w *scheduler.Worker, ctx actor.Context, m *testmsg.Num) {
			if ctx.Index()[0] == 3 {
				<-release // a handler that does not return
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *scheduler.MainTask, ctx actor.Context, m *actor.Start) {
			work.Broadcast(ctx, &testmsg.Num{})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := inprocess.Run(ctx, app, nil, 2, nil, inprocess.WithStallTimeout(400*time.Millisecond))
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("the stalled job did not end")
	}
	close(release)
	require.ErrorIs(t, err, job.ErrStalled)
	require.ErrorContains(t, err, "PE 1 did not answer: it is running w(3) in handler work")
	require.ErrorContains(t, err, "PE 0 (generation 0")
}

// A line a task printed is written once, even when the task prints it
// again as it re-executes after a failure: the job's output is that of
// the failure-free run, under each protocol (every task rolled back under
// none, the failed PE's tasks replayed under the others).
func TestOutputIsWrittenOnceAfterAFailure(t *testing.T) {
	const workers, rounds = 8, 12
	app := scheduler.StepAppWith(workers, rounds, func(ctx actor.Context, me int, round uint64) {
		ctx.Printf("worker %d round %d", me, round)
	})
	run := func(kind logging.Kind, opts ...inprocess.Option) inprocess.Result {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := inprocess.Run(ctx, app, nil, 3, nil, append(opts, inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(4))...)
		require.NoError(t, err, "%v", kind)
		require.Equal(t, 0, res.Status)
		slices.Sort(res.Output)
		return res
	}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		clean := run(kind)
		require.Len(t, clean.Output, workers*rounds+1, "%v: a line per worker and round, and the digest", kind)
		killed := run(kind, inprocess.WithKill(1, 6))
		var again uint64
		for _, s := range killed.Stats {
			again += uint64(s.Restored + s.RolledBack)
		}
		require.Positive(t, again, "%v: tasks re-executed", kind)
		require.Equal(t, clean.Output, killed.Output, "%v", kind)
	}
}
