package scheduler

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Checkpoint, restart and recovery on a PE. The launcher's coordinator
// (JobCoordinator) decides; the PE performs:
//
//   - TakeCheckpoint: pack every local task with its runtime and protocol
//     state, stage the records, send a copy to the buddy PE;
//   - CommitCheckpoint: keep the new epoch (and write it to disk);
//   - Resume: call ResumeFromSync on the tasks waiting at a sync point;
//   - Recover (message logging): the failed PEs' tasks are restored on the
//     PEs the plan names, from the buddy copies, while everything else
//     goes on; then NoticeFailure makes the survivors resend their logs;
//   - Rollback (checkpoint/restart): every task of the job goes back to
//     the last committed checkpoint;
//   - WatchProgress: once restored, report Reached when every local task
//     has offered again the step the job had reached at the failure (the
//     recovery time the evaluation reports).

// Events the coordinator posts to a PE.
type (
	// TakeCheckpoint stages checkpoint Epoch.
	TakeCheckpoint struct{ Epoch uint64 }
	// CommitCheckpoint makes checkpoint Epoch the one to recover from; with
	// Dir set, the PE also writes it there.
	CommitCheckpoint struct {
		Epoch uint64
		Dir   string
	}
	// Resume ends a sync point.
	Resume struct{}
	// Recover restores the failed PEs' tasks where the relocations say.
	// UndoMoves says the failure interrupted a migration (see undoMoves).
	Recover struct {
		Generation  uint64
		Failed      []int
		Relocations []migrate.Relocation
		UndoMoves   bool
	}
	// NoticeFailure starts replay once every relocated task is restored.
	NoticeFailure struct {
		Generation  uint64
		Failed      []int
		Relocations []migrate.Relocation
	}
	// RestartFrom gives the local tasks the states of a disk checkpoint
	// before the job begins (a restart, possibly on another PE count).
	RestartFrom struct{ Records []migrate.TaskRecord }
	// Rollback restores every task from checkpoint Epoch (checkpoint/restart);
	// with FromDisk, from the disk checkpoint of that epoch, whose records
	// come in DiskRecords events (see diskrecovery.go).
	Rollback struct {
		Generation  uint64
		Epoch       uint64
		Failed      []int
		Relocations []migrate.Relocation
		FromDisk    bool
		// Recreate: the job's first checkpoint never committed; the PE
		// creates its tasks afresh (see recreate).
		Recreate bool
	}
	// WatchProgress asks for Reached once every local task of a collection
	// with sync points has offered step Step, or a later one, since it was
	// placed on this PE (restored, rolled back or created).
	WatchProgress struct {
		Generation uint64
		Step       uint64
	}
)

// Progress is how far tasks got: the highest step they offered at a sync
// point (ctx.AtSync), if they offered any.
type Progress struct {
	Step    uint64
	Offered bool
}

// Max returns the further of p and q.
func (p Progress) Max(q Progress) Progress {
	if !p.Offered || (q.Offered && q.Step > p.Step) {
		return q
	}
	return p
}

// IdleStatus answers a quiescence probe.
type IdleStatus struct {
	Round, Sent, Received uint64
	// AtSync is the number of local tasks waiting at a sync point, of
	// SyncTasks local tasks of collections that use sync points.
	AtSync, SyncTasks int
}

func (pe *PE) syncTasks() int {
	n := 0
	for _, cs := range pe.colls {
		if cs.def.AtSync {
			n += len(cs.sorted)
		}
	}
	return n
}

func (pe *PE) atSync(el *element, step uint64) bool {
	if !el.coll.def.AtSync {
		panic(fmt.Sprintf("scheduler: %s%v calls AtSync but its collection does not declare UsesAtSync", el.coll.def.Name, el.index))
	}
	pe.noteStep(el, step)
	if pe.cfg.OnStep != nil {
		pe.cfg.OnStep(step)
	}
	k := pe.cfg.CheckpointEvery
	if k == 0 || (step+1)%k != 0 || el.atSync {
		return false
	}
	el.atSync = true
	return true
}

