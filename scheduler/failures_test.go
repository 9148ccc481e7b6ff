package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// In process, with a PE killed in the middle of a checkpoint period, the
// job reports once that it regained the progress it had at the failure,
// under message logging and under checkpoint/restart, and still ends with
// the failure-free result. With two failures the last recovery is
// regained too.
func TestProgressRegainedInProcess(t *testing.T) {
	const n, rounds, every = 8, 30, 5
	want := scheduler.ExpectedRing(n, rounds)[1]
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for name, kills := range map[string]map[int]uint64{
			"one failure":  {2: 17},
			"two failures": {1: 17, 2: 19},
		} {
			t.Run(fmt.Sprintf("%v/%s", kind, name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				opts := []inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every)}
				for pe, step := range kills {
					opts = append(opts, inprocess.WithKill(pe, step))
				}
				res, err := inprocess.Run(ctx, scheduler.StepApp(n, rounds), nil, 4, nil, opts...)
				require.NoError(t, err)
				require.Equal(t, []string{want}, res.Output)
				require.NotEmpty(t, res.Regained)
				for i, r := range res.Regained {
					if i > 0 {
						require.Greater(t, r.Generation, res.Regained[i-1].Generation, "one report per recovery")
					}
					// A scheduler.Worker completes round r only after its neighbours
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
	want := scheduler.ExpectedRing(n, rounds)[1]
	cases := map[string]struct {
		pe    int
		match func(ev job.Event) bool
		opts  []inprocess.Option
	}{
		"staged checkpoint 3": {2, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == 3 }, nil},
		// Before the job began: the tasks are created again.
		"initial checkpoint":        {1, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == job.InitialEpoch }, nil},
		"PE 0, initial checkpoint":  {0, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == job.InitialEpoch }, nil},
		"PE 0, staged checkpoint 2": {0, func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == 2 }, nil},
		"collecting loads":          {1, func(ev job.Event) bool { _, ok := ev.(job.CollectLoads); return ok }, []inprocess.Option{inprocess.WithBalancer("greedy")}},
	}
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for name, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", kind, name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				opts := append([]inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every), inprocess.WithKillAfterEvent(c.pe, c.match)}, c.opts...)
				res, err := inprocess.Run(ctx, scheduler.StepApp(n, rounds), nil, 4, nil, opts...)
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
// point), or during the checkpoint after the moves, which records the
// new placement: moves between survivors complete, moves to the failed PE
// are undone, its own tasks and those that were leaving it are recovered
// (what they sent since the last checkpoint was logged on it), and the
// job ends with the failure-free result under each protocol.
//
// The records of the tasks leaving the failed PE reach the others before
// or after their own Migrate event, as timing has it: "records first"
// makes them always come before (the failed PE handles Migrate first),
// which once left such a task on its new PE besides its restored copy.
// "during the checkpoint" is the failure after every task arrived, which
// once left the tasks that had left the failed PE where they had gone.
// Either way the tasks restored from the failed PE waited forever for
// what those tasks had sent them since the checkpoint. "then another" has
// a second PE (not its buddy) die during the recovery from a failure
// "while tasks move": the moves that involve it, which completed at the
// first failure, are settled then.
func TestFailureDuringMigrationIsRecovered(t *testing.T) {
	const n, rounds, every = 16, 30, 5
	want := scheduler.ExpectedRing(n, rounds)[1]
	moving := func(ev job.Event) bool { m, ok := ev.(job.Migrate); return ok && len(m.Moves) > 0 }
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for _, pe := range []int{0, 2} {
			for _, when := range []string{"while tasks move", "records first", "during the checkpoint", "then another"} {
				t.Run(fmt.Sprintf("%v/PE %d/%s", kind, pe, when), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					// PE pe dies after the first Migrate that moves
					// tasks, or after the TakeCheckpoint that follows it.
					moved := false
					kill := func(ev job.Event) bool {
						if moving(ev) && !moved {
							moved = true
							return when != "during the checkpoint"
						}
						_, checkpoint := ev.(job.TakeCheckpoint)
						return moved && checkpoint && when == "during the checkpoint"
					}
					opts := []inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every), inprocess.WithBalancer("greedy"), inprocess.WithStallTimeout(5 * time.Second),
						inprocess.WithKillAfterEvent(pe, kill)}
					if when == "then another" {
						opts = append(opts, inprocess.WithKillAfterEvent((pe+2)%4, func(ev job.Event) bool {
							switch ev.(type) {
							case job.Recover, job.Rollback:
								return true
							}
							return false
						}))
					}
					if when == "records first" {
						opts = append(opts, inprocess.WithEventFirst(pe, moving))
					}
					res, err := inprocess.Run(ctx, scheduler.UnevenStepApp(n, rounds), nil, 4, nil, opts...)
					require.NoError(t, err)
					require.Equal(t, []string{want}, res.Output)
					migrated, restored := 0, 0
					for _, s := range res.Stats {
						migrated += s.MigratedIn
						restored += s.Restored + s.RolledBack
					}
					require.NotZero(t, restored, "the kill happened")
					require.NotZero(t, migrated, "tasks moved")
				})
			}
		}
	}
}

