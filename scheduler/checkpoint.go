package scheduler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/internal/protofield"
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
		// Its encoding may still be on its way to the buddy: left to the
		// collector, as the buddy copies staged for it.
		pe.ckpt.staged = nil
		clear(pe.ckpt.buddyStaged)
		pe.ckpt.buddyStaged = pe.ckpt.buddyStaged[:0]
		pe.abandonedUpTo = max(pe.abandonedUpTo, epoch)
	}
}

// ErrRegionAtCheckpoint reports a task inside a commutative region when a
// checkpoint is due.
var ErrRegionAtCheckpoint = errors.New("scheduler: cannot checkpoint a task inside a commutative region")

// checkRegions reports a task inside a commutative region, which cannot
// be checkpointed.
func (pe *PE) checkRegions() error {
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			if h, open := pe.proto.OpenRegion(cs.local[lin].id); open {
				_, hi := splitHandler(h)
				return fmt.Errorf("%w: %s%v is inside a region of handler %s; a region must not stay open across a sync point (make the handler ordered, or close the region before the step's sync point)",
					ErrRegionAtCheckpoint, cs.def.Name, cs.local[lin].index, cs.def.Handlers[hi].Name)
			}
		}
	}
	return nil
}

// snapshots returns the protocol's counters of every local task.
func (pe *PE) snapshots() map[commutative.TaskID]logging.TaskCheckpoint {
	// The logs stay until the checkpoint commits (commitCheckpoint): if a
	// PE fails before, this one is abandoned and replay needs them.
	cps := map[commutative.TaskID]logging.TaskCheckpoint{}
	for _, cp := range pe.proto.(logging.Snapshotter).Snapshot() {
		cps[cp.Counters.Task] = cp
	}
	return cps
}

// records packs every local task into records of their own memory (a
// restart from disk keeps them as the PE's copy).
func (pe *PE) records() ([]migrate.TaskRecord, error) {
	if err := pe.checkRegions(); err != nil {
		return nil, err
	}
	cps := pe.snapshots()
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

// encodeCheckpoint appends to enc this PE's checkpoint of epoch, every
// local task packed straight into it (migrate.AppendTaskRecord), through
// a scratch buffer of one task's size: the copy of the state a checkpoint
// keeps is the encoding sent to the buddy.
func (pe *PE) encodeCheckpoint(enc []byte, epoch uint64) ([]byte, error) {
	if err := pe.checkRegions(); err != nil {
		return enc, err
	}
	cps := pe.snapshots()
	enc = migrate.AppendPECheckpointHeader(enc, &migrate.PECheckpoint{Epoch: epoch, PE: pe.cfg.Rank, NumPEs: pe.cfg.Size})
	scratch := pe.ckpt.scratch
	left := 0 // tasks not packed yet
	for _, cs := range pe.colls {
		left += len(cs.lins)
	}
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			el := cs.local[lin]
			rec, grown, err := pe.appendElement(scratch[:0], el, cps[el.id])
			scratch = grown
			left--
			if err != nil {
				return enc, err
			}
			if n := migrate.TaskRecordSize(rec); cap(enc)-len(enc) < n {
				// Room for the tasks left if they are of this one's size,
				// and an eighth more; at least double: the first
				// checkpoint copies the encoding at most a few times,
				// the next ones (which start from the last one's size)
				// not at all.
				enc = slices.Grow(enc, max(n*(left+1)+n*(left+1)/8, cap(enc)))
			}
			enc = migrate.AppendTaskRecord(enc, rec)
		}
	}
	pe.ckpt.scratch = scratch
	return enc, nil
}

// ckptMemory is the memory a PE's checkpoints reuse, so that taking one
// costs copies into memory the PE already uses and no page faults or
// clearing of memory new to it (docs/benchmarks.md, "Checkpoint cost";
// before, the state went through three allocations of its size on the
// sender and three on the buddy at every checkpoint):
//
//   - scratch: one task packed (AppendTask), before it is copied into
//     the encoding;
//   - the encodings (encodeCheckpoint) of the staged epoch and of the
//     committed one, which the store's own records point into, and a
//     spare one: the buffer of the epoch a commit made obsolete, which
//     the next checkpoint encodes into. The encoding is also what goes
//     to the buddy, without a copy (partsNet); the buddy's copy points
//     into the payload it received (DecodePECheckpoint).
//
// On the buddy, the payloads its wards' copies came in (buddyStaged,
// buddyCommitted: the store's buddy records point into them) go back to
// the Net (recycler) once a commit has replaced them: the transport
// joins the next copy into that memory. incoming is the payload of the
// checkpoint batch being handled.
//
// Task code must not keep the bytes UnmarshalBinary gets (as
// encoding.BinaryUnmarshaler requires): a restore unpacks from the
// committed encoding, which a later checkpoint writes over.
type ckptMemory struct {
	scratch                  []byte
	staged, committed, spare []byte

	incoming                    []byte
	buddyStaged, buddyCommitted [][]byte
}

// recycler is a Net that takes back the memory of payloads it delivered
// (transport.TCP).
type recycler interface{ Recycle(payload []byte) }

// encodingBuffer returns an empty buffer for the next checkpoint's
// encoding: the spare one if the Net holds no body sent from it any more
// (a buddy copy is sent from its own memory), else a new one.
func (pe *PE) encodingBuffer() []byte {
	b := pe.ckpt.spare
	pe.ckpt.spare = nil
	if net := pe.partsNet; b == nil || net != nil && !net.Released() {
		// A new one, of the last checkpoint's size and an eighth more
		// for the state to grow.
		last := max(len(pe.ckpt.committed), len(pe.ckpt.staged))
		return make([]byte, 0, last+last/8)
	}
	return b[:0]
}

