package scheduler

import (
	"fmt"
	"slices"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/actor/regioncheck"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// The annotation check (Config.CheckAnnotations, --check-annotations):
// the PE keeps, for each of its tasks inside a commutative region, the
// task's packed state from before the region and a copy of each message
// of the region as delivered; when the region completes (before its
// completion step), regioncheck.Check re-runs it on copies in other
// orders. The first region whose orders differ stops the PE, and the job,
// with regioncheck's error. Nothing of this runs when the check is off:
// invoke tests one nil pointer.

// annotationChecker is the check's state on one PE.
type annotationChecker struct {
	// orders is the number of other orders each region is re-run in.
	orders int
	// open holds the regions being handled, by task.
	open map[commutative.TaskID]*checkedRegion
}

// checkedRegion is a region being recorded: el is the element whose
// region it is (a task restored or rolled back is a new element, which
// starts its regions afresh).
type checkedRegion struct {
	el     *element
	region regioncheck.Region
}

func newAnnotationChecker(orders int) *annotationChecker {
	return &annotationChecker{orders: orders, open: map[commutative.TaskID]*checkedRegion{}}
}

// checkBeforeHandler records a message of a commutative region about to
// be handled, and the task's state if it opens the region.
func (pe *PE) checkBeforeHandler(el *element, h *actor.HandlerDef, d logging.Delivery) {
	if h.Annotation.Order != actor.Commutative || d.Message.Annotation.RegionSize < 2 || !pe.isAppCollection(el.coll) {
		return
	}
	c := pe.checker
	rec := c.open[el.id]
	if rec == nil || rec.el != el || rec.region.Handler != h || rec.region.Key != d.Message.Key {
		before, err := el.coll.def.PackTask(el.task)
		if err != nil {
			pe.halt(fmt.Errorf("%w: %s%v, handler %s, region key %d: pack the state before the region: %v",
				regioncheck.ErrRerun, el.coll.def.Name, el.index, h.Name, d.Message.Key, err))
			return
		}
		// A copy: a task's MarshalBinary may return memory the task
		// goes on writing.
		rec = &checkedRegion{el: el, region: regioncheck.Region{
			Collection: el.coll.def, Handler: h, Index: el.index, Key: d.Message.Key,
			Before: slices.Clone(before), Expected: el.expected,
		}}
		c.open[el.id] = rec
	}
	rec.region.Messages = append(rec.region.Messages, regioncheck.Message{
		Payload: slices.Clone(d.Message.Payload),
		From:    pe.regionSender(d.Message.ID.Sender),
	})
}

// checkAfterHandler checks the task's region once its last message has
// been handled (complete), before the completion step.
func (pe *PE) checkAfterHandler(el *element, h *actor.HandlerDef, complete bool) {
	if !complete || h.Annotation.Order != actor.Commutative {
		return
	}
	c := pe.checker
	rec := c.open[el.id]
	if rec == nil {
		return // a region of one message
	}
	delete(c.open, el.id)
	if rec.el != el || rec.region.Handler != h {
		return
	}
	r := rec.region
	after, err := el.coll.def.PackTask(el.task)
	if err != nil {
		pe.halt(fmt.Errorf("%w: %s%v, handler %s, region key %d: pack the state after the region: %v",
			regioncheck.ErrRerun, el.coll.def.Name, el.index, h.Name, r.Key, err))
		return
	}
	r.After = after
	seed := mixSeed(pe.cfg.JobID, uint64(el.id), uint64(h.ID), r.Key)
	k := pe.cfg.CheckpointEvery
	env := regioncheck.Env{Job: pe.job, PE: pe.cfg.Rank, NumPEs: pe.cfg.Size,
		AtSync: func(step uint64) bool { return k != 0 && (step+1)%k == 0 }}
	if err := regioncheck.Check(r, env, regioncheck.Orders(len(r.Messages), c.orders, seed)); err != nil {
		pe.halt(fmt.Errorf("%w (on PE %d, --check-annotations)", err, pe.cfg.Rank))
		return
	}
	pe.stats.RegionsChecked++
}

// isAppCollection reports whether cs is one of the application's
// collections (the runtime's reducer collection is not checked: its
// handlers reach into the PE).
func (pe *PE) isAppCollection(cs *collectionState) bool {
	colls := pe.job.Collections()
	return int(cs.def.ID) < len(colls) && colls[cs.def.ID] == cs.def
}

// regionSender names a sending task ("the runtime" for a PE's own).
func (pe *PE) regionSender(id commutative.TaskID) string {
	if coll, lin := splitTaskID(id); coll < len(pe.colls) {
		cs := pe.colls[coll]
		return fmt.Sprintf("%s%v", cs.def.Name, cs.def.Shape.At(int(lin)))
	}
	return "the runtime"
}

// mixSeed derives the seed of one region's orders from the job's id, the
// task, the handler and the key (splitmix64 steps).
func mixSeed(parts ...uint64) uint64 {
	var s uint64
	for _, p := range parts {
		s += p + 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		s = z ^ (z >> 31)
	}
	return s
}