// Three PEs fail between two checkpoints: more than the message-logging
// protocols' records survive (f=2), so at the third every task rolls back
// to the checkpoint instead, and the job still ends with the failure-free
// result; under none every failure is a rollback anyway.
func TestThirdFailureSinceCheckpointRollsBack(t *testing.T) {
	const n, rounds, every = 10, 30, 10
	want := scheduler.ExpectedRing(n, rounds)[1]
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := inprocess.Run(ctx, scheduler.StepApp(n, rounds), nil, 5, nil, inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every),
				inprocess.WithKill(1, 12), inprocess.WithKill(2, 14), inprocess.WithKill(3, 16), inprocess.WithStallTimeout(20*time.Second))
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

// A PE fails before the job's first checkpoint commits (the tasks are
// created again, and every PE starts its protocol afresh), then more PEs
// fail; the job ends with the failure-free result under each protocol.
// "two more" (PEs 1 and 0, one during the checkpoint period after the
// other, leaving PE 2 alone): the tasks restored at the first of them
// wait again, at the second, for a recovery envelope from every PE
// alive, which once counted PE 3, dead since the tasks were created
// again and unknown to the fresh protocol, and the job went quiet.
// "the main task's PE" (PE 0 first, then PE 1, where the main task was
// created again, before the next checkpoint): the main task is restored
// from the checkpoint of the tasks as created and gets Start again, which
// once came with the identity of the PE the mapping gives (PE 0), not of
// the PE that sent it (PE 1), so its recorded reception never matched.
func TestFailuresAfterTasksCreatedAgain(t *testing.T) {
	const n, rounds, every = 12, 30, 10
	want := scheduler.ExpectedRing(n, rounds)[1]
	initial := func(ev job.Event) bool { e, ok := ev.(job.TakeCheckpoint); return ok && e.Epoch == job.InitialEpoch }
	cases := map[string]struct {
		first int
		kills map[int]uint64
	}{
		"two more":           {3, map[int]uint64{1: 12, 0: 14}},
		"the main task's PE": {0, map[int]uint64{1: 3}},
	}
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for name, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", kind, name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				opts := []inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every), inprocess.WithStallTimeout(10 * time.Second),
					inprocess.WithKillAfterEvent(c.first, initial)}
				for pe, step := range c.kills {
					opts = append(opts, inprocess.WithKill(pe, step))
				}
				res, err := inprocess.Run(ctx, scheduler.StepApp(n, rounds), nil, 4, nil, opts...)
				require.NoError(t, err)
				require.Equal(t, []string{want}, res.Output)
				restored := 0
				for _, s := range res.Stats {
					restored += s.Restored + s.RolledBack
				}
				require.NotZero(t, restored, "the later kills happened")
			})
		}
	}
}
