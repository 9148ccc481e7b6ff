package job

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// migratedCoordinator returns a running coordinator of 4 PEs (task lin
// on PE lin%4) with the greedy balancer, at the sync point where it
// balanced the load and sent Migrate: the tasks of PE 0 are the heavy
// ones. With arrived, every PE reported its tasks arrived and the
// checkpoint that records the moves is being taken (not committed).
func migratedCoordinator(t *testing.T, kind logging.Kind, arrived bool) (*Coordinator, []migrate.Move) {
	t.Helper()
	const pes = 4
	c := runningCoordinatorWith(t, Config{Size: pes, Protocol: kind, Balancer: "greedy"})
	// Two rounds of the same counts: quiescent, every task at the sync
	// point.
	var cmds []Command
	for range 2 {
		probe := nextProbe(t, c, &cmds)
		for pe := range pes {
			cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, AtSync: 2, SyncTasks: 2})...)
		}
	}
	eventOf[CollectLoads](t, cmds)
	cmds = nil
	for pe := range pes {
		var loads []migrate.TaskLoad
		for _, lin := range []int{pe, pe + pes} {
			load := 1.0
			if pe == 0 {
				load = 10
			}
			loads = append(loads, migrate.TaskLoad{Task: migrate.TaskRef{Lin: lin}, PE: pe, Load: load})
		}
		cmds = append(cmds, c.OnLoads(pe, loads)...)
	}
	mig, _ := eventOf[Migrate](t, cmds)
	// The cases below need tasks that leave PE 2 and tasks that come to
	// it, and a task that leaves PE 0.
	for _, want := range []func(migrate.Move) bool{
		func(mv migrate.Move) bool { return mv.From == 2 },
		func(mv migrate.Move) bool { return mv.To == 2 },
		func(mv migrate.Move) bool { return mv.From == 0 },
	} {
		require.True(t, slices.ContainsFunc(mig.Moves, want), "moves %v", mig.Moves)
	}
	if arrived {
		cmds = nil
		for pe := range pes {
			cmds = append(cmds, c.OnMigrated(pe)...)
		}
		eventOf[TakeCheckpoint](t, cmds)
	}
	return c, mig.Moves
}

// relocated lists the tasks a Recover restores because PE failed hosted
// them, in order.
func relocated(rec Recover, failed int) []int {
	var lins []int
	for _, r := range rec.Relocations {
		if r.FailedPE == failed {
			lins = append(lins, r.Task.Lin)
		}
	}
	slices.Sort(lins)
	return lins
}

// A PE that fails after a migration and before the checkpoint that
// records its moves committed, while the tasks move or once all arrived:
// the tasks that came to it go back where they were, and those that left
// it are restored with its own, from the checkpoint: what they sent since
// was logged on it, and the tasks restored from it need it again. Every
// PE is told to settle the moves likewise. After the commit, the new
// placement is the checkpoint's and nothing is settled.
func TestFailureBeforeTheCheckpointAfterAMigration(t *testing.T) {
	// The tasks PE 2 held at the checkpoint before the migration.
	const failed = 2
	atCheckpoint := []int{failed, failed + 4}
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet} {
		for _, arrived := range []bool{false, true} {
			name := kind.String() + "/while tasks move"
			if arrived {
				name = kind.String() + "/during the checkpoint"
			}
			t.Run(name, func(t *testing.T) {
				c, _ := migratedCoordinator(t, kind, arrived)
				rec, _ := eventOf[Recover](t, c.OnFailure(failed))
				require.True(t, rec.UndoMoves, "the PEs settle the moves")
				require.Equal(t, atCheckpoint, relocated(rec, failed))
			})
		}

		t.Run(kind.String()+"/after the commit", func(t *testing.T) {
			c, moves := migratedCoordinator(t, kind, true)
			var cmds []Command
			for pe := range 4 {
				cmds = append(cmds, c.OnStaged(pe, 2, 10)...)
				cmds = append(cmds, c.OnBuddyStored((pe+1)%4, 2, pe, 0)...)
			}
			eventOf[CommitCheckpoint](t, cmds)
			cmds = nil
			for pe := range 4 {
				cmds = append(cmds, c.OnCommitted(pe, 2)...)
			}
			eventOf[Resume](t, cmds)
			var now []int
			for lin := range 8 {
				on := lin % 4
				for _, mv := range moves {
					if mv.Task.Lin == lin {
						on = mv.To
					}
				}
				if on == failed {
					now = append(now, lin)
				}
			}
			rec, _ := eventOf[Recover](t, c.OnFailure(failed))
			require.False(t, rec.UndoMoves)
			require.Equal(t, now, relocated(rec, failed), "the tasks it hosts since the migration")
		})
	}
}

