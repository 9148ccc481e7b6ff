package scheduler

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gochare/gochare/migrate"
)

// Recovery from disk. When a failure takes both in-memory copies of some
// task's checkpoint (a PE and its buddy), the job cannot recover from
// memory. If checkpoints are also written to disk (--checkpoint-dir), every
// task of the job goes back to the latest complete disk checkpoint instead,
// on the PEs still alive, under any protocol: a rollback whose records the
// caller reads from disk and hands to the PEs (SendDiskRecords, then
// DiskRecords events), with fresh protocol state, as a restart from disk
// would have. The PEs then hold that checkpoint in memory (own copy and
// buddy copy), so that a later failure recovers as usual.

// SendDiskRecords asks the caller to read checkpoint Epoch in Dir and give
// every live PE the records of the tasks Hosts places on it (Hosts[c][lin]
// is the PE of element lin of collection c), as DiskRecords events of
// Generation; each PE's last one has Last set (also if it has no record).
type SendDiskRecords struct {
	Dir        string
	Epoch      uint64
	Generation uint64
	Hosts      [][]int
}

// DiskRecords gives a PE task records of a disk checkpoint it rolls back to
// (see SendDiskRecords).
type DiskRecords struct {
	Generation uint64
	Records    []migrate.TaskRecord
	Last       bool
}

// ErrNoDiskCheckpoint is wrapped when a failure cannot be recovered from
// memory and there is no disk checkpoint to fall back to.
var ErrNoDiskCheckpoint = errors.New("no disk checkpoint to fall back to")

// unrecoverableFromMemory handles a failure whose recovery plan lost both
// copies of a checkpoint: the job falls back to disk if it can, and stops
// with an error that says why otherwise.
func (c *JobCoordinator) unrecoverableFromMemory(pe int, cause error) []Command {
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
func (c *JobCoordinator) rollbackFromDisk(pe int, cause error) []Command {
	var survivors, dead []int
	for p, ok := range c.live {
		if ok {
			survivors = append(survivors, p)
		} else {
			dead = append(dead, p)
		}
	}
	var relocs []migrate.Relocation
	hosts := make([][]int, len(c.hosts))
	next := 0
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
	c.failuresSinceCommit = 0
	c.note("PE %d failed and %v; every task goes back to disk checkpoint %d (generation %d)", pe, firstLine(cause.Error()), c.diskEpoch, c.generation)
	c.phase = phaseRollingBack
	c.pendingRestored = slices.Clone(c.live)
	return []Command{
		{To: -1, Event: Rollback{Generation: c.generation, Epoch: c.diskEpoch, Failed: dead, Relocations: relocs, FromDisk: true}},
		{To: -2, Event: SendDiskRecords{Dir: c.cfg.CheckpointDir, Epoch: c.diskEpoch, Generation: c.generation, Hosts: hosts}},
	}
}

// Abort ends the job with err (the caller could not do what a command
// asked, e.g. read a disk checkpoint).
func (c *JobCoordinator) Abort(err error) []Command { return c.finish(1, err) }

// rollbackToDisk is the PE's part of a disk rollback (Rollback.FromDisk):
// it forgets its in-memory checkpoints, holds the disk epoch as its
// committed one, and waits for the records of the tasks placed on it.
func (pe *PE) rollbackToDisk(ev Rollback) {
	pe.store = migrate.NewStore()
	if err := pe.store.Stage(ev.Epoch, nil); err != nil {
		pe.halt(err)
		return
	}
	if err := pe.store.Commit(ev.Epoch); err != nil {
		pe.halt(err)
		return
	}
	for _, f := range ev.Failed {
		if f >= 0 && f < len(pe.live) && pe.live[f] {
			pe.live[f] = false
			if n, ok := pe.cfg.Net.(interface{ Forget(peer int) }); ok {
				n.Forget(f)
			}
		}
	}
	for _, r := range ev.Relocations {
		pe.colls[r.Task.Collection].homeOf[r.Task.Lin] = int32(r.ToPE)
	}
	for _, cs := range pe.colls {
		for lin, home := range cs.homeOf {
			if int(home) == pe.cfg.Rank {
				pe.expectRestore[pe.taskID(cs, lin)] = true
			}
		}
	}
	pe.restoring, pe.fromDisk = true, true
	pe.receiveEarly()
}

// diskRecords restores tasks from a disk checkpoint's records.
func (pe *PE) diskRecords(ev DiskRecords) {
	if ev.Generation != pe.generation || !pe.fromDisk {
		return // of a rollback a later failure replaced
	}
	for _, rec := range ev.Records {
		if cs, lin, ok := pe.recordTarget(rec); !ok || int(cs.homeOf[lin]) != pe.cfg.Rank {
			pe.halt(fmt.Errorf("scheduler: disk checkpoint record of task %d[%d] given to PE %d, which does not host it", rec.Collection, rec.Lin, pe.cfg.Rank))
			return
		}
		if err := pe.restoreRecord(rec); err != nil {
			pe.halt(err)
			return
		}
	}
	if !ev.Last {
		return
	}
	if len(pe.expectRestore) > 0 {
		pe.halt(fmt.Errorf("scheduler: the disk checkpoint gave PE %d no record of %s", pe.cfg.Rank, pe.describeTasks(pe.expectRestore)))
		return
	}
	// The tasks restart with fresh protocol state: their new checkpoint
	// records say so, and become this PE's copy of the epoch (and, sent
	// to its buddy, the buddy copy).
	recs, err := pe.records()
	if err != nil {
		pe.halt(err)
		return
	}
	pe.restoredRecords = recs
	pe.reprotect = true
	pe.fromDisk = false
	pe.reportRestored()
}

// recreate handles a failure before the job's first checkpoint committed:
// no task has run yet (the job begins after that commit), so the failed
// PEs' tasks are created afresh on the survivors, round-robin in task
// order, every PE starts its protocol afresh, and the checkpoint of the
// tasks as created is taken again before the job begins.
func (c *JobCoordinator) recreate(pe int) []Command {
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
	c.pendingRestored = slices.Clone(c.live)
	return []Command{{To: -1, Event: Rollback{Generation: c.generation, Failed: dead, Relocations: relocs, Recreate: true}}}
}

// recreateTasks is the PE's part of recreate (Rollback.Recreate): it
// creates the tasks now placed on it as the job declares them.
func (pe *PE) recreateTasks(ev Rollback) {
	pe.store = migrate.NewStore()
	for _, f := range ev.Failed {
		if f >= 0 && f < len(pe.live) && pe.live[f] {
			pe.live[f] = false
			if n, ok := pe.cfg.Net.(interface{ Forget(peer int) }); ok {
				n.Forget(f)
			}
		}
	}
	for _, r := range ev.Relocations {
		pe.colls[r.Task.Collection].homeOf[r.Task.Lin] = int32(r.ToPE)
	}
	for _, cs := range pe.colls {
		for lin, home := range cs.homeOf {
			if int(home) == pe.cfg.Rank {
				pe.addElement(cs, lin, cs.def.New(cs.def.Shape.At(lin)))
			}
		}
	}
	pe.rollingBack = false
	pe.receiveEarly()
	pe.cfg.Control.Restored(pe.generation, 0, Progress{})
}
