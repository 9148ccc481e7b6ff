package job

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// syncPoint runs the quiescence rounds (two of the same counts) that find
// every task of the running coordinator c waiting at the sync point of
// step, with PE p's sender log holding logs[p] bytes (a PE not in logs is
// dead), and returns what the coordinator decides. Each PE has two sync
// tasks, except those noTasks lists, which have none.
func syncPoint(t *testing.T, c *Coordinator, step uint64, logs map[int]int, noTasks ...int) []Command {
	t.Helper()
	var cmds []Command
	for range 2 {
		probe := nextProbe(t, c, &cmds)
		for pe, n := range logs {
			st := IdleStatus{Round: probe.Round, Sent: 4 * step, Received: 4 * step, AtSync: 2, SyncTasks: 2, SyncStep: step, LowSyncStep: step, SyncStepsKnown: true, LogBytes: n}
			for _, p := range noTasks {
				if p == pe {
					st = IdleStatus{Round: probe.Round, Sent: 4 * step, Received: 4 * step, LogBytes: n}
				}
			}
			cmds = append(cmds, c.OnIdle(pe, st)...)
		}
	}
	return cmds
}

// commit has every live PE stage, store its buddy's copy of and commit
// checkpoint epoch, and returns what the last commit brings.
func commit(t *testing.T, c *Coordinator, epoch uint64) []Command {
	t.Helper()
	return commitStaged(t, c, epoch, nil)
}

// commitStaged is commit with PE p staging staged[p] bytes (10 if not
// given).
func commitStaged(t *testing.T, c *Coordinator, epoch uint64, staged map[int]int) []Command {
	t.Helper()
	live := c.Live()
	var cmds []Command
	for p, ok := range live {
		if ok {
			n, given := staged[p]
			if !given {
				n = 10
			}
			cmds = append(cmds, c.OnStaged(p, epoch, n)...)
		}
	}
	for p, ok := range live {
		if ok {
			cmds = append(cmds, c.OnBuddyStored(migrate.Buddy(p, live), epoch, p, 0)...)
		}
	}
	eventOf[CommitCheckpoint](t, cmds)
	cmds = nil
	for p, ok := range live {
		if ok {
			cmds = append(cmds, c.OnCommitted(p, epoch)...)
		}
	}
	return cmds
}

// With a log limit, a sync point checkpoints only once some PE's sender
// log reached the limit; below it the tasks resume at once, and the next
// sync point is judged again. Without one, every sync point checkpoints.
func TestCoordinatorCheckpointsWhenALogReachesTheLimit(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit})
	require.Equal(t, []any{Resume{Passed: 10}}, events(syncPoint(t, c, 9, map[int]int{0: 10, 1: limit - 1, 2: 0})))
	require.Contains(t, c.Notes(), "sync point of step 9 passed without a checkpoint: the largest sender log holds 999 bytes (PE 1), under the limit of 1000")
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 19, map[int]int{0: 500, 1: 999, 2: 20})))
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 29, map[int]int{0: 10, 1: limit, 2: 0}))
	require.Contains(t, c.Notes(), "sync point of step 29 checkpoints: PE 1's sender log holds 1000 bytes, the limit is 1000")
	require.Equal(t, uint64(InitialEpoch+1), cp.Epoch)
	require.Equal(t, []any{Resume{Passed: 20}}, events(commit(t, c, cp.Epoch)),
		"a sync point that checkpointed is never reached again (tasks restore from its checkpoint or a later one): Passed stays")

	every := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet})
	cp, _ = eventOf[TakeCheckpoint](t, syncPoint(t, every, 9, map[int]int{0: 0, 1: 0, 2: 0}))
	require.Equal(t, uint64(InitialEpoch+1), cp.Epoch)
	require.Equal(t, []any{Resume{Passed: 0}}, events(commit(t, every, cp.Epoch)))
}

