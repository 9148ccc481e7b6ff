package scheduler

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Coordinated checkpoints on a PE. The coordinator decides; the PE
// performs:
//
//   - TakeCheckpoint: pack every local task with its runtime and protocol
//     state, stage the records, send a copy to the buddy PE;
//   - CommitCheckpoint: keep the new epoch, discard the protocol's logs
//     (and write the epoch to disk).
//
// A failure between the two abandons the staged epoch (abandonCheckpoint).
// receiveCheckpoint takes every kind of checkpoint payload another PE
// sends: a buddy copy, a re-sent copy after a recovery, the records of
// migrated tasks and those of tasks restored here.

// abandonCheckpoint drops a checkpoint being staged when a failure
// interrupts it: the coordinator recovers from the committed one, and
// takes the next with a new epoch number. Buddy copies of the abandoned
// epoch that arrive later are ignored.
func (pe *PE) abandonCheckpoint() {
	if epoch, staging := pe.store.Staging(); staging {
		if err := pe.store.Abort(epoch); err != nil {
			panic(fmt.Sprintf("scheduler: abort staged checkpoint %d: %v", epoch, err))
		}
		pe.abandonedUpTo = max(pe.abandonedUpTo, epoch)
	}
}

// ErrRegionAtCheckpoint reports a task inside a commutative region when a
// checkpoint is due.
var ErrRegionAtCheckpoint = errors.New("scheduler: cannot checkpoint a task inside a commutative region")

// records packs every local task for a checkpoint.
func (pe *PE) records() ([]migrate.TaskRecord, error) {
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			if h, open := pe.proto.OpenRegion(cs.local[lin].id); open {
				_, hi := splitHandler(h)
				return nil, fmt.Errorf("%w: %s%v is inside a region of handler %s; a region must not stay open across a sync point (make the handler ordered, or close the region before the step's sync point)",
					ErrRegionAtCheckpoint, cs.def.Name, cs.local[lin].index, cs.def.Handlers[hi].Name)
			}
		}
	}
	// The logs stay until the checkpoint commits (commitCheckpoint): if a
	// PE fails before, this one is abandoned and replay needs them.
	cps := map[commutative.TaskID]logging.TaskCheckpoint{}
	for _, cp := range pe.proto.(logging.Snapshotter).Snapshot() {
		cps[cp.Counters.Task] = cp
	}
	var recs []migrate.TaskRecord
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			el := cs.local[lin]
			rec, err := pe.packElement(el, cps[el.id])
			if err != nil {
				return nil, err
			}
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

func (pe *PE) takeCheckpoint(epoch uint64) {
	recs, err := pe.records()
	if err != nil {
		pe.cfg.Control.Fail(err)
		return
	}
	if err := pe.store.Stage(epoch, recs); err != nil {
		pe.cfg.Control.Fail(err)
		return
	}
	if pe.recreatePending {
		// The first checkpoint after the tasks were created again is
		// their checkpoint as created.
		pe.createdEpoch, pe.recreatePending = epoch, false
	}
	size := 0
	for _, r := range recs {
		size += len(r.Task) + len(r.Runtime) + len(r.Protocol)
	}
	if buddy := migrate.Buddy(pe.cfg.Rank, pe.live); buddy >= 0 {
		pe.sendCheckpoint(buddy, wire.CheckpointKind_CHECKPOINT_BUDDY, epoch, pe.cfg.Rank, recs)
	}
	pe.cfg.Control.CheckpointStaged(epoch, len(recs), size)
}

func (pe *PE) sendCheckpoint(to int, kind wire.CheckpointKind, epoch uint64, of int, recs []migrate.TaskRecord) {
	b, err := migrate.MarshalPECheckpoint(&migrate.PECheckpoint{Epoch: epoch, PE: of, NumPEs: pe.cfg.Size, Tasks: recs})
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal checkpoint: %v", err))
	}
	if to == pe.cfg.Rank {
		pe.receiveCheckpoint(pe.cfg.Rank, kind, b, pe.generation)
		return
	}
	payload, err := proto.Marshal(&wire.Batch{Job: pe.cfg.JobID, Generation: pe.generation, CheckpointKind: kind, Checkpoint: b})
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal batch: %v", err))
	}
	pe.cfg.Net.Send(to, payload)
	pe.cfg.Net.Flush()
}

