package job

import (
	"fmt"
	"slices"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// Recovery from PE failures, the coordinator's part: under message
// logging the failed PEs' tasks are restored on survivors and replay
// (recoverFrom, then OnRestored sends NoticeFailure); under
// checkpoint/restart, or after more failures than the protocol's records
// survive, every task rolls back (rollback). A failure that takes both
// copies of a checkpoint falls back to disk (diskrecovery.go).

// adoption is a buddy's confirmation that it stores a PE's re-sent copy.
type adoption struct {
	pe         int
	generation uint64
}

// protect counts ward's tasks protected by the buddy that confirmed its
// re-sent copy in the current recovery, once the recovery has placed them
// (their checkpoint PE is ward). A confirmation of an earlier recovery
// does not count: the copy then did not hold the tasks ward restored
// since.
//
// The tasks change in one pass over the job's tasks, when their buddies
// are next read or their checkpoint PEs next change (applyProtections):
// a pass at each confirmation, one per PE, would cost O(PEs × tasks) per
// recovery.
func (c *Coordinator) protect(ward int) {
	a, ok := c.adopted[ward]
	if !ok || a.generation != c.generation || !c.live[a.pe] || a.pe == ward {
		return
	}
	if c.protections == nil {
		c.protections = map[int]int{}
	}
	c.protections[ward] = a.pe
}

// applyProtections gives the buddies protect noted to the tasks whose
// checkpoint PE is their ward.
func (c *Coordinator) applyProtections() {
	if len(c.protections) == 0 {
		return
	}
	for _, hs := range c.hosts {
		for lin := range hs {
			h := &hs[lin]
			if pe, ok := c.protections[h.checkpointPE]; ok {
				h.buddyPE = pe
			}
		}
	}
	clear(c.protections)
}

// OnFailure handles the death of PE pe.
func (c *Coordinator) OnFailure(pe int) []Command {
	if c.done || !c.live[pe] {
		return nil
	}
	c.live[pe] = false
	c.noteProgress()
	// The logs' growth is no longer known (replay, rollbacks): no sync
	// point is skipped until a checkpoint at a sync point commits.
	c.logKnown, c.skipAfter = false, 0
	if d := c.diagnosing; d != nil {
		// The job is stopping with a diagnosis: a failure now only adds
		// to it.
		d.want[pe] = false
		d.reports[pe] = fmt.Sprintf("PE %d failed during the diagnosis", pe)
		if !slices.Contains(d.want, true) {
			return c.finishDiagnosis()
		}
		return nil
	}
	c.qd.Exclude(pe)
	if c.liveCount() == 0 {
		return c.finish(1, fmt.Errorf("%w: no PE left", migrate.ErrUnrecoverable))
	}
	if !c.haveCommit {
		if c.cfg.Resumed {
			return c.finish(1, fmt.Errorf("%w: PE %d failed before the restarted job's first checkpoint was complete; restart it again",
				migrate.ErrUnrecoverable, pe))
		}
		return c.recreate(pe)
	}
	if err := c.lostEntries(pe); err != nil {
		// The replay may need entries a dead logger held: every task
		// rolls back to the checkpoint instead, which needs no log (from
		// the copies in memory, or from --checkpoint-dir where those are
		// lost); where neither is there the job stops.
		c.note("%v: every task rolls back to checkpoint %d instead", err, c.committed)
		c.rollbackForLostEntries = true
	}

	// A checkpoint or a balancing round under way is abandoned: recovery
	// starts from the last committed checkpoint, and the tasks that wait
	// at the sync point take the next one once the restored tasks are
	// back there (with a new epoch number: see nextEpoch).
	// Tasks moved since the last commit, during a migration or after it
	// (the checkpoint that records the moves was not committed): the
	// moves that involve the failed PE are settled (settleMoves), and
	// so is every PE told to do.
	c.undoMoves = len(c.moves) > 0
	if c.undoMoves {
		c.settleMoves(pe)
	}
	switch c.phase {
	case phaseCheckpointing:
		if c.staging > c.committed {
			c.note("checkpoint %d abandoned: PE %d failed while it was taken; recovery starts from checkpoint %d", c.staging, pe, c.committed)
			break
		}
		// Committed: only its files were being written, and without PE
		// pe's there is no complete disk copy of it (--restart takes the
		// one before). Recovery waits until every live PE has committed
		// (recoverAfterCommit).
		c.note("checkpoint %d has no complete disk copy: PE %d failed while it was written", c.committed, pe)
		c.failedAtCommit = append(c.failedAtCommit, pe)
		if !c.everyLiveCommitted() {
			return nil
		}
		return c.recoverAfterCommit()
	case phaseBalancing:
		c.note("load balancing abandoned: PE %d failed", pe)
	case phaseMigrating:
		c.note("migration interrupted: PE %d failed while tasks moved; moves to it are undone, its own tasks are recovered", pe)
	}
	c.phase = phaseRunning
	return c.recoverFrom(pe)
}

// recoverAfterCommit starts the recovery from the PEs that failed after
// the coordinator committed a checkpoint, once every live PE has
// committed it. Not before: a PE discards its logs and checkpoints its
// protocol state when it commits, with no message buffered, and a
// recovery would have the others send it messages of the next period
// (replayed or new) that could arrive first. The PEs wait for Resume:
// under message logging they get it first.
func (c *Coordinator) recoverAfterCommit() []Command {
	failed := c.failedAtCommit
	c.failedAtCommit = nil
	var cmds []Command
	if c.cfg.Protocol != logging.KindNone {
		cmds = c.resumeAfterCheckpoint()
	}
	c.phase = phaseRunning
	for _, pe := range failed {
		cmds = append(cmds, c.recoverFrom(pe)...)
		if c.done || c.phase == phaseRollingBack {
			// A rollback (from memory or from disk) places the tasks
			// of every dead PE, the ones still in failed included:
			// recovering them again would start a recovery of a new
			// generation over the rollback, which then never ends.
			break
		}
	}
	return cmds
}

// settleMoves settles the moves of the last migration on the failure of
// PE pe before the checkpoint that records them committed (the PEs do
// the same, PE.undoMoves). Moves between survivors complete. A task that
// moved to pe goes back to the PE it came from, which kept what it sent.
// A task that moved away from pe counts as pe's task, whether it arrived
// or not: what it sent since the last checkpoint was logged on pe, and
// the tasks restored from pe would wait for it forever, so it is restored
// from the checkpoint with them and sends it again as it replays (the PE
// it went to drops it). A move that an earlier failure settled, or whose
// task a recovery placed elsewhere since, is left as it is.
func (c *Coordinator) settleMoves(pe int) {
	for _, mv := range c.moves {
		h := &c.hosts[mv.Task.Collection][mv.Task.Lin]
		switch {
		case mv.To == pe && h.pe == pe && c.live[mv.From]:
			h.pe = mv.From
		case mv.From == pe && h.pe == mv.To:
			h.pe = pe
		}
	}
}

// recoverFrom starts the recovery from PE pe's failure.
func (c *Coordinator) recoverFrom(pe int) []Command {
	c.generation++
	c.qd.Reset()
	c.roundOpen = false
	c.atFailure, c.regaining = Progress{}, nil
	c.failuresSinceCommit++
	if c.cfg.Protocol == logging.KindNone || c.rollbackForLostEntries {
		c.rollbackForLostEntries = false
		return c.rollback(pe)
	}
	// More failures since the checkpoint than the protocol's records
	// survive: one of them may have taken a record a survivor depends on,
	// and replaying only the failed PEs' tasks could go wrong unseen.
	// Every task goes back to the checkpoint instead, which needs no
	// record.
	if err := logging.CheckFailures(c.cfg.Protocol, logging.Config{PEs: c.cfg.Size, Failures: c.cfg.Failures, EventLogger: c.cfg.EventLogger}, c.failuresSinceCommit); err != nil {
		c.note("PE %d failed: %v; every task rolls back to checkpoint %d instead", pe, err, c.committed)
		return c.rollback(pe)
	}
	// A restore still under way that was to take a task's copy from the
	// PE that just failed takes it from the task's other copy.
	replanned, err := c.replanCopies(pe)
	if err != nil {
		return c.unrecoverableFromMemory(pe, err)
	}
	// Under message logging a failed PE's tasks are those it hosted.
	tasksOf := func(p int) []migrate.HostedTask { return c.tasksWhere(func(h taskHost) bool { return h.pe == p }) }
	relocs, err := migrate.PlanRecovery([]int{pe}, tasksOf, c.live, c.cfg.Spread, -1)
	if err != nil {
		return c.unrecoverableFromMemory(pe, err)
	}
	for _, r := range relocs {
		c.hosts[r.Task.Collection][r.Task.Lin].pe = r.ToPE
	}
	c.failedSince = append(c.failedSince, pe)
	// A task relocated twice keeps only its last place.
	again := make(map[migrate.TaskRef]bool, len(relocs))
	for _, r := range relocs {
		again[r.Task] = true
	}
	c.relocations = slices.DeleteFunc(c.relocations, func(old migrate.Relocation) bool { return again[old.Task] })
	c.relocations = append(c.relocations, relocs...)
	c.note("PE %d failed: restoring %d tasks on %d survivors (generation %d)", pe, len(relocs), c.spreadOver(relocs), c.generation)
	c.phase = phaseRestoring
	c.expectRestored()
	return []Command{toEvery(Recover{Generation: c.generation, Failed: []int{pe}, Relocations: append(replanned, relocs...), UndoMoves: c.undoMoves})}
}

// replanCopies finds, while a restore is under way, the relocations whose
// target has not reported its tasks restored and whose copy was to come
// from PE pe, which just failed: they take the task's other copy (its own
// PE's or its buddy's), and are returned to be sent again. If neither
// survives, the error wraps migrate.ErrUnrecoverable.
func (c *Coordinator) replanCopies(pe int) ([]migrate.Relocation, error) {
	if c.pendingRestored == nil {
		return nil, nil
	}
	c.applyProtections()
	var replanned []migrate.Relocation
	for i, r := range c.relocations {
		if r.CopyPE != pe || !c.live[r.ToPE] || !c.pendingRestored[r.ToPE] {
			continue
		}
		h := c.hosts[r.Task.Collection][r.Task.Lin]
		switch {
		case r.CheckpointPE != pe && c.live[r.CheckpointPE]:
			r.CopyPE = r.CheckpointPE
		case h.buddyPE >= 0 && h.buddyPE != pe && c.live[h.buddyPE]:
			r.CopyPE = h.buddyPE
		default:
			return nil, fmt.Errorf("%w: PE %d failed while it gave PE %d the checkpoint of task %v, whose other copy was on failed PE %d",
				migrate.ErrUnrecoverable, pe, r.ToPE, r.Task, r.CheckpointPE)
		}
		c.relocations[i] = r
		replanned = append(replanned, r)
	}
	return replanned, nil
}

func (c *Coordinator) spreadOver(relocs []migrate.Relocation) int {
	to := map[int]bool{}
	for _, r := range relocs {
		to[r.ToPE] = true
	}
	return len(to)
}

// rollback sends every task back to the last committed checkpoint.
func (c *Coordinator) rollback(pe int) []Command {
	// In a rollback every task goes back to its checkpoint: a failed PE's
	// tasks are those whose checkpoint it held.
	tasksOf := func(p int) []migrate.HostedTask {
		return c.tasksWhere(func(h taskHost) bool { return h.checkpointPE == p })
	}
	var dead []int
	for p, ok := range c.live {
		if !ok {
			dead = append(dead, p)
		}
	}
	relocs, err := migrate.PlanRecovery(dead, tasksOf, c.live, c.cfg.Spread, -1)
	if err != nil {
		return c.unrecoverableFromMemory(pe, err)
	}
	for _, hs := range c.hosts {
		for lin := range hs {
			hs[lin].pe = hs[lin].checkpointPE
		}
	}
	for _, r := range relocs {
		c.hosts[r.Task.Collection][r.Task.Lin].pe = r.ToPE
	}
	c.note("PE %d failed: every task rolls back to checkpoint %d (generation %d)", pe, c.committed, c.generation)
	// Every task restarts from the checkpoint with fresh protocol state:
	// no record, and no recovery under way, is left.
	c.failuresSinceCommit = 0
	c.failedSince, c.relocations = nil, nil
	c.moves = nil // undone: every task is where the checkpoint has it
	// Every PE stops waiting for moved tasks in its rollback.
	c.migrated = nil
	c.phase = phaseRollingBack
	c.expectRestored()
	return []Command{toEvery(Rollback{Generation: c.generation, Epoch: c.committed, Failed: dead, Relocations: relocs})}
}

// tasksWhere lists the tasks whose placement matches, for PlanRecovery.
func (c *Coordinator) tasksWhere(match func(taskHost) bool) []migrate.HostedTask {
	c.applyProtections()
	var ts []migrate.HostedTask
	for coll, hs := range c.hosts {
		for lin, h := range hs {
			if match(h) {
				ts = append(ts, migrate.HostedTask{Task: migrate.TaskRef{Collection: coll, Lin: lin}, CheckpointPE: h.checkpointPE, BuddyPE: h.buddyPE})
			}
		}
	}
	return ts
}

// expectRestored starts waiting for every live PE's Restored answer.
func (c *Coordinator) expectRestored() {
	c.pendingRestored = slices.Clone(c.live)
	c.restoredFrom = 0
}

// OnRestored records that PE pe restored every task it was given, and how
// far its tasks had got before the recovery began.
func (c *Coordinator) OnRestored(pe int, generation uint64, before Progress) []Command {
	if generation != c.generation || c.pendingRestored == nil || !c.live[pe] {
		return nil
	}
	c.pendingRestored[pe] = false
	c.noteProgress()
	c.atFailure = c.atFailure.Max(before)
	for ; c.restoredFrom < len(c.pendingRestored); c.restoredFrom++ {
		if c.pendingRestored[c.restoredFrom] {
			return nil
		}
	}
	c.pendingRestored = nil
	// The restored tasks' own copies are on their new PEs (each PE adopts
	// the records it restored before it answers). Their buddy copies, and
	// those of PEs whose buddy failed, are on their way to the new
	// buddies: a task counts as protected there only once that buddy says
	// it stored the copy (OnBuddyStored). Until then it keeps the buddy
	// it had if that one is alive and another PE: it still holds the
	// task's record (under the ward it had).
	c.applyProtections()
	for _, hs := range c.hosts {
		for lin := range hs {
			h := &hs[lin]
			if !c.live[h.checkpointPE] {
				h.checkpointPE = h.pe
			}
			if h.buddyPE >= 0 && (!c.live[h.buddyPE] || h.buddyPE == h.checkpointPE) {
				h.buddyPE = -1
			}
		}
	}
	for ward := range c.adopted {
		c.protect(ward)
	}
	if c.phase == phaseRollingBack && !c.haveCommit {
		// The tasks are as created again: the job starts with their
		// checkpoint, as it did the first time.
		c.createdEpoch = c.nextEpoch()
		return c.startCheckpoint(c.createdEpoch)
	}
	if c.phase == phaseRollingBack {
		cmds := append(c.resumeAfterCheckpoint(), Restored{Generation: c.generation, RolledBack: true})
		return append(cmds, c.watchProgress()...)
	}
	c.phase = phaseRunning
	notice := NoticeFailure{Generation: c.generation, Failed: c.failedSince, Relocations: c.relocations}
	c.failedSince, c.relocations = nil, nil
	c.note("restored; survivors resend their logs to the restored tasks")
	cmds := []Command{toEvery(notice), Restored{Generation: c.generation, Failed: notice.Failed, Relocated: len(notice.Relocations)}}
	return append(cmds, c.watchProgress()...)
}

// watchProgress asks the PEs to tell when their tasks are back where the
// job was at the failure. Before any task offered a step there is nothing
// to regain, and nothing is reported.
func (c *Coordinator) watchProgress() []Command {
	if !c.atFailure.Offered {
		return nil
	}
	c.regaining, c.regainFrom = slices.Clone(c.live), 0
	return []Command{toEvery(WatchProgress{Generation: c.generation, Step: c.atFailure.Step})}
}

// OnReached records that every task on PE pe offered the watched step
// again; once all live PEs have, the progress at the failure is regained.
// Answers to the watch of an earlier recovery are ignored.
func (c *Coordinator) OnReached(pe int, generation, step uint64) []Command {
	if c.done || generation != c.generation || c.regaining == nil || !c.live[pe] || step != c.atFailure.Step {
		return nil
	}
	c.regaining[pe] = false
	// Entries only ever turn false: the PEs before regainFrom have.
	for ; c.regainFrom < len(c.regaining); c.regainFrom++ {
		if c.regaining[c.regainFrom] {
			return nil
		}
	}
	c.regaining = nil
	return []Command{ProgressRegained{Generation: generation, Step: step}}
}
