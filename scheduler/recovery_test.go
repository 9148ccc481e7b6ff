package scheduler

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
)

// stepWorker is a ring worker that offers a sync point after every round.
type stepWorker struct {
	worker
	resume func(*stepWorker, actor.Context)
}

func (w *stepWorker) ResumeFromSync(ctx actor.Context) { w.resume(w, ctx) }

// stepApp is the ring of ringApp with sync points: n workers (block
// mapped) exchange values with their neighbours for rounds rounds; after
// round r a worker offers step r. Main prints the digest of the workers'
// histories, the line expectedRing gives.
func stepApp(n, rounds int) actor.App { return stepAppWith(n, rounds, nil) }

// unevenStepApp is stepApp in which the workers on the first PEs of a
// block map work longer each round, so that load balancing moves tasks.
func unevenStepApp(n, rounds int) actor.App {
	return stepAppWith(n, rounds, func(me int) {
		if me < n/4 {
			deadline := time.Now().Add(200 * time.Microsecond)
			for time.Now().Before(deadline) {
			}
		}
	})
}

// stepAppWith is stepApp whose workers call burn(index) every round.
func stepAppWith(n, rounds int, burn func(me int)) actor.App {
	return actor.App{Name: "steps", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		var neighbour, begin *actor.Proxy[*testmsg.Num]
		send := func(w *stepWorker, ctx actor.Context) {
			me := int(ctx.Index()[0])
			v := contribution(me) + float64(w.round)
			ctx.Expect(w.round + 1)
			neighbour.Send(ctx, actor.Idx((me+1)%n), &testmsg.Num{Key: w.round + 1, From: 0, Value: v})
			neighbour.Send(ctx, actor.Idx((me+n-1)%n), &testmsg.Num{Key: w.round + 1, From: 1, Value: v})
		}
		workers := actor.NewCollection(j, "workers", actor.Shape{n}, actor.BlockMap, func(actor.Index) *stepWorker { return &stepWorker{resume: send} })
		workers.UsesAtSync()
		concat := j.CustomReducer("concat", func(a, b actor.Value) actor.Value {
			return actor.Value{Bytes: append(append([]byte(nil), a.Bytes...), b.Bytes...)}
		})
		// Main handles Start (key 0), then the digests (key 1).
		digests := actor.Handle(mains, "digests", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			h := fnv.New64a()
			h.Write(r.Bytes)
			ctx.Printf("digest %x of %d bytes", h.Sum64(), len(r.Bytes))
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
		neighbour = actor.Handle(workers, "neighbour", actor.AnnotateCommutative(2),
			func(w *stepWorker, ctx actor.Context, m *testmsg.Num) { w.got[m.From] = m.Value },
			actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }),
			actor.WhenComplete(func(w *stepWorker, ctx actor.Context, key uint64) {
				if burn != nil {
					burn(int(ctx.Index()[0]))
				}
				h := fnv.New64a()
				fmt.Fprintf(h, "%d %x %x %x", key-1, math.Float64bits(w.got[0]), math.Float64bits(w.got[1]), w.history)
				w.history = h.Sum64()
				w.round++
				if int(w.round) == rounds {
					ctx.Contribute(concat, actor.Value{Bytes: binary.LittleEndian.AppendUint64(nil, w.history)}, digests.At(actor.Idx(0)))
					return
				}
				if ctx.AtSync(w.round - 1) {
					return // ResumeFromSync sends the next round
				}
				send(w, ctx)
			}))
		begin = actor.Handle(workers, "begin", actor.AnnotateOrdered(), func(w *stepWorker, ctx actor.Context, m *testmsg.Num) {
			send(w, ctx)
		}, actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }))
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			ctx.Expect(1)
			begin.Broadcast(ctx, &testmsg.Num{})
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
}

// reachedControl records a PE's Reached answers.
type reachedControl struct {
	nopControl
	reached []job.WatchProgress
}

