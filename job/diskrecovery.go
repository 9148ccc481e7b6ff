package job

import (
	"errors"
	"fmt"

	"github.com/gochare/gochare/migrate"
)

// Recovery from disk. When a failure takes both in-memory copies of some
// task's checkpoint (a PE and its buddy), the job cannot recover from
// memory. If checkpoints are also written to disk (--checkpoint-dir), every
// task of the job goes back to the latest complete disk checkpoint instead,
// on the PEs still alive, under any protocol: a rollback whose records the
// driver reads from disk and hands to the PEs (SendDiskRecords), with
// fresh protocol state, as a restart from disk would have. The PEs then
// hold that checkpoint in memory (own copy and buddy copy), so that a
// later failure recovers as usual.
//
// A failure before the job's first checkpoint committed needs no
// checkpoint at all: the tasks are created again (recreate).

// ErrNoDiskCheckpoint is wrapped when a failure cannot be recovered from
// memory and there is no disk checkpoint to fall back to.
var ErrNoDiskCheckpoint = errors.New("no disk checkpoint to fall back to")

// unrecoverableFromMemory handles a failure whose recovery plan lost both
// copies of a checkpoint: the job falls back to disk if it can, and stops
// with an error that says why otherwise.
func (c *Coordinator) unrecoverableFromMemory(pe int, cause error) []Command {
	if !errors.Is(cause, migrate.ErrUnrecoverable) {
		return c.finish(1, cause)
	}
	if c.cfg.CheckpointDir == "" {
		return c.finish(1, fmt.Errorf("%w; %w (run with --checkpoint-dir to fall back to the latest disk checkpoint in such a case)", cause, ErrNoDiskCheckpoint))
	}
	if c.diskEpoch == 0 {
		return c.finish(1, fmt.Errorf("%w; %w: none is complete yet in %s", cause, ErrNoDiskCheckpoint, c.cfg.CheckpointDir))
	}
	return c.rollbackFromDisk(pe, cause)
}

// rollbackFromDisk sends every task back to the latest disk checkpoint:
// tasks stay on their PE if it is alive, the others go round-robin over
// the survivors in task order.
func (c *Coordinator) rollbackFromDisk(pe int, cause error) []Command {
	var survivors, dead []int
	for p, ok := range c.live {
		if ok {
			survivors = append(survivors, p)
		} else {
			dead = append(dead, p)
		}
	}
	// A migration since the last commit is undone, as every PE undoes it
	// in its rollback: a task another survivor sent to a survivor goes
	// back to where it came from. (The moves that involve a failed PE
	// were settled at its failure: such a task stays where that recovery
	// placed it, as PE.rollback leaves it; one placed just where the move
	// took it goes back to the dead PE it came from here, and so
	// round-robin below, which the relocations tell every PE.)
	for _, mv := range c.moves {
		if h := &c.hosts[mv.Task.Collection][mv.Task.Lin]; h.pe == mv.To {
			h.pe = mv.From
		}
	}
	var relocs []migrate.Relocation
	hosts := make([][]int, len(c.hosts))
	next := 0
	clear(c.protections) // every task's buddy is set anew below
	for coll, hs := range c.hosts {
		hosts[coll] = make([]int, len(hs))
		for lin := range hs {
			h := &hs[lin]
			if !c.live[h.pe] {
				to := survivors[next%len(survivors)]
				next++
				relocs = append(relocs, migrate.Relocation{Task: migrate.TaskRef{Collection: coll, Lin: lin},
					FailedPE: h.pe, ToPE: to, CheckpointPE: to, CopyPE: to})
				h.pe = to
			}
			// The buddy copy is confirmed later (OnBuddyStored).
			h.checkpointPE, h.buddyPE = h.pe, -1
			hosts[coll][lin] = h.pe
		}
	}
	c.committed = c.diskEpoch
	c.failedSince, c.relocations = nil, nil
	c.moves = nil // every PE forgets them in its rollback
	c.migrated = nil
	c.failuresSinceCommit = 0
	c.note("PE %d failed and %v; every task goes back to disk checkpoint %d (generation %d)", pe, firstLine(cause.Error()), c.diskEpoch, c.generation)
	c.phase = phaseRollingBack
	c.expectRestored()
	return []Command{
		toEvery(Rollback{Generation: c.generation, Epoch: c.diskEpoch, Failed: dead, Relocations: relocs, FromDisk: true}),
		SendDiskRecords{Dir: c.cfg.CheckpointDir, Epoch: c.diskEpoch, Generation: c.generation, Hosts: hosts},
	}
}

// OnDiskRecordsSent takes the outcome of a SendDiskRecords: if the driver
// could not read the disk checkpoint, the job stops with the error.
func (c *Coordinator) OnDiskRecordsSent(sd SendDiskRecords, err error) []Command {
	if err == nil {
		return nil
	}
	return c.finish(1, fmt.Errorf("job: recovery from disk checkpoint %d in %s: %w", sd.Epoch, sd.Dir, err))
}

// recreate handles a failure before the job's first checkpoint committed:
// no task has run yet (the job begins after that commit), so the failed
// PEs' tasks are created afresh on the survivors, round-robin in task
// order, every PE starts its protocol afresh, and the checkpoint of the
// tasks as created is taken again before the job begins.
func (c *Coordinator) recreate(pe int) []Command {
	c.generation++
	c.qd.Reset()
	c.roundOpen = false
	var survivors, dead []int
	for p, ok := range c.live {
		if ok {
			survivors = append(survivors, p)
		} else {
			dead = append(dead, p)
		}
	}
	var relocs []migrate.Relocation
	next := 0
	clear(c.protections) // every task's buddy is set anew below
	for coll, hs := range c.hosts {
		for lin := range hs {
			h := &hs[lin]
			if !c.live[h.pe] {
				to := survivors[next%len(survivors)]
				next++
				relocs = append(relocs, migrate.Relocation{Task: migrate.TaskRef{Collection: coll, Lin: lin},
					FailedPE: h.pe, ToPE: to, CheckpointPE: to, CopyPE: to})
				h.pe = to
			}
			h.checkpointPE, h.buddyPE = h.pe, migrate.Buddy(h.pe, c.live)
		}
	}
	c.note("PE %d failed before the job's first checkpoint committed: its %d tasks are created again on the survivors (generation %d)", pe, len(relocs), c.generation)
	c.phase = phaseRollingBack
	c.expectRestored()
	return []Command{toEvery(Rollback{Generation: c.generation, Failed: dead, Relocations: relocs, Recreate: true})}
}