// A second PE that fails during the restore of the first one, still
// before the checkpoint after a migration committed: a task that left it
// in that migration, and arrived on a PE that is still alive, is
// restored with its tasks too, and so are the tasks the first restore
// placed on it.
func TestSecondFailureBeforeTheCheckpointAfterAMigration(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet} {
		t.Run(kind.String(), func(t *testing.T) {
			c, moves := migratedCoordinator(t, kind, true)
			first, _ := eventOf[Recover](t, c.OnFailure(2))
			want := []int{0, 4}
			for _, r := range first.Relocations {
				if r.ToPE == 0 {
					want = append(want, r.Task.Lin)
				}
			}
			slices.Sort(want)
			require.Contains(t, moves, migrate.Move{Task: migrate.TaskRef{Lin: 4}, From: 0, To: 1}, "task 4 left PE 0 for PE 1, which lives")
			second, _ := eventOf[Recover](t, c.OnFailure(0))
			require.True(t, second.UndoMoves)
			require.Equal(t, want, relocated(second, 0))
		})
	}
}

// A PE and its buddy fail after a migration, before the checkpoint that
// records it committed: every task goes back to the disk checkpoint, and
// a task that moved between survivors is given back to the PE it came
// from, where every PE's rollback places it (PE.rollback undoes the
// migration), not to the PE it went to, which would refuse its record.
func TestDiskRollbackAfterAMigration(t *testing.T) {
	const pes = 4
	layout := []int{0, 1, 2, 3, 0, 1, 2, 3}
	c := NewCoordinator(Config{Size: pes, Protocol: logging.KindPartialDet, Layout: [][]int{layout}, CheckpointDir: "/ckpt", Balancer: "greedy"})
	c.Ready()
	var cmds []Command
	for pe := range pes {
		c.OnStaged(pe, InitialEpoch, 10)
		c.OnBuddyStored((pe+1)%pes, InitialEpoch, pe, 0)
	}
	for pe := range pes {
		c.OnCommitted(pe, InitialEpoch)
		cmds = append(cmds, c.OnDiskWritten(pe, InitialEpoch, migrate.FileEntry{PE: pe}, nil)...)
	}
	eventOf[WriteManifest](t, cmds)
	require.Empty(t, c.OnManifestWritten(InitialEpoch, nil))
	cmds = nil
	for range 2 {
		probe := nextProbe(t, c, &cmds)
		for pe := range pes {
			cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, AtSync: 2, SyncTasks: 2})...)
		}
	}
	eventOf[CollectLoads](t, cmds)
	cmds = nil
	for pe := range pes {
		load := 1.0
		if pe == 0 {
			load = 10
		}
		cmds = append(cmds, c.OnLoads(pe, []migrate.TaskLoad{{Task: migrate.TaskRef{Lin: pe}, PE: pe, Load: load}, {Task: migrate.TaskRef{Lin: pe + pes}, PE: pe, Load: load}})...)
	}
	mig, _ := eventOf[Migrate](t, cmds)
	cmds = nil
	for pe := range pes {
		cmds = append(cmds, c.OnMigrated(pe)...)
	}
	eventOf[TakeCheckpoint](t, cmds)

	eventOf[Recover](t, c.OnFailure(2))
	cmds = c.OnFailure(3) // PE 2's buddy, which was to give its copies
	sd, _ := eventOf[SendDiskRecords](t, cmds)
	rb, _ := eventOf[Rollback](t, cmds)
	require.True(t, rb.FromDisk)
	between := 0
	for _, mv := range mig.Moves {
		if mv.From < 2 && mv.To < 2 {
			between++
			require.Equal(t, mv.From, sd.Hosts[0][mv.Task.Lin], "task %d moved from PE %d to PE %d", mv.Task.Lin, mv.From, mv.To)
		}
	}
	require.NotZero(t, between, "a task moved between the survivors: %v", mig.Moves)
	for lin, pe := range sd.Hosts[0] {
		require.Less(t, pe, 2, "task %d is on a survivor", lin)
	}
}