func (c *reachedControl) Reached(generation, step uint64) {
	c.reached = append(c.reached, job.WatchProgress{Generation: generation, Step: step})
}

// A PE answers WatchProgress once, as soon as every local task of a
// collection with sync points has offered the watched step or a later one:
// at once if they already have, else at the step that completes it.
// Tasks of other collections (main, the reducers) are not waited for.
func TestWatchProgressWaitsForEveryLocalSyncTask(t *testing.T) {
	control := &reachedControl{}
	pe, err := New(Config{Rank: 0, Size: 2, JobID: 42, App: stepApp(4, 10), Protocol: logging.KindPartialDet,
		Net: &recordingNet{sent: map[int][][]byte{}}, Control: control})
	require.NoError(t, err)
	workers := pe.colls[1]
	require.Equal(t, []int{0, 1}, workers.sorted, "workers 0 and 1 are on PE 0")
	w0, w1 := workers.local[0], workers.local[1]

	pe.Event(job.WatchProgress{Generation: 0, Step: 3})
	require.Empty(t, control.reached, "no task offered a step yet")
	pe.atSync(w0, 5)
	pe.atSync(w1, 2)
	require.Empty(t, control.reached, "worker 1 is at step 2")
	pe.atSync(w1, 3)
	require.Equal(t, []job.WatchProgress{{Generation: 0, Step: 3}}, control.reached)
	pe.atSync(w1, 4)
	require.Len(t, control.reached, 1, "answered once")
	require.Equal(t, job.Progress{Step: 5, Offered: true}, pe.progress)

	pe.Event(job.WatchProgress{Generation: 0, Step: 4})
	require.Equal(t, []job.WatchProgress{{Generation: 0, Step: 3}, {Generation: 0, Step: 4}}, control.reached, "already there: answered on receipt")
	pe.Event(job.WatchProgress{Generation: 7, Step: 1})
	require.Len(t, control.reached, 2, "a watch of another recovery is ignored")
}

// In process, with a PE killed in the middle of a checkpoint period, the
// job reports once that it regained the progress it had at the failure,
// under message logging and under checkpoint/restart, and still ends with
// the failure-free result. With two failures the last recovery is
// regained too.
func TestProgressRegainedInProcess(t *testing.T) {
	const n, rounds, every = 8, 30, 5
	want := expectedRing(n, rounds)[1]
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for name, kills := range map[string]map[int]uint64{
			"one failure":  {2: 17},
			"two failures": {1: 17, 2: 19},
		} {
			t.Run(fmt.Sprintf("%v/%s", kind, name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				opts := []Option{WithProtocol(kind), WithCheckpointEvery(every)}
				for pe, step := range kills {
					opts = append(opts, WithKill(pe, step))
				}
				res, err := RunInProcess(ctx, stepApp(n, rounds), nil, 4, nil, opts...)
				require.NoError(t, err)
				require.Equal(t, []string{want}, res.Output)
				require.NotEmpty(t, res.Regained)
				for i, r := range res.Regained {
					if i > 0 {
						require.Greater(t, r.Generation, res.Regained[i-1].Generation, "one report per recovery")
					}
					// A worker completes round r only after its neighbours
					// completed r-1: when the first PE died at step 17 the
					// neighbours of its workers had offered step 16, and a
					// PE's progress never goes back. No task passes the
					// sync point at step 19 before its checkpoint, which
					// comes after both failures (PE 2 dies offering 19).
					require.GreaterOrEqual(t, r.Step, uint64(16), "%+v", r)
					require.LessOrEqual(t, r.Step, uint64(19), "%+v", r)
				}
				last := res.Regained[len(res.Regained)-1]
				require.Equal(t, uint64(len(kills)), last.Generation, "the last recovery is regained")
			})
		}
	}
}