func (pe *PE) takeCheckpoint(epoch uint64) {
	if pe.cfg.Trace != nil {
		defer pe.traceRuntime("takeCheckpoint", time.Now())
	}
	enc, err := pe.encodeCheckpoint(pe.encodingBuffer(), epoch)
	if err != nil {
		pe.cfg.Control.Fail(err)
		return
	}
	// The staged records point into the encoding.
	staged, err := migrate.DecodePECheckpoint(enc)
	if err != nil {
		panic(fmt.Sprintf("scheduler: checkpoint %d does not decode: %v", epoch, err))
	}
	if err := pe.store.Stage(epoch, staged.Tasks); err != nil {
		pe.cfg.Control.Fail(err)
		return
	}
	// A buffer staged before for this epoch is left to the collector: it
	// may still be on its way to the buddy.
	pe.ckpt.staged = enc
	if pe.recreatePending {
		// The first checkpoint after the tasks were created again is
		// their checkpoint as created.
		pe.createdEpoch, pe.recreatePending = epoch, false
	}
	if buddy := migrate.Buddy(pe.cfg.Rank, pe.live); buddy >= 0 {
		pe.sendEncoded(buddy, wire.CheckpointKind_CHECKPOINT_BUDDY, enc)
	}
	pe.cfg.Control.CheckpointStaged(epoch, len(staged.Tasks), int(staged.Bytes()))
}

// sendEncoded sends a checkpoint encoded by migrate.AppendPECheckpoint to
// PE to as a batch of kind kind: the batch's header, then enc itself,
// which a partsNet sends from its own memory (enc must then not change
// until the Net released it).
func (pe *PE) sendEncoded(to int, kind wire.CheckpointKind, enc []byte) {
	head := batchHeader(pe.headBuf[:0], pe.cfg.JobID, pe.generation)
	head = protofield.AppendVarint(head, batchCheckpointKind, uint64(kind))
	head = protowire.AppendTag(head, batchCheckpoint, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(enc)))
	pe.headBuf = head
	if net := pe.partsNet; net != nil {
		net.SendParts(to, head, enc)
	} else {
		// The Net may keep what it is given.
		pe.cfg.Net.Send(to, append(slices.Clip(head), enc...))
	}
	pe.cfg.Net.Flush()
}

// batchCheckpoint is the field number of wire.Batch's checkpoint (the
// others a checkpoint batch has: batchJob, batchGeneration,
// batchCheckpointKind).
const batchCheckpoint = 5

// receiveCheckpointBatch handles payload if it is a batch that carries a
// checkpoint (job, generation, checkpoint kind and checkpoint, as
// sendEncoded and proto.Marshal write it), and reports whether it was:
// the checkpoint's records then point into payload (the PE's, see
// Receive) instead of being copied out of it twice (proto.Unmarshal of
// the batch, then of the checkpoint). Any other batch is left to the
// general decoding.
func (pe *PE) receiveCheckpointBatch(from int, payload []byte) bool {
	var job, generation, kind uint64
	var cp []byte
	found := false
	for b := payload; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && (num == batchJob || num == batchGeneration || num == batchCheckpointKind):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			switch num {
			case batchJob:
				job = v
			case batchGeneration:
				generation = v
			default:
				kind = v
			}
			b = b[n:]
		case typ == protowire.BytesType && num == batchCheckpoint:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			cp, found, b = v, true, b[n:]
		default:
			return false // envelopes, or something the general path judges
		}
	}
	if !found || kind == uint64(wire.CheckpointKind_CHECKPOINT_NONE) || kind > math.MaxInt32 {
		return false
	}
	if !pe.acceptBatch(from, payload, job, generation) {
		return true
	}
	if pe.cfg.Trace != nil {
		defer pe.traceRuntime("receiveCheckpoint", time.Now())
	}
	pe.ckpt.incoming = payload
	pe.receiveCheckpoint(from, wire.CheckpointKind(kind), cp[:len(cp):len(cp)], generation)
	pe.ckpt.incoming = nil
	pe.schedule()
	return true
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
	// The records point into b, which stays as it is: a payload is the
	// PE's (Receive), and a PE's own records are copies of its store's.
	cp, err := migrate.DecodePECheckpoint(b)
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
		if pe.ckpt.incoming != nil {
			pe.ckpt.buddyStaged = append(pe.ckpt.buddyStaged, pe.ckpt.incoming)
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
	if pe.cfg.Trace != nil {
		defer pe.traceRuntime("commitCheckpoint", time.Now())
	}
	if err := pe.store.Commit(ev.Epoch); err != nil {
		pe.cfg.Control.Fail(err)
		return
	}
	// The previous epoch's encoding is no longer the store's: the next
	// checkpoint writes into it.
	if pe.ckpt.staged != nil {
		pe.ckpt.spare, pe.ckpt.committed, pe.ckpt.staged = pe.ckpt.committed, pe.ckpt.staged, nil
	}
	// Likewise the buddy copies of the previous epoch: no record of the
	// store points into their payloads any more.
	if r := pe.recycler; r != nil {
		for _, p := range pe.ckpt.buddyCommitted {
			r.Recycle(p)
		}
	}
	clear(pe.ckpt.buddyCommitted)
	pe.ckpt.buddyCommitted = append(pe.ckpt.buddyCommitted[:0], pe.ckpt.buddyStaged...)
	clear(pe.ckpt.buddyStaged)
	pe.ckpt.buddyStaged = pe.ckpt.buddyStaged[:0]
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