// noteStep records the step a task offers. It costs the forward path a few
// comparisons; only while a WatchProgress is pending does a step at or past
// the watched one make the PE look at its other tasks.
func (pe *PE) noteStep(el *element, step uint64) {
	el.progress = Progress{Step: step, Offered: true}
	pe.progress = pe.progress.Max(el.progress)
	if pe.watch != nil && step >= pe.watch.Step {
		pe.checkWatch()
	}
}

// watchProgress takes the coordinator's WatchProgress: it is answered now
// if the local tasks are already there, else from noteStep.
func (pe *PE) watchProgress(ev WatchProgress) {
	if ev.Generation != pe.generation {
		return // a later recovery began; its own watch follows
	}
	pe.watch = &ev
	pe.checkWatch()
}

// checkWatch reports Reached once every local task of a collection with
// sync points has offered the watched step. It stops at the first task
// that has not, so a recovery costs at most tasks² comparisons, once.
//
// Tasks move by load balancing only at sync points, and the first sync
// point after a failure comes at or after the watched step, when every PE
// has answered: a task that arrives after its new PE answered cannot hold
// the report back.
func (pe *PE) checkWatch() {
	for _, cs := range pe.colls {
		if !cs.def.AtSync {
			continue
		}
		for _, lin := range cs.sorted {
			if p := cs.local[lin].progress; !p.Offered || p.Step < pe.watch.Step {
				return
			}
		}
	}
	pe.cfg.Control.Reached(pe.watch.Generation, pe.watch.Step)
	pe.watch = nil
}

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

// beginRecovery notes, before a Recover or Rollback changes anything, how
// far this PE's tasks had got (reported with Restored), and drops a watch
// of an earlier recovery.
func (pe *PE) beginRecovery() {
	pe.progressAtFailure = pe.progress
	pe.watch = nil
}

func (pe *PE) waitingAtSync() int {
	n := 0
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted {
			if cs.local[lin].atSync {
				n++
			}
		}
	}
	return n
}

// ErrRegionAtCheckpoint reports a task inside a commutative region when a
// checkpoint is due.
var ErrRegionAtCheckpoint = errors.New("scheduler: cannot checkpoint a task inside a commutative region")

