package scheduler

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Recovery on a PE under message logging. The coordinator decides; the
// PE performs:
//
//   - Recover: the failed PEs' tasks are restored on the PEs the plan
//     names, from the checkpoint copies the survivors hold, while
//     everything else goes on (markFailed, restoreRecord); once all are
//     here the PE re-protects them and reports Restored (reportRestored);
//   - NoticeFailure: the survivors resend their logs to the restored
//     tasks, which replay (noticeFailure).
//
// Batches of a recovery this PE has not been told of yet wait in PE.early
// until it has (receiveEarly).

// beginRecovery notes, before a Recover or Rollback changes anything, how
// far this PE's tasks had got (reported with Restored), and drops a watch
// of an earlier recovery.
func (pe *PE) beginRecovery() {
	pe.progressAtFailure = pe.progress
	pe.watch = nil
}

// restoreRecord builds a task from its checkpoint record on this PE.
func (pe *PE) restoreRecord(rec migrate.TaskRecord) error {
	if cs, lin, ok := pe.recordTarget(rec); ok && cs.local[lin] != nil {
		return nil // already here (a restore sent twice)
	}
	el, cp, err := pe.unpackRecord(rec)
	if err != nil {
		return err
	}
	if pe.rec != nil {
		pe.recordState(rec, pe.store.Epoch(), false)
	}
	if pe.rollingBack {
		pe.proto.HostTask(el.id)
		pe.stats.RolledBack++
	} else {
		pe.proto.RestoreTask(cp, pe.survivors())
		pe.restored = append(pe.restored, el)
	}
	if pe.expectRestore[el.id] {
		delete(pe.expectRestore, el.id)
		pe.stats.Restored++
	}
	return nil
}

func (pe *PE) survivors() []logging.PEID {
	var s []logging.PEID
	for p, ok := range pe.live {
		if ok {
			s = append(s, logging.PEID(p))
		}
	}
	return s
}

// reportRestored tells the coordinator once every task this PE had to
// restore is here. First it protects them: restored tasks join this PE's
// own checkpoint copy, and the copy goes to this PE's buddy, so that this
// PE, or the one that held their copy, can fail before the next
// checkpoint.
func (pe *PE) reportRestored() {
	if len(pe.expectRestore) > 0 || !pe.restoring {
		return
	}
	pe.restoring = false
	if len(pe.restoredRecords) > 0 || pe.reprotect {
		epoch := pe.store.Epoch()
		if len(pe.restoredRecords) > 0 {
			if err := pe.store.AdoptOwn(epoch, pe.restoredRecords); err != nil {
				pe.cfg.Control.Fail(err)
				return
			}
		}
		if nb := migrate.Buddy(pe.cfg.Rank, pe.live); nb >= 0 {
			if own, ok := pe.store.Own(epoch); ok {
				pe.sendCheckpoint(nb, wire.CheckpointKind_CHECKPOINT_ADOPT, epoch, pe.cfg.Rank, own)
			}
		}
		pe.restoredRecords, pe.reprotect = nil, false
	}
	pe.cfg.Control.Restored(pe.generation, pe.stats.Restored, pe.progressAtFailure)
}