// Resume.Passed is the coordinator's, and every PE gets it: a PE none of
// whose tasks waited at the sync point (it has none, e.g. they all
// moved away) learns the step the job passed all the same, and so can a
// task restored on it later go on by itself there. It survives
// failures: the Resume after a recovery's checkpoint, and after a
// rollback, carry it too, and a failure that abandons the decision of a
// sync point (no Resume went out) leaves it as it was.
func TestResumePassedIsTheCoordinators(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 6, Protocol: logging.KindPartialDet, LogLimit: limit})
	cmds := syncPoint(t, c, 9, map[int]int{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1}, 2)
	require.Equal(t, []Command{Send{To: EveryPE, Event: Resume{Passed: 10}}}, cmds, "PE 2, with no sync task, gets the step too")

	// PE 1 fails after the job passed step 9: its tasks restore from the
	// initial checkpoint and re-execute through step 9, which every
	// survivor knows the job passed. The next sync point checkpoints
	// (PE 0's log reached the limit); the Resume after it keeps Passed.
	eventOf[Recover](t, c.OnFailure(1))
	restoreAndNotice(t, c, 1)
	confirmCopies(c, 1)
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 19, map[int]int{0: limit, 2: 1, 3: 1, 4: 1, 5: 1}))
	require.Equal(t, []any{Resume{Passed: 10}}, events(commit(t, c, cp.Epoch)))

	// The next sync point passes without a checkpoint. Then, before the
	// job reaches the next one, more failures than the protocol survives
	// since that checkpoint: every task rolls back to it, and the Resume
	// after the rollback carries Passed 30, so that the tasks pass step
	// 29 by themselves again.
	require.Equal(t, []any{Resume{Passed: 30}}, events(syncPoint(t, c, 29, map[int]int{0: 1, 2: 1, 3: 1, 4: 1, 5: 1})))
	var rb Rollback
	for gen, pe := range []int{3, 5, 0} {
		cmds := c.OnFailure(pe)
		if hasEvent[Rollback](cmds) {
			rb, _ = eventOf[Rollback](t, cmds)
			break
		}
		eventOf[Recover](t, cmds)
		restoreAndNotice(t, c, uint64(gen+2))
		confirmCopies(c, uint64(gen+2))
	}
	require.Equal(t, cp.Epoch, rb.Epoch, "every task rolls back to the checkpoint of step 19")
	cmds = nil
	for pe, ok := range c.Live() {
		if ok {
			cmds = append(cmds, c.OnRestored(pe, rb.Generation, Progress{Step: 33, Offered: true})...)
		}
	}
	require.Equal(t, Resume{Passed: 30}, must(eventOf[Resume](t, cmds)))
}

// A failure while the tasks wait at a sync point and before the
// coordinator decided it: no Resume went out, Passed stays, and the
// restored tasks wait at that sync point with the others, which the
// coordinator then decides (here: resumed, as the logs are small).
func TestFailureBeforeASyncPointIsDecided(t *testing.T) {
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindFullDet, LogLimit: 1000})
	require.Equal(t, []any{Resume{Passed: 10}}, events(syncPoint(t, c, 9, map[int]int{0: 1, 1: 1, 2: 1})))
	// One round of the sync point of step 19, then PE 2 fails.
	probe, _ := eventOf[Probe](t, c.Tick())
	var cmds []Command
	for pe := range 3 {
		cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, Sent: 80, Received: 80, AtSync: 2, SyncTasks: 2, SyncStep: 19, LowSyncStep: 19, SyncStepsKnown: true, LogBytes: 1})...)
	}
	require.Equal(t, []any{Probe{Round: probe.Round + 1}}, events(cmds), "a balanced round starts the one that confirms it at once")
	eventOf[Recover](t, c.OnFailure(2))
	cmds = restoreAndNotice(t, c, 1)
	require.False(t, hasEvent[Resume](cmds), "nothing is resumed by the recovery")
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 19, map[int]int{0: 1, 1: 1})))
}

// With a balancer and a log limit, a sync point that passes without a
// checkpoint does not balance either; one that checkpoints balances
// first. A sync point whose migration a failure left uncommitted
// checkpoints whatever the logs (its moves must be recorded before
// another sync point may pass).
func TestLogLimitWithABalancer(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 4, Protocol: logging.KindPartialDet, LogLimit: limit, Balancer: "greedy"})
	require.Equal(t, []any{Resume{Passed: 10}}, events(syncPoint(t, c, 9, map[int]int{0: 1, 1: 1, 2: 1, 3: 1})))
	require.Equal(t, []any{CollectLoads{}}, events(syncPoint(t, c, 19, map[int]int{0: 1, 1: limit, 2: 1, 3: 1})))
	var cmds []Command
	for pe := range 4 {
		load := 1.0
		if pe == 0 {
			load = 10
		}
		loads := []migrate.TaskLoad{{Task: migrate.TaskRef{Lin: pe}, PE: pe, Load: load}, {Task: migrate.TaskRef{Lin: pe + 4}, PE: pe, Load: load}}
		cmds = append(cmds, c.OnLoads(pe, loads)...)
	}
	eventOf[Migrate](t, cmds)
	cmds = nil
	for pe := range 4 {
		cmds = append(cmds, c.OnMigrated(pe)...)
	}
	eventOf[TakeCheckpoint](t, cmds)
	// PE 2 fails during the checkpoint; once its tasks are restored, the
	// job is back at the sync point of step 19 with small logs (PE 1's
	// is no smaller, but the point is what the coordinator does when
	// none is large): it checkpoints, without balancing again.
	eventOf[Recover](t, c.OnFailure(2))
	restoreAndNotice(t, c, 1)
	confirmCopies(c, 1)
	cmds = syncPoint(t, c, 19, map[int]int{0: 1, 1: 1, 3: 1})
	require.Len(t, cmds, 1)
	cp, _ := eventOf[TakeCheckpoint](t, cmds)
	require.Equal(t, []any{Resume{Passed: 10}}, events(commit(t, c, cp.Epoch)))
}