// atSyncAgain runs quiescence rounds in which every task of every live PE
// waits at the sync point, until the coordinator acts on one, and returns
// its commands.
func atSyncAgain(t *testing.T, c *Coordinator) []Command {
	t.Helper()
	var cmds []Command
	for range 2 {
		probe := nextProbe(t, c, &cmds)
		for pe, ok := range c.Live() {
			if ok {
				cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, AtSync: 2, SyncTasks: 2})...)
			}
		}
		if len(cmds) > 0 && !hasEvent[Probe](cmds) {
			return cmds
		}
	}
	require.Fail(t, "the job is not quiescent at the sync point")
	return nil
}

// A sync point balances once. A failure during its migration, or during
// the checkpoint after it, brings the tasks back to that sync point once
// the restored ones replayed: the coordinator takes the checkpoint
// without balancing again, so the moves since the last commit stay those
// of one migration, which a later failure before the commit still
// settles. (A second migration replaced them: a task that left the PE
// failing next in the first one was not restored with it, and the tasks
// restored from that PE waited forever for what it had sent there.) Once
// the checkpoint commits, the next sync point balances again.
func TestASyncPointBalancesOnce(t *testing.T) {
	for _, arrived := range []bool{false, true} {
		name := "failure while tasks move"
		if arrived {
			name = "failure during the checkpoint"
		}
		t.Run(name, func(t *testing.T) {
			c, moves := migratedCoordinator(t, logging.KindFullDet, arrived)
			require.Contains(t, moves, migrate.Move{Task: migrate.TaskRef{Lin: 4}, From: 0, To: 1}, "task 4 left PE 0 for PE 1")
			rec, _ := eventOf[Recover](t, c.OnFailure(2))
			var cmds []Command
			for pe, ok := range c.Live() {
				if ok {
					cmds = append(cmds, c.OnRestored(pe, rec.Generation, Progress{})...)
				}
			}
			eventOf[NoticeFailure](t, cmds)
			confirmCopies(c, rec.Generation)
			if !arrived {
				// The tasks moving between survivors arrive.
				for pe, ok := range c.Live() {
					if ok {
						require.Empty(t, c.OnMigrated(pe))
					}
				}
			}

			cmds = atSyncAgain(t, c)
			require.NotContains(t, events(cmds), CollectLoads{}, "the sync point balanced already")
			eventOf[TakeCheckpoint](t, cmds)

			// PE 0 fails during that checkpoint: task 4, which left it
			// in the migration, is restored with its tasks.
			second, _ := eventOf[Recover](t, c.OnFailure(0))
			require.True(t, second.UndoMoves, "the migration is still not committed")
			require.Contains(t, relocated(second, 0), 4)
		})
	}

	t.Run("after the commit", func(t *testing.T) {
		c, _ := migratedCoordinator(t, logging.KindFullDet, true)
		rec, _ := eventOf[Recover](t, c.OnFailure(2))
		for pe, ok := range c.Live() {
			if ok {
				c.OnRestored(pe, rec.Generation, Progress{})
			}
		}
		confirmCopies(c, rec.Generation)
		ckpt, _ := eventOf[TakeCheckpoint](t, atSyncAgain(t, c))
		var cmds []Command
		for _, pe := range []int{0, 1, 3} {
			cmds = append(cmds, c.OnStaged(pe, ckpt.Epoch, 10)...)
			cmds = append(cmds, c.OnBuddyStored(migrate.Buddy(pe, c.Live()), ckpt.Epoch, pe, rec.Generation)...)
		}
		eventOf[CommitCheckpoint](t, cmds)
		cmds = nil
		for _, pe := range []int{0, 1, 3} {
			cmds = append(cmds, c.OnCommitted(pe, ckpt.Epoch)...)
		}
		eventOf[Resume](t, cmds)
		eventOf[CollectLoads](t, atSyncAgain(t, c))
	})
}

