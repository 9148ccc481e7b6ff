package scheduler

import (
	"slices"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/migrate"
)

// Rollback on a PE (checkpoint/restart, and any protocol when a failure
// is beyond what its records survive): every task of the job goes back
// to the last committed checkpoint, with fresh protocol state.

func (pe *PE) rollback(ev job.Rollback) {
	pe.abandonCheckpoint()
	pe.beginRecovery()
	pe.generation = ev.Generation
	pe.rolledBackAt = ev.Generation
	if pe.rec != nil {
		pe.recordRollback()
	}
	pe.rollingBack = true
	old := pe.proto
	pe.proto = pe.newProtocol(ev.Failed...)
	pe.quotaProtocol(old)
	pe.eventLogProtocol()
	pe.proto.HostTask(pe.system)
	// Every task goes back to where its checkpoint is; the places are
	// those the PE knows (where earlier recoveries put tasks), and the
	// failed PE's tasks move as the relocations say (markFailed).
	for _, cs := range pe.colls {
		cs.clearLocal()
	}
	clear(pe.runnable)
	pe.runnable, pe.runAt = pe.runnable[:0], 0
	pe.autoResume = nil
	for to := range pe.out {
		pe.out[to].reset()
	}
	pe.qdCallbacks = nil
	pe.sentTo, pe.receivedFrom = make([]uint64, pe.cfg.Size), make([]uint64, pe.cfg.Size)
	// What an interrupted earlier rollback, or a migration, was waiting
	// for is moot now.
	clear(pe.expectRestore)
	clear(pe.expectMigrate)
	pe.migrating = false
	// A migration since the checkpoint is undone: every task goes back
	// to where the checkpoint has it. A move that involves a PE that
	// failed since was settled at that failure (undoMoves), and its task
	// is where that recovery placed it, as the coordinator has it too:
	// sent back to the PE it came from, it would be on a PE the
	// coordinator does not place it on (a failed one, whose tasks the
	// relocations do not list).
	for _, mv := range pe.moves {
		if !pe.live[mv.From] || !pe.live[mv.To] {
			continue
		}
		pe.colls[mv.Task.Collection].homeOf[mv.Task.Lin] = int32(mv.From)
	}
	pe.moves, pe.exported, pe.importedFrom = nil, nil, nil
	pe.restored, pe.restoredRecords = nil, nil
	pe.early = slices.DeleteFunc(pe.early, func(b earlyBatch) bool { return b.generation < ev.Generation })
	pe.fromDisk = false
	if ev.FromDisk {
		pe.rollbackToDisk(ev)
		return
	}
	if ev.Recreate {
		pe.recreateTasks(ev)
		return
	}
	// A task this PE adopted in a rollback that a further failure
	// interrupted may be relocated again: the plan decides where it goes.
	relocated := map[migrate.TaskRef]bool{}
	for _, r := range ev.Relocations {
		relocated[r.Task] = true
	}
	own, _ := pe.store.Own(ev.Epoch)
	for _, rec := range own {
		if relocated[rec.Ref()] {
			continue
		}
		if err := pe.restoreRecord(rec); err != nil {
			pe.cfg.Control.Fail(err)
			return
		}
	}
	pe.markFailed(ev.Failed, ev.Relocations)
	// Such a task is no longer this PE's to restore: its record leaves
	// the own copy (after markFailed, which may send it from there), or a
	// later rollback whose plan no longer names it would restore it here
	// as well as on the PE this plan put it on.
	elsewhere := map[migrate.TaskRef]bool{}
	for _, r := range ev.Relocations {
		if r.ToPE != pe.cfg.Rank {
			elsewhere[r.Task] = true
		}
	}
	if _, ok := pe.store.Own(ev.Epoch); ok && len(elsewhere) > 0 {
		if err := pe.store.ReleaseOwn(ev.Epoch, func(t migrate.TaskRef) bool { return elsewhere[t] }); err != nil {
			pe.cfg.Control.Fail(err)
			return
		}
	}
	pe.receiveEarly()
	pe.reportRestored()
}

// recreateTasks is the PE's part of recreate (Rollback.Recreate): it
// creates the tasks now placed on it as the job declares them.
func (pe *PE) recreateTasks(ev job.Rollback) {
	pe.store = migrate.NewStore()
	pe.recreatePending = true
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
	pe.cfg.Control.Restored(pe.generation, 0, job.Progress{})
}