// Under a log limit, tasks found waiting at sync points of different
// steps (here a task of PE 1 at step 9, the others at 19) stop the job
// with ErrSyncStepsDiffer and a diagnosis: the coordinator cannot tell
// which sync point it would pass. (A task restored on a PE that did not
// know the job had passed step 9 waited there while the others went on
// to step 19; the coordinator then checkpointed with that task's
// messages buffered.) Without a limit such a job checkpoints as before.
func TestSyncStepsDifferUnderALogLimit(t *testing.T) {
	for _, limit := range []int{1000, 0} {
		c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit})
		var cmds []Command
		for range 2 {
			probe := nextProbe(t, c, &cmds)
			for pe := range 3 {
				st := IdleStatus{Round: probe.Round, Sent: 80, Received: 80, AtSync: 2, SyncTasks: 2, SyncStep: 19, LowSyncStep: 19, SyncStepsKnown: true, LogBytes: 1}
				if pe == 1 {
					st.LowSyncStep = 9
				}
				cmds = append(cmds, c.OnIdle(pe, st)...)
			}
		}
		if limit == 0 {
			eventOf[TakeCheckpoint](t, cmds)
			// A PE that does not know the step of its waiting tasks (moved
			// to it) counts for neither bound.
			c = runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: 1000})
			cmds = nil
			for range 2 {
				probe := nextProbe(t, c, &cmds)
				for pe := range 3 {
					st := IdleStatus{Round: probe.Round, Sent: 80, Received: 80, AtSync: 2, SyncTasks: 2, SyncStep: 19, LowSyncStep: 19, SyncStepsKnown: pe != 1, LogBytes: 1}
					if pe == 1 {
						st.SyncStep, st.LowSyncStep = 0, 0
					}
					cmds = append(cmds, c.OnIdle(pe, st)...)
				}
			}
			require.Equal(t, []any{Resume{Passed: 20}}, events(cmds))
			continue
		}
		require.Equal(t, []any{Diagnose{}}, events(cmds))
		for pe := range 3 {
			cmds = c.OnDiagnosis(pe, "report")
		}
		out, done := c.Done()
		require.True(t, done)
		require.ErrorIs(t, out.Err, ErrSyncStepsDiffer)
		require.ErrorContains(t, out.Err, "(9 to 19)")
	}
}

func must[E any](e E, _ Destination) E { return e }

// With LogPerCheckpoint, the limit grows with the state: once a
// checkpoint in which some PE staged B bytes has committed, a sync point
// checkpoints only when a log holds LogPerCheckpoint × B (if more than
// LogLimit), and the sync points in between are skipped as under a
// plain limit.
func TestLogLimitGrowsWithTheLargestCheckpoint(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit, LogPerCheckpoint: 8})
	// The initial checkpoint staged 10 bytes a PE: 8 × 10 is under the
	// limit, which rules.
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 9, map[int]int{0: limit, 1: 0, 2: 0}))
	require.Contains(t, c.Notes(), "sync point of step 9 checkpoints: PE 0's sender log holds 1000 bytes, the limit is 1000")
	// PE 1 stages 500 bytes: the limit becomes 4000.
	require.Equal(t, []any{Resume{Passed: 0}}, events(commitStaged(t, c, cp.Epoch, map[int]int{1: 500})))
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 19, map[int]int{0: 3999, 1: 0, 2: 0})))
	require.Contains(t, c.Notes(), "sync point of step 19 passed without a checkpoint: the largest sender log holds 3999 bytes (PE 0), under the limit of 4000")
	cp, _ = eventOf[TakeCheckpoint](t, syncPoint(t, c, 29, map[int]int{0: 4000, 1: 0, 2: 0}))
	// A smaller checkpoint brings the limit down again.
	require.Equal(t, []any{Resume{Passed: 20}}, events(commitStaged(t, c, cp.Epoch, map[int]int{0: 50, 1: 200, 2: 5})))
	eventOf[TakeCheckpoint](t, syncPoint(t, c, 39, map[int]int{0: 1600, 1: 0, 2: 0}))
	require.Contains(t, c.Notes(), "sync point of step 39 checkpoints: PE 0's sender log holds 1600 bytes, the limit is 1600")

	// Without LogPerCheckpoint the limit is LogLimit whatever was staged.
	plain := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit})
	cp, _ = eventOf[TakeCheckpoint](t, syncPoint(t, plain, 9, map[int]int{0: limit, 1: 0, 2: 0}))
	commitStaged(t, plain, cp.Epoch, map[int]int{1: 500})
	eventOf[TakeCheckpoint](t, syncPoint(t, plain, 19, map[int]int{0: limit, 1: 0, 2: 0}))
}