// restoreAndNotice has every live PE report recovery generation restored
// and returns the commands of the last report (NoticeFailure).
func restoreAndNotice(t *testing.T, c *Coordinator, generation uint64) []Command {
	t.Helper()
	var cmds []Command
	for pe, ok := range c.Live() {
		if ok {
			cmds = append(cmds, c.OnRestored(pe, generation, Progress{Step: 1, Offered: true})...)
		}
	}
	eventOf[NoticeFailure](t, cmds)
	return cmds
}

// quiescentAtSync runs rounds of probes that every live PE answers with
// the same counters and all its sync tasks waiting (two of them, or
// those syncTasks gives), two of them or until the coordinator acts, and
// returns what it does.
func quiescentAtSync(t *testing.T, c *Coordinator, syncTasks map[int]int) []Command {
	t.Helper()
	var cmds []Command
	for range 2 {
		if len(cmds) > 0 && !hasEvent[Probe](cmds) {
			break
		}
		probe := nextProbe(t, c, &cmds)
		for pe, ok := range c.Live() {
			if !ok {
				continue
			}
			n := 2
			if m, set := syncTasks[pe]; set {
				n = m
			}
			cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, Sent: 7, Received: 7, AtSync: n, SyncTasks: n})...)
		}
	}
	return cmds
}

func hasEvent[E any](cmds []Command) bool {
	for _, c := range cmds {
		if s, ok := c.(Send); ok {
			if _, ok := s.Event.(E); ok {
				return true
			}
		}
	}
	return false
}

// A PE fails while tasks move between two other PEs: the tasks still on
// their way (their records in flight) are on neither PE, so the
// checkpoint must wait until they arrived. Before, once the failure was
// recovered the coordinator took the checkpoint at the next quiescent
// sync point (the records of migrated tasks are not envelopes that
// quiescence counts, and a task on its way counts on no PE), and the
// tasks that had not arrived were in no checkpoint copy.
func TestFailureDuringAMigrationWaitsForTheMovesBetweenSurvivors(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet} {
		t.Run(kind.String(), func(t *testing.T) {
			c, moves := migratedCoordinator(t, kind, false)
			// Tasks 1 and 5 move from PE 1 to PE 2, task 4 from PE 0 to
			// PE 1, task 2 from PE 2 to PE 3.
			require.Contains(t, moves, migrate.Move{Task: migrate.TaskRef{Lin: 1}, From: 1, To: 2})
			require.Empty(t, c.OnMigrated(1))
			require.Empty(t, c.OnMigrated(3))
			// PE 0 fails while PE 2 still waits for tasks 1 and 5.
			rec, _ := eventOf[Recover](t, c.OnFailure(0))
			require.True(t, rec.UndoMoves)
			restoreAndNotice(t, c, rec.Generation)
			// PE 2 has its own task and task 2's record came back: its
			// sync tasks all wait, and so do the others'.
			cmds := quiescentAtSync(t, c, nil)
			require.False(t, hasEvent[TakeCheckpoint](cmds), "checkpoint while tasks 1 and 5 are on their way: %v", events(cmds))
			require.False(t, hasEvent[CollectLoads](cmds), "%v", events(cmds))
			require.Contains(t, c.describePhase(), "the moved tasks have not all arrived on PEs [2]")
			// They arrive: the next quiescent sync point takes it.
			require.Empty(t, c.OnMigrated(2))
			cmds = quiescentAtSync(t, c, map[int]int{2: 3})
			eventOf[TakeCheckpoint](t, cmds)
		})
	}
}