// records packs every local task for a checkpoint.
func (pe *PE) records() ([]migrate.TaskRecord, error) {
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted {
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
		for _, lin := range cs.sorted {
			el := cs.local[lin]
			rec, err := packElement(el, cps[el.id])
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
			if pe.importedFrom != nil {
				pe.importedFrom[rec.Ref()] = from
			}
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

func (pe *PE) commitCheckpoint(ev CommitCheckpoint) {
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
	pe.cfg.Control.Committed(ev.Epoch)
	if ev.Dir == "" {
		return
	}
	own, _ := pe.store.Own(ev.Epoch)
	entry, err := migrate.WriteDisk(ev.Dir, &migrate.PECheckpoint{Epoch: ev.Epoch, PE: pe.cfg.Rank, NumPEs: pe.cfg.Size, Tasks: own})
	pe.cfg.Control.DiskWritten(ev.Epoch, entry, err)
}

// resume calls ResumeFromSync on every task waiting at a sync point.
func (pe *PE) resume() {
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted {
			if el := cs.local[lin]; el.atSync {
				pe.resumeTask(el)
			}
		}
	}
	pe.transmit()
	pe.schedule()
}

func (pe *PE) resumeTask(el *element) {
	el.atSync = false
	ctx := &pe.ctx
	ctx.el = el
	if pe.call(el, nil, "", func() { el.task.(actor.Resumer).ResumeFromSync(ctx) }) {
		pe.markRunnable(el)
	}
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

func (pe *PE) recover(ev Recover) {
	pe.abandonCheckpoint()
	if ev.UndoMoves {
		pe.undoMoves(ev.Failed)
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

func (pe *PE) noticeFailure(ev NoticeFailure) {
	var relocs []logging.Relocation
	var failed []logging.PEID
	for _, f := range ev.Failed {
		failed = append(failed, logging.PEID(f))
	}
	for _, r := range ev.Relocations {
		relocs = append(relocs, logging.Relocation{Task: commutative.TaskID(TaskID(int32(r.Task.Collection), r.Task.Lin)), PE: logging.PEID(r.ToPE)})
	}
	pe.proto.FailureNotice(failed, relocs)
	pe.transmit()
	restored := pe.restored
	pe.restored = nil
	for _, el := range restored {
		pe.resumeRestored(el)
	}
	pe.transmit()
	pe.schedule()
}

// resumeRestored starts a restored task again: from its sync point, or,
// for the main task restored from the initial checkpoint, with Start.
func (pe *PE) resumeRestored(el *element) {
	if el.atSync {
		pe.resumeTask(el)
		return
	}
	t := pe.job.MainTarget()
	if el.coll.def.ID == t.Collection && el.lin == el.coll.def.Shape.Linear(t.Index) && pe.store.Epoch() == InitialEpoch {
		pe.replayStart(el)
	}
	pe.markRunnable(el)
}

// replayStart gives the main task its Start message again, with the
// identity it had when the main task's first PE sent it.
func (pe *PE) replayStart(el *element) {
	t := pe.job.MainTarget()
	payload, err := proto.Marshal(&actor.Start{Args: pe.cfg.Args, NumPes: int32(pe.cfg.Size)})
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal Start: %v", err))
	}
	h := el.coll.def.Handlers[t.Handler]
	firstPE := el.coll.def.Map(el.lin, el.coll.n, pe.cfg.Size)
	// It counts as sent by this PE to itself, as arrive counts it
	// received: quiescence detection balances the two.
	pe.stats.Sent++
	pe.sentTo[pe.cfg.Rank]++
	pe.arrive(logging.Envelope{Kind: logging.EnvelopeMessage, From: logging.PEID(pe.cfg.Rank), To: logging.PEID(pe.cfg.Rank), Replayed: true, Message: logging.Message{
		ID: logging.MessageID{Sender: commutative.TaskID(TaskID(systemCollection, firstPE)), SRN: 1},
		To: el.id, Handler: handlerID(t.Collection, t.Handler), Annotation: annotationOf(h.Annotation), Payload: payload,
	}})
}

func (pe *PE) rollback(ev Rollback) {
	pe.abandonCheckpoint()
	pe.beginRecovery()
	pe.generation = ev.Generation
	pe.rolledBackAt = ev.Generation
	pe.rollingBack = true
	pe.proto = pe.newProtocol()
	pe.proto.HostTask(pe.system)
	// Every task goes back to where its checkpoint is; the places are
	// those the PE knows (where earlier recoveries put tasks), and the
	// failed PE's tasks move as the relocations say (markFailed).
	for _, cs := range pe.colls {
		clear(cs.local)
		cs.sorted = cs.sorted[:0]
	}
	clear(pe.runnable)
	pe.runnable, pe.runAt = pe.runnable[:0], 0
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
	// to where the checkpoint has it.
	for _, mv := range pe.moves {
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
	pe.receiveEarly()
	pe.reportRestored()
}

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
		if err := el.task.UnmarshalBinary(rec.Task); err != nil {
			return fmt.Errorf("scheduler: restart %s[%d]: %w", cs.def.Name, rec.Lin, err)
		}
		var rt wire.TaskRuntime
		if err := proto.Unmarshal(rec.Runtime, &rt); err != nil {
			return fmt.Errorf("scheduler: runtime state of %s[%d]: %w", cs.def.Name, rec.Lin, err)
		}
		el.expected, el.nextRed, el.atSync = rt.Expected, rt.NextReduction, rt.AtSync
	}
	return nil
}

// packElement makes a task's checkpoint record: its own state, the
// scheduler's state of it, and the protocol's counters.
func packElement(el *element, cp logging.TaskCheckpoint) (migrate.TaskRecord, error) {
	cs := el.coll
	task, err := el.task.MarshalBinary()
	if err != nil {
		return migrate.TaskRecord{}, fmt.Errorf("scheduler: pack %s%v: %w", cs.def.Name, el.index, err)
	}
	runtime, err := proto.Marshal(&wire.TaskRuntime{Expected: el.expected, NextReduction: el.nextRed, AtSync: el.atSync})
	if err != nil {
		return migrate.TaskRecord{}, err
	}
	protocol, err := proto.Marshal(taskCheckpointToWire(cp))
	if err != nil {
		return migrate.TaskRecord{}, err
	}
	return migrate.TaskRecord{Collection: uint32(cs.def.ID), Lin: int64(el.lin), Task: task, Runtime: runtime, Protocol: protocol}, nil
}

// recordTarget returns the collection and index a record is for.
func (pe *PE) recordTarget(rec migrate.TaskRecord) (*collectionState, int, bool) {
	if int(rec.Collection) >= len(pe.colls) {
		return nil, 0, false
	}
	cs := pe.colls[rec.Collection]
	if rec.Lin < 0 || rec.Lin >= int64(cs.n) {
		return nil, 0, false
	}
	return cs, int(rec.Lin), true
}

// unpackRecord builds a task from its record and places it on this PE
// (the caller tells the protocol); it returns the protocol's counters.
func (pe *PE) unpackRecord(rec migrate.TaskRecord) (*element, logging.TaskCheckpoint, error) {
	var cp logging.TaskCheckpoint
	cs, lin, ok := pe.recordTarget(rec)
	if !ok {
		return nil, cp, fmt.Errorf("scheduler: record of task %d[%d], which is not of this job", rec.Collection, rec.Lin)
	}
	task := cs.def.New(cs.def.Shape.At(lin))
	if err := task.UnmarshalBinary(rec.Task); err != nil {
		return nil, cp, fmt.Errorf("scheduler: unpack %s[%d]: %w", cs.def.Name, lin, err)
	}
	var rt wire.TaskRuntime
	if err := proto.Unmarshal(rec.Runtime, &rt); err != nil {
		return nil, cp, fmt.Errorf("scheduler: runtime state of %s[%d]: %w", cs.def.Name, lin, err)
	}
	var wcp wire.TaskCheckpoint
	if err := proto.Unmarshal(rec.Protocol, &wcp); err != nil {
		return nil, cp, fmt.Errorf("scheduler: protocol state of %s[%d]: %w", cs.def.Name, lin, err)
	}
	cp, err := taskCheckpointFromWire(&wcp)
	if err != nil {
		return nil, cp, err
	}
	el := pe.placeElement(cs, lin, task)
	el.expected, el.nextRed, el.atSync = rt.Expected, rt.NextReduction, rt.AtSync
	cs.homeOf[lin] = int32(pe.cfg.Rank)
	return el, cp, nil
}

func taskCheckpointToWire(cp logging.TaskCheckpoint) *wire.TaskCheckpoint {
	c := cp.Counters
	w := &wire.TaskCheckpoint{
		Task: uint64(c.Task), Srn: c.SRN, Rsn: c.RSN,
		RegionOpen: c.Region.Open, RegionHandler: c.Region.Key.Handler, RegionKey: c.Region.Key.Key,
		RegionSize: uint32(c.Region.Size), RegionConsumed: uint32(c.Region.Consumed), RegionSrn: c.Region.SRN,
	}
	for _, id := range cp.Received {
		w.Received = append(w.Received, idToWire(id))
	}
	for _, d := range cp.Requires {
		w.Requires = append(w.Requires, &wire.Dependency{Task: uint64(d.Task), Trigger: idToWire(d.Trigger)})
	}
	return w
}

func taskCheckpointFromWire(w *wire.TaskCheckpoint) (logging.TaskCheckpoint, error) {
	var cp logging.TaskCheckpoint
	cp.Counters = commutative.NewTaskState(commutative.TaskID(w.Task))
	cp.Counters.SRN, cp.Counters.RSN = w.Srn, w.Rsn
	cp.Counters.Region = commutative.Region{
		Open: w.RegionOpen, Key: commutative.RegionKey{Handler: w.RegionHandler, Key: w.RegionKey},
		Size: int(w.RegionSize), Consumed: int(w.RegionConsumed), SRN: w.RegionSrn,
	}
	for _, r := range w.Received {
		id, err := idFromWire(r)
		if err != nil {
			return cp, err
		}
		cp.Received = append(cp.Received, id)
	}
	for _, d := range w.Requires {
		id, err := idFromWire(d.Trigger)
		if err != nil {
			return cp, err
		}
		cp.Requires = append(cp.Requires, logging.Dependency{Task: commutative.TaskID(d.Task), Trigger: id})
	}
	return cp, nil
}
