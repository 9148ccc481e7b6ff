package scheduler

import "github.com/gochare/gochare/job"

// Progress watching. Every task's last offered step (element.progress)
// and the PE's furthest (PE.progress) are kept as tasks offer sync points.
// After a recovery the coordinator asks every PE to tell it (Reached)
// once its tasks have offered again the step the job had reached at the
// failure (WatchProgress): the launcher reports that time as the time the
// job took to regain its progress.

// noteStep records the step a task offers. It costs the forward path a few
// comparisons; only while a WatchProgress is pending does a step at or past
// the watched one make the PE look at its other tasks.
func (pe *PE) noteStep(el *element, step uint64) {
	before := el.progress
	el.progress = job.Progress{Step: step, Offered: true}
	pe.progress = pe.progress.Max(el.progress)
	if w := pe.watch; w != nil && step >= w.Step && (!before.Offered || before.Step < w.Step) && el.coll.def.AtSync {
		if pe.watchBelow--; pe.watchBelow <= 0 {
			pe.checkWatch()
		}
	}
}

// watchProgress takes the coordinator's WatchProgress: it is answered now
// if the local tasks are already there, else from noteStep.
func (pe *PE) watchProgress(ev job.WatchProgress) {
	if ev.Generation != pe.generation {
		return // a later recovery began; its own watch follows
	}
	pe.watch = &ev
	pe.checkWatch()
}

// checkWatch reports Reached once every local task of a collection with
// sync points has offered the watched step. Otherwise it counts the tasks
// that have not (pe.watchBelow), and noteStep counts down as they offer
// it and calls it again at zero: a recovery costs a pass over the tasks
// when the watch comes and when the count runs out. A task placed here
// after a pass is not in the count; the pass at zero finds it and counts
// again, so the report never comes early.
//
// Tasks move by load balancing only at sync points, and the first sync
// point after a failure comes at or after the watched step, when every PE
// has answered: a task that arrives after its new PE answered cannot hold
// the report back.
func (pe *PE) checkWatch() {
	below := 0
	for _, cs := range pe.colls {
		if !cs.def.AtSync {
			continue
		}
		for _, lin := range cs.sorted() {
			if p := cs.local[lin].progress; !p.Offered || p.Step < pe.watch.Step {
				below++
			}
		}
	}
	if pe.watchBelow = below; below > 0 {
		return
	}
	pe.cfg.Control.Reached(pe.watch.Generation, pe.watch.Step)
	pe.watch = nil
}