// A PE reports its moved tasks arrived after the coordinator learnt of
// a failure (its report crossed the failure): it counts all the same.
func TestMigratedReportAfterTheFailureCounts(t *testing.T) {
	c, _ := migratedCoordinator(t, logging.KindFullDet, false)
	rec, _ := eventOf[Recover](t, c.OnFailure(0))
	for _, pe := range []int{1, 2, 3} {
		require.Empty(t, c.OnMigrated(pe))
	}
	restoreAndNotice(t, c, rec.Generation)
	eventOf[TakeCheckpoint](t, quiescentAtSync(t, c, nil))
}

// A failure after a migration, before the checkpoint that records its
// moves committed: the job must not balance again before that
// checkpoint commits. Before, the next sync point balanced, and the new
// moves replaced those of the first migration, which the coordinator
// (and every PE) then forgot: a second failure before the commit no
// longer settled them, and a task that had left the failed PE in the
// first migration was not restored with its tasks, which waited for what
// it had sent from there (logged on the failed PE, lost).
func TestNoNewBalancingBeforeTheMovesAreCommitted(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet} {
		t.Run(kind.String(), func(t *testing.T) {
			c, moves := migratedCoordinator(t, kind, true)
			require.Contains(t, moves, migrate.Move{Task: migrate.TaskRef{Lin: 4}, From: 0, To: 1})
			// PE 3 fails while the checkpoint after the migration is
			// taken; its tasks are restored.
			rec, _ := eventOf[Recover](t, c.OnFailure(3))
			restoreAndNotice(t, c, rec.Generation)
			confirmCopies(c, rec.Generation)
			// Quiescent at the next sync point: the loads are unequal
			// again, but the job takes the checkpoint first.
			cmds := quiescentAtSync(t, c, nil)
			for hasEvent[CollectLoads](cmds) || hasEvent[Migrate](cmds) {
				// (What the coordinator did before: a second round.)
				cmds = balanceAgain(t, c, cmds)
			}
			take, _ := eventOf[TakeCheckpoint](t, cmds)
			require.Greater(t, take.Epoch, c.committed)
			// PE 0 fails before it commits: task 4, which left it in the
			// migration, is restored with its tasks.
			second, _ := eventOf[Recover](t, c.OnFailure(0))
			require.True(t, second.UndoMoves)
			require.Contains(t, relocated(second, 0), 4, "relocations %v", second.Relocations)
		})
	}
}

// balanceAgain answers a CollectLoads (PE 1 heavy) or a Migrate (every
// task arrived) and returns the coordinator's commands.
func balanceAgain(t *testing.T, c *Coordinator, cmds []Command) []Command {
	t.Helper()
	var out []Command
	live := c.Live()
	if hasEvent[CollectLoads](cmds) {
		for pe, ok := range live {
			if !ok {
				continue
			}
			var loads []migrate.TaskLoad
			for coll, hs := range c.hosts {
				for lin, h := range hs {
					if h.pe == pe {
						load := 1.0
						if pe == 1 {
							load = 10
						}
						loads = append(loads, migrate.TaskLoad{Task: migrate.TaskRef{Collection: coll, Lin: lin}, PE: pe, Load: load})
					}
				}
			}
			out = append(out, c.OnLoads(pe, loads)...)
		}
		return out
	}
	for pe, ok := range live {
		if ok {
			out = append(out, c.OnMigrated(pe)...)
		}
	}
	return out
}