// With MTBF, a sync point also checkpoints once Daly's period for the
// last checkpoint's duration has passed since it ended, however small
// the logs; the sync points skipped in between are those that would
// pass before the period ends, at the pace of the steps so far.
func TestDalyPeriodCheckpoints(t *testing.T) {
	var now time.Duration
	c := NewCoordinator(Config{Size: 2, Protocol: logging.KindPartialDet, Layout: [][]int{{0, 1, 0, 1}},
		LogLimit: 1 << 30, SyncEvery: 10, MTBF: time.Hour, Now: func() time.Duration { return now }})
	c.Ready()
	// The initial checkpoint takes 2 s: Daly's period for an hour's MTBF
	// is about 118.7 s.
	now = 2 * time.Second
	eventOf[CommitCheckpoint](t, append(append(c.OnStaged(0, InitialEpoch, 10), c.OnBuddyStored(1, InitialEpoch, 0, 0)...),
		append(c.OnStaged(1, InitialEpoch, 10), c.OnBuddyStored(0, InitialEpoch, 1, 0)...)...))
	c.OnCommitted(0, InitialEpoch)
	eventOf[Begin](t, c.OnCommitted(1, InitialEpoch))
	period := DalyPeriod(2*time.Second, time.Hour)
	require.InDelta(t, 118.7, period.Seconds(), 0.1)

	// Step 9 at 32 s: 30 s a sync period, so step 19 would come at 62 s:
	// skipped. Step 29 at 92 s: step 39 would come at about 122 s, past
	// the period: not skipped. Step 39 at 122 s checkpoints.
	now = 32 * time.Second
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 9, map[int]int{0: 1, 1: 1})))
	now = 92 * time.Second
	require.Equal(t, []any{Resume{Passed: 30}}, events(syncPoint(t, c, 29, map[int]int{0: 1, 1: 1})))
	now = 122 * time.Second
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 39, map[int]int{0: 1, 1: 1}))
	require.Contains(t, c.Notes(), "sync point of step 39 checkpoints: 2m0s since the last checkpoint, Daly's period for an MTBF of 1h0m0s and a checkpoint of 2s is 1m58.67s")
	// This checkpoint takes 8 s: the next period is Daly's for 8 s.
	now = 130 * time.Second
	commit(t, c, cp.Epoch)
	now = 130*time.Second + DalyPeriod(8*time.Second, time.Hour) - time.Second
	require.Equal(t, []any{Resume{Passed: 50}}, events(syncPoint(t, c, 49, map[int]int{0: 1, 1: 1})))
	now += time.Second
	eventOf[TakeCheckpoint](t, syncPoint(t, c, 59, map[int]int{0: 1, 1: 1}))
}

func TestDalyPeriod(t *testing.T) {
	// δ = 60 s, M = 24 h: sqrt(2·60·86400) = 3220 s, plus the higher-order
	// terms (x = δ/2M = 1/2880): 3220·(1 + 0.00621 + 0.0000386) − 60.
	got := DalyPeriod(time.Minute, 24*time.Hour).Seconds()
	require.InDelta(t, 3180.1, got, 0.5)
	// Young's first-order sqrt(2δM) is an upper bound here.
	require.Less(t, got, 3220.0)
	require.Equal(t, time.Hour, DalyPeriod(3*time.Hour, time.Hour))
	require.Zero(t, DalyPeriod(0, time.Hour))
}
