package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Load balancing and migration. At a sync point where the coordinator
// balances, every PE reports the time its sync tasks spent in handlers
// since the last one (CollectLoads); the coordinator chooses moves
// (migrate.Greedy or Refine) and every PE performs them (Migrate): the
// source packs the task (its state, runtime and protocol counters), the
// destination unpacks it, and every PE points the task's location to its
// new PE. No message is in flight then (the job is quiescent at a sync
// point), and the checkpoint that follows records the new placement.
// Messages that still reach a task's old PE are forwarded (forward).

func (pe *PE) loads() []migrate.TaskLoad {
	var out []migrate.TaskLoad
	for _, cs := range pe.colls {
		if !cs.def.AtSync {
			continue
		}
		for _, lin := range cs.sorted() {
			el := cs.local[lin]
			out = append(out, migrate.TaskLoad{Task: migrate.TaskRef{Collection: int(cs.def.ID), Lin: lin}, PE: pe.cfg.Rank, Load: el.load.Seconds()})
			el.load = 0
		}
	}
	return out
}

// timeHandler measures a handler for load balancing and tracing.
func (pe *PE) timeHandler(el *element, name string, run func()) {
	if !pe.cfg.MeasureLoad && pe.cfg.Trace == nil {
		run()
		return
	}
	start := time.Now()
	run()
	d := time.Since(start)
	el.load += d
	if pe.cfg.Trace != nil {
		pe.cfg.Trace(el.coll.def.Name, name, start, d)
	}
}

func (pe *PE) migrateTasks(moves []migrate.Move) {
	if pe.moves != nil {
		// The coordinator balances a sync point once (job.Coordinator.OnIdle):
		// undoMoves settles the moves of one migration, and those of an
		// earlier one would be lost.
		pe.cfg.Control.Fail(fmt.Errorf("scheduler: PE %d: a second migration before the checkpoint that records the last one committed", pe.cfg.Rank))
		return
	}
	pe.migrating = true
	pe.moves, pe.exported = moves, map[migrate.TaskRef]migrate.TaskRecord{}
	// Records of this migration that came before this event are in
	// importedFrom already (the last commit emptied it).
	if pe.importedFrom == nil {
		pe.importedFrom = map[migrate.TaskRef]int{}
	}
	out := map[int][]migrate.TaskRecord{}
	for _, mv := range moves {
		cs := pe.colls[mv.Task.Collection]
		cs.homeOf[mv.Task.Lin] = int32(mv.To)
		id := commutative.TaskID(TaskID(cs.def.ID, mv.Task.Lin))
		switch {
		case mv.From == pe.cfg.Rank:
			rec, err := pe.exportTask(cs, mv.Task.Lin)
			if err != nil {
				pe.cfg.Control.Fail(err)
				return
			}
			out[mv.To] = append(out[mv.To], rec)
			pe.exported[mv.Task] = rec
		case mv.To == pe.cfg.Rank && cs.local[mv.Task.Lin] == nil:
			pe.expectMigrate[id] = true
		}
	}
	for _, to := range sortedKeys(out) {
		pe.sendCheckpoint(to, wire.CheckpointKind_CHECKPOINT_MIGRATE, pe.store.Epoch(), pe.cfg.Rank, out[to])
	}
	pe.receiveEarly()
	pe.reportMigrated()
}

// exportTask packs a task and removes it from this PE.
func (pe *PE) exportTask(cs *collectionState, lin int) (migrate.TaskRecord, error) {
	el := cs.local[lin]
	if el == nil {
		return migrate.TaskRecord{}, fmt.Errorf("scheduler: move of %s[%d], which is not on PE %d", cs.def.Name, lin, pe.cfg.Rank)
	}
	rec, err := pe.packElement(el, pe.proto.ExportTask(el.id))
	if err != nil {
		return migrate.TaskRecord{}, err
	}
	if pe.rec != nil {
		pe.recordLeave(el)
	}
	cs.local[lin] = nil
	cs.remove(lin)
	pe.stats.MigratedOut++
	return rec, nil
}