// A PE that dies while a checkpoint is taken (after it staged its part
// and sent its buddy copy, before the commit), or while the coordinator
// collects loads for balancing: the checkpoint is abandoned, recovery
// starts from the previous one, and the job ends with the failure-free
// result under each protocol. PE 0, which hosts the main task, too.
func TestFailureDuringCheckpointIsRecovered(t *testing.T) {
	const n, rounds, every = 8, 30, 5
	want := expectedRing(n, rounds)[1]
	cases := map[string]struct {
		pe    int
		match func(ev job.Event) bool
		opts  []Option
	}{
		"staged checkpoint 3": {2, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == 3 }, nil},
		// Before the job began: the tasks are created again.
		"initial checkpoint":        {1, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == job.InitialEpoch }, nil},
		"PE 0, initial checkpoint":  {0, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == job.InitialEpoch }, nil},
		"PE 0, staged checkpoint 2": {0, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == 2 }, nil},
		"collecting loads":          {1, func(ev job.Event) bool { _, ok := ev.(job.CollectLoads); return ok }, []Option{WithBalancer("greedy")}},
	}
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for name, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", kind, name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				opts := append([]Option{WithProtocol(kind), WithCheckpointEvery(every), WithKillAfterEvent(c.pe, c.match)}, c.opts...)
				res, err := RunInProcess(ctx, stepApp(n, rounds), nil, 4, nil, opts...)
				require.NoError(t, err)
				require.Equal(t, []string{want}, res.Output)
				if c.match(job.TakeCheckpoint{Epoch: job.InitialEpoch}) {
					return // nothing is restored: the tasks are created again
				}
				restored := 0
				for _, s := range res.Stats {
					restored += s.Restored + s.RolledBack
				}
				require.NotZero(t, restored, "the kill happened")
			})
		}
	}
}

// A PE that dies while tasks move between PEs (load balancing at a sync
// point): moves between survivors complete, moves to the failed PE are
// undone, its own tasks are recovered, and the job ends with the
// failure-free result under each protocol.
func TestFailureDuringMigrationIsRecovered(t *testing.T) {
	const n, rounds, every = 16, 30, 5
	want := expectedRing(n, rounds)[1]
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for _, pe := range []int{0, 2} {
			t.Run(fmt.Sprintf("%v/PE %d", kind, pe), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				migrations := 0
				res, err := RunInProcess(ctx, unevenStepApp(n, rounds), nil, 4, nil, WithProtocol(kind), WithCheckpointEvery(every), WithBalancer("greedy"), WithStallTimeout(5*time.Second),
					WithKillAfterEvent(pe, func(ev job.Event) bool {
						if m, ok := ev.(job.Migrate); ok && len(m.Moves) > 0 {
							migrations++
							return migrations == 1
						}
						return false
					}))
				require.NoError(t, err)
				require.Equal(t, []string{want}, res.Output)
				moved, restored := 0, 0
				for _, s := range res.Stats {
					moved += s.MigratedIn
					restored += s.Restored + s.RolledBack
				}
				require.NotZero(t, restored, "the kill happened")
				require.NotZero(t, moved, "tasks moved")
			})
		}
	}
}

// Three PEs fail between two checkpoints: more than the message-logging
// protocols' records survive (f=2), so at the third every task rolls back
// to the checkpoint instead, and the job still ends with the failure-free
// result; under none every failure is a rollback anyway.
func TestThirdFailureSinceCheckpointRollsBack(t *testing.T) {
	const n, rounds, every = 10, 30, 10
	want := expectedRing(n, rounds)[1]
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := RunInProcess(ctx, stepApp(n, rounds), nil, 5, nil, WithProtocol(kind), WithCheckpointEvery(every),
				WithKill(1, 12), WithKill(2, 14), WithKill(3, 16), WithStallTimeout(20*time.Second))
			require.NoError(t, err)
			require.Equal(t, []string{want}, res.Output)
			rolledBack := 0
			for _, s := range res.Stats {
				rolledBack += s.RolledBack
			}
			require.NotZero(t, rolledBack, "the third failure rolls every task back")
		})
	}
}