// markFailed forgets failed PEs and points their tasks to their new PEs;
// records this PE holds copies of go to the PEs that restore them.
func (pe *PE) markFailed(failed []int, relocs []migrate.Relocation) {
	liveBefore := slices.Clone(pe.live)
	for _, f := range failed {
		if f >= 0 && f < len(pe.live) {
			pe.live[f] = false
			if n, ok := pe.cfg.Net.(interface{ Forget(peer int) }); ok {
				n.Forget(f)
			}
		}
	}
	pe.restoring = true
	send := map[int][]migrate.TaskRecord{}
	for _, r := range relocs {
		cs := pe.colls[r.Task.Collection]
		cs.homeOf[r.Task.Lin] = int32(r.ToPE)
		id := commutative.TaskID(TaskID(cs.def.ID, r.Task.Lin))
		if r.ToPE == pe.cfg.Rank && cs.local[r.Task.Lin] == nil {
			pe.expectRestore[id] = true
		}
		if r.CopyPE != pe.cfg.Rank {
			continue
		}
		rec, ok := pe.store.BuddyRecord(r.CheckpointPE, r.Task)
		if !ok {
			rec, ok = pe.store.OwnRecord(r.Task)
		}
		if !ok {
			// A copy kept for another ward: the task moved (a recovery)
			// since that ward sent it, and it is of the same epoch.
			rec, ok = pe.store.AnyRecord(r.Task)
		}
		if !ok {
			pe.cfg.Control.Fail(fmt.Errorf("scheduler: PE %d holds no checkpoint copy of %s[%d] (of PE %d)", pe.cfg.Rank, cs.def.Name, r.Task.Lin, r.CheckpointPE))
			continue
		}
		send[r.ToPE] = append(send[r.ToPE], rec)
	}
	// A PE whose buddy failed must give its copy to its new buddy (see
	// reportRestored).
	if b := migrate.Buddy(pe.cfg.Rank, liveBefore); b >= 0 && !pe.live[b] {
		pe.reprotect = true
	}
	for _, to := range sortedKeys(send) {
		pe.sendCheckpoint(to, wire.CheckpointKind_CHECKPOINT_RESTORE, pe.store.Epoch(), pe.cfg.Rank, send[to])
	}
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (pe *PE) recover(ev job.Recover) {
	pe.abandonCheckpoint()
	if ev.UndoMoves {
		pe.undoMoves(ev.Failed)
		// The coordinator waits for the tasks moved here to arrive
		// before the next checkpoint: those the failed PEs were to send
		// are not awaited any more.
		pe.reportMigrated()
	}
	pe.beginRecovery()
	pe.generation = max(pe.generation, ev.Generation)
	pe.markFailed(ev.Failed, ev.Relocations)
	pe.receiveEarly()
	pe.reportRestored()
}

// receiveEarly takes the batches that arrived before this PE reached their
// generation.
func (pe *PE) receiveEarly() {
	early := pe.early
	pe.early = nil
	for _, b := range early {
		pe.Receive(b.from, b.payload)
	}
}

func (pe *PE) noticeFailure(ev job.NoticeFailure) {
	var relocs []logging.Relocation
	var failed []logging.PEID
	for _, f := range ev.Failed {
		failed = append(failed, logging.PEID(f))
	}
	for _, r := range ev.Relocations {
		relocs = append(relocs, logging.Relocation{Task: commutative.TaskID(TaskID(int32(r.Task.Collection), r.Task.Lin)), PE: logging.PEID(r.ToPE)})
	}
	if !pe.fetchDumped(failed, relocs) {
		return
	}
	pe.proto.FailureNotice(failed, relocs)
	if !pe.checkEventLogLost() {
		return
	}
	pe.transmit()
	pe.checkDumpedNeeded()
	restored := pe.restored
	pe.restored = nil
	if pe.quota() != nil {
		pe.resumeRestoredOneByOne(restored) // as the log has room (quota.go)
		return
	}
	for _, el := range restored {
		pe.resumeRestored(el)
	}
	pe.runAutoResumes()
	pe.transmit()
	pe.schedule()
}

// resumeRestored starts a restored task again: from its sync point, or,
// for the main task restored from the checkpoint of the tasks as created
// (the initial one, or the one after they were created again), with Start.
func (pe *PE) resumeRestored(el *element) {
	if el.atSync {
		pe.resumeTask(el)
		return
	}
	t := pe.job.MainTarget()
	created := pe.createdEpoch
	if created == 0 {
		created = job.InitialEpoch
	}
	if el.coll.def.ID == t.Collection && el.lin == el.coll.def.Shape.Linear(t.Index) && pe.store.Epoch() == created {
		pe.replayStart(el)
	}
	pe.markRunnable(el)
}

// replayStart gives the main task its Start message again, with the
// identity it had when the main task's PE at Begin sent it.
func (pe *PE) replayStart(el *element) {
	t := pe.job.MainTarget()
	payload, err := proto.Marshal(&actor.Start{Args: pe.cfg.Args, NumPes: int32(pe.cfg.Size)})
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal Start: %v", err))
	}
	h := el.coll.def.Handlers[t.Handler]
	firstPE := pe.startedBy
	if firstPE < 0 {
		firstPE = el.coll.def.Map(el.lin, el.coll.n, pe.cfg.Size)
	}
	// It counts as sent by this PE to itself, as arrive counts it
	// received: quiescence detection balances the two.
	pe.stats.Sent++
	pe.sentTo[pe.cfg.Rank]++
	pe.arrive(logging.Envelope{Kind: logging.EnvelopeMessage, From: logging.PEID(pe.cfg.Rank), To: logging.PEID(pe.cfg.Rank), Replayed: true, Message: logging.Message{
		ID: logging.MessageID{Sender: commutative.TaskID(TaskID(systemCollection, firstPE)), SRN: 1},
		To: el.id, Handler: handlerID(t.Collection, t.Handler), Annotation: annotationOf(h.Annotation), Payload: payload,
	}})
}