// generation is the recovery generation of the batch that carried it.
func (pe *PE) receiveCheckpoint(from int, kind wire.CheckpointKind, b []byte, generation uint64) {
	cp, err := migrate.UnmarshalPECheckpoint(b)
	if err != nil {
		pe.drop(fmt.Errorf("%w: checkpoint from PE %d: %v", ErrMalformed, from, err))
		return
	}
	switch kind {
	case wire.CheckpointKind_CHECKPOINT_BUDDY:
		if cp.Epoch <= pe.abandonedUpTo || cp.Epoch <= pe.store.Epoch() {
			return // a copy for a checkpoint a failure abandoned, late
		}
		if err := pe.store.StageBuddy(from, cp.Epoch, cp.Tasks); err != nil {
			pe.drop(fmt.Errorf("%w: buddy copy from PE %d: %v", ErrMalformed, from, err))
			return
		}
		pe.cfg.Control.BuddyStored(cp.Epoch, from, generation)
	case wire.CheckpointKind_CHECKPOINT_ADOPT:
		if err := pe.store.AdoptBuddy(from, cp.Epoch, cp.Tasks); err != nil {
			pe.drop(fmt.Errorf("%w: adopted copy from PE %d: %v", ErrMalformed, from, err))
			return
		}
		// The coordinator counts from's tasks as protected here only now.
		pe.cfg.Control.BuddyStored(cp.Epoch, from, generation)
	case wire.CheckpointKind_CHECKPOINT_MIGRATE:
		for _, rec := range cp.Tasks {
			if err := pe.importTask(rec); err != nil {
				pe.cfg.Control.Fail(err)
				return
			}
			// The record may come before this PE's Migrate event (its
			// source handled its own first, and the two come by
			// different paths): where it came from is noted all the
			// same, for undoMoves if its source fails.
			if pe.importedFrom == nil {
				pe.importedFrom = map[migrate.TaskRef]int{}
			}
			pe.importedFrom[rec.Ref()] = from
			pe.markRunnable(pe.colls[rec.Collection].local[rec.Lin])
		}
		pe.reportMigrated()
	case wire.CheckpointKind_CHECKPOINT_RESTORE:
		for _, rec := range cp.Tasks {
			if err := pe.restoreRecord(rec); err != nil {
				pe.cfg.Control.Fail(err)
				return
			}
			pe.restoredRecords = append(pe.restoredRecords, rec)
		}
		pe.reportRestored()
	default:
		pe.drop(fmt.Errorf("%w: checkpoint kind %v", ErrMalformed, kind))
	}
}

func (pe *PE) commitCheckpoint(ev job.CommitCheckpoint) {
	if err := pe.store.Commit(ev.Epoch); err != nil {
		pe.cfg.Control.Fail(err)
		return
	}
	// The checkpoint records the placement the last migration made.
	pe.moves, pe.exported, pe.importedFrom = nil, nil, nil
	// Only now is everything before the checkpoint unneeded. No PE
	// resumes before every PE has committed (Committed), so nothing of the
	// next period has arrived yet.
	pe.proto.Checkpoint()
	own, _ := pe.store.Own(ev.Epoch)
	if pe.rec != nil {
		for _, rec := range own {
			pe.recordState(rec, ev.Epoch, false)
		}
	}
	pe.cfg.Control.Committed(ev.Epoch)
	if ev.Dir == "" {
		return
	}
	entry, err := migrate.WriteDisk(ev.Dir, &migrate.PECheckpoint{Epoch: ev.Epoch, PE: pe.cfg.Rank, NumPEs: pe.cfg.Size, Tasks: own})
	pe.cfg.Control.DiskWritten(ev.Epoch, entry, err)
}
