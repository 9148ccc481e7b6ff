package scheduler

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Tasks from a disk checkpoint: at a restart (--restart, RestartFrom
// before the job begins), and in a recovery that falls back to disk
// (Rollback.FromDisk, then DiskRecords).

// Records of a disk checkpoint, given to a PE by the process that hosts
// it (Net.Post): they are no coordinator events, but what the launcher
// reads from disk for the PE.
type (
	// RestartFrom gives the local tasks the states of a disk checkpoint
	// before the job begins (a restart, possibly on another PE count).
	RestartFrom struct{ Records []migrate.TaskRecord }
	// DiskRecords gives a PE task records of a disk checkpoint it rolls
	// back to (job.Rollback with FromDisk; the coordinator asked the
	// driver for them with job.SendDiskRecords). Last marks the last
	// part for the PE.
	DiskRecords struct {
		Generation uint64
		Records    []migrate.TaskRecord
		Last       bool
	}
)

// restartFrom installs checkpointed states into the tasks created here.
// Identities start afresh: this is a new job that continues an old one.
func (pe *PE) restartFrom(recs []migrate.TaskRecord) error {
	for _, rec := range recs {
		if int(rec.Collection) >= len(pe.colls) {
			return fmt.Errorf("scheduler: restart record of unknown collection %d", rec.Collection)
		}
		cs := pe.colls[rec.Collection]
		if rec.Lin < 0 || rec.Lin >= int64(cs.n) || cs.local[rec.Lin] == nil {
			return fmt.Errorf("scheduler: restart record of %s[%d], which is not on PE %d", cs.def.Name, rec.Lin, pe.cfg.Rank)
		}
		el := cs.local[rec.Lin]
		if err := cs.def.UnpackTask(el.task, rec.Task); err != nil {
			return fmt.Errorf("scheduler: restart %s[%d]: %w", cs.def.Name, rec.Lin, err)
		}
		var rt wire.TaskRuntime
		if err := proto.Unmarshal(rec.Runtime, &rt); err != nil {
			return fmt.Errorf("scheduler: runtime state of %s[%d]: %w", cs.def.Name, rec.Lin, err)
		}
		el.expected, el.nextRed, el.atSync = rt.Expected, rt.NextReduction, rt.AtSync
		pe.syncMaybe = pe.syncMaybe || el.atSync
		if pe.cfg.Observe != nil {
			pe.observe(Observation{Kind: ObserveUnpack, Task: uint64(el.id), Record: rec})
		}
	}
	return nil
}

// rollbackToDisk is the PE's part of a disk rollback (Rollback.FromDisk):
// it forgets its in-memory checkpoints, holds the disk epoch as its
// committed one, and waits for the records of the tasks placed on it.
func (pe *PE) rollbackToDisk(ev job.Rollback) {
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
