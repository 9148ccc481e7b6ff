package scheduler

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Packing a task into its checkpoint record (migrate.TaskRecord: the
// task's own state, the scheduler's state of it, the protocol's counters)
// and back. Checkpoints, migration and restores all go through these.

// packElement makes a task's checkpoint record: its own state, the
// scheduler's state of it, and the protocol's counters.
func (pe *PE) packElement(el *element, cp logging.TaskCheckpoint) (migrate.TaskRecord, error) {
	rec, err := packState(el)
	if err != nil {
		return migrate.TaskRecord{}, err
	}
	if rec.Protocol, err = proto.Marshal(taskCheckpointToWire(cp)); err != nil {
		return migrate.TaskRecord{}, err
	}
	if pe.cfg.Observe != nil {
		pe.observe(Observation{Kind: ObservePack, Task: uint64(el.id), Record: rec})
	}
	return rec, nil
}

// appendElement packs a task's checkpoint record as packElement does, but
// into buf (the checkpoint's reused memory): the record's three parts
// are consecutive slices of the returned buf.
func (pe *PE) appendElement(buf []byte, el *element, cp logging.TaskCheckpoint) (migrate.TaskRecord, []byte, error) {
	cs := el.coll
	start := len(buf)
	buf, err := cs.def.AppendTask(buf, el.task)
	if err != nil {
		return migrate.TaskRecord{}, buf, fmt.Errorf("scheduler: pack %s%v: %w", cs.def.Name, el.index, err)
	}
	taskEnd := len(buf)
	buf, err = proto.MarshalOptions{}.MarshalAppend(buf, &wire.TaskRuntime{Expected: el.expected, NextReduction: el.nextRed, AtSync: el.atSync, Printed: el.printed})
	if err != nil {
		return migrate.TaskRecord{}, buf, err
	}
	runtimeEnd := len(buf)
	if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf, taskCheckpointToWire(cp)); err != nil {
		return migrate.TaskRecord{}, buf, err
	}
	rec := migrate.TaskRecord{Collection: uint32(cs.def.ID), Lin: int64(el.lin),
		Task: buf[start:taskEnd:taskEnd], Runtime: buf[taskEnd:runtimeEnd:runtimeEnd], Protocol: buf[runtimeEnd:len(buf):len(buf)]}
	if pe.cfg.Observe != nil {
		pe.observe(Observation{Kind: ObservePack, Task: uint64(el.id), Record: rec})
	}
	return rec, buf, nil
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
	if err := cs.def.UnpackTask(task, rec.Task); err != nil {
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
	el.expected, el.nextRed, el.atSync, el.printed = rt.Expected, rt.NextReduction, rt.AtSync, rt.Printed
	pe.syncMaybe = pe.syncMaybe || el.atSync
	cs.homeOf[lin] = int32(pe.cfg.Rank)
	if pe.cfg.Observe != nil {
		pe.observe(Observation{Kind: ObserveUnpack, Task: uint64(el.id), Record: rec})
	}
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