// importTask unpacks a task moved here.
func (pe *PE) importTask(rec migrate.TaskRecord) error {
	el, cp, err := pe.unpackRecord(rec)
	if err != nil {
		return err
	}
	if pe.rec != nil {
		pe.recordState(rec, pe.store.Epoch(), true)
	}
	pe.proto.ImportTask(cp)
	delete(pe.expectMigrate, el.id)
	pe.stats.MigratedIn++
	return nil
}

func (pe *PE) reportMigrated() {
	if pe.migrating && len(pe.expectMigrate) == 0 {
		pe.migrating = false
		pe.cfg.Control.Migrated()
	}
}

// forward passes on a message that reached this PE after its task moved.
// Like every envelope it goes through the protocol: the records it
// carries are stored here and acknowledged to its sender (the envelopes
// after it in its batch, delivered here, may rely on them), and it leaves
// in this PE's next Ready as an envelope of this PE, with the records its
// new receiver needs.
func (pe *PE) forward(env logging.Envelope, to int) {
	pe.stats.Forwarded++
	pe.proto.Forward(env, logging.PEID(to))
}

// newProtocol is this PE's protocol instance, configured as the
// simulator of package logging/logtest runs it: f = Config.Failures (0:
// logging.DefaultFailures), and Locate from the tasks' places this PE
// knows. The PEs failed so far, and those of failing (a rollback's), count as failed for it from the start:
// a later recovery must not wait for their recovery envelopes.
func (pe *PE) newProtocol(failing ...int) logging.Protocol {
	var failed []logging.PEID
	for p, ok := range pe.live {
		if !ok || slices.Contains(failing, p) {
			failed = append(failed, logging.PEID(p))
		}
	}
	// LogOffHeap: the PE copies every envelope it sends to another PE
	// into a batch, hands its own back to the same Protocol, and drops the
	// Protocol's envelopes with it in a rollback (pe.out is reset).
	// ReuseRecords: transmit encodes every envelope for another PE before
	// it calls Advance, and an envelope for this PE carries no records.
	// Ordered: each pair of PEs is one ordered, reliable channel of the
	// transport (scheduler/transport), batches are sent in the order of
	// the Readies, and every envelope from a live PE is given to Arrive
	// or Forward (one early for a recovery is kept until then).
	return logging.New(pe.cfg.Protocol, logging.Config{PE: logging.PEID(pe.cfg.Rank), PEs: pe.cfg.Size, Failures: pe.cfg.Failures, Locate: pe.locate, Failed: failed, LogOffHeap: true, ReuseRecords: true, Ordered: true, Values: logValues{pe},
		LogQuota: pe.cfg.LogQuota, Loggers: pe.cfg.Loggers, DumpEpoch: pe.dumpEpochBase(), EventLogger: pe.cfg.EventLogger,
		OrderFree: pe.orderFree, LogShared: pe.logShared()})
}

// logShared is the memory the sender log shares with the loggers on
// this host, nil if none (LogSharer).
func (pe *PE) logShared() logging.SharedLogMemory {
	if s, ok := pe.cfg.Dumps.(LogSharer); ok && pe.cfg.LogQuota > 0 {
		return s.SharedLogMemory()
	}
	return nil
}

// orderFree reports whether task id can never receive an order-dependent
// message: every message to a task is for a handler of its collection
// (a reducer's contributions are commutative), so none can when no
// handler of the collection is order-dependent (logging.Config.OrderFree:
// PartialDet then makes no progress record for its sends). The
// runtime's own task on each PE (systemCollection) receives nothing
// (checkMessage refuses messages for it), so it is too; a task of no
// collection is not.
func (pe *PE) orderFree(id commutative.TaskID) bool {
	coll, _ := splitTaskID(id)
	return coll == systemCollection || (coll < len(pe.colls) && pe.colls[coll].orderFree)
}

// locate is the PE a task lives on, as far as this PE knows (-1 for a
// task of no collection of the job).
func (pe *PE) locate(id commutative.TaskID) logging.PEID {
	coll, lin := splitTaskID(id)
	if coll == systemCollection {
		return logging.PEID(lin)
	}
	if coll >= len(pe.colls) || lin < 0 || lin >= int64(pe.colls[coll].n) {
		return -1
	}
	return logging.PEID(pe.colls[coll].homeOf[lin])
}
