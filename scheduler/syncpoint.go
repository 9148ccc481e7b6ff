package scheduler

import (
	"fmt"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/record"
)

// Sync points. A task of a collection declared UsesAtSync offers one at
// the end of each step (ctx.AtSync); the runtime takes it when the step
// ends a checkpoint period, and the task then waits. Once quiescence
// detection finds every sync task waiting, the coordinator balances the
// load and checkpoints, and Resume calls ResumeFromSync on each.

func (pe *PE) syncTasks() int {
	n := 0
	for _, cs := range pe.colls {
		if cs.def.AtSync {
			n += len(cs.lins)
		}
	}
	return n
}

func (pe *PE) atSync(el *element, step uint64) bool {
	if !el.coll.def.AtSync {
		panic(fmt.Sprintf("scheduler: %s%v calls AtSync but its collection does not declare UsesAtSync", el.coll.def.Name, el.index))
	}
	if pe.replay != nil {
		return pe.replay.atSync(pe, el, step)
	}
	taken := pe.takeSyncPoint(el, step)
	if pe.rec != nil {
		pe.recordAtSync(el, step, taken)
	}
	return taken
}

// takeSyncPoint decides whether a task's sync point at step is taken.
func (pe *PE) takeSyncPoint(el *element, step uint64) bool {
	pe.noteStep(el, step)
	if pe.cfg.OnStep != nil {
		pe.cfg.OnStep(step)
	}
	k := pe.cfg.CheckpointEvery
	if k == 0 || (step+1)%k != 0 || el.atSync {
		return false
	}
	el.atSync = true
	pe.syncMaybe = true
	if step < pe.resumedBelow {
		// A task re-executing (restored, or rolled back) reaches a sync
		// point the job already passed: the coordinator resumed it then
		// without a checkpoint (job.Config.LogLimit, job.Resume.Passed),
		// so it goes on again, as the first time, once the handler that
		// reached it returns (runAutoResumes).
		pe.autoResume = append(pe.autoResume, el)
	}
	return true
}

// runAutoResumes resumes the tasks that reached a sync point already
// passed (atSync), once the code that reached it has returned. Every
// caller of task code runs it after (runSlice after each handler, resume
// and noticeFailure after ResumeFromSync), so no such task is left
// waiting when the PE answers a probe.
func (pe *PE) runAutoResumes() {
	for len(pe.autoResume) > 0 {
		el := pe.autoResume[0]
		pe.autoResume = pe.autoResume[1:]
		if el.atSync && el.coll.local[el.lin] == el {
			if _, stopped := pe.stoppedAt[el.progress.Step]; stopped {
				pe.stats.PassedAgain++
			}
			pe.resumeTask(el)
		}
	}
}

// noteStop notes, as a Resume comes, the step of the sync point the local
// tasks wait at (stoppedAt). A task that passes by itself (Resume.Passed)
// a sync point of another step passes one the coordinator skipped ahead
// (job.Coordinator.skipNext), not one the job stopped at and the task
// re-executes: it is not counted in PassedAgain.
func (pe *PE) noteStop() {
	if n, high, low, known := pe.waitingAtSync(); n > 0 && known {
		if pe.stoppedAt == nil {
			pe.stoppedAt = map[uint64]struct{}{}
		}
		pe.stoppedAt[high], pe.stoppedAt[low] = struct{}{}, struct{}{}
	}
}

// waitingAtSync counts the local tasks waiting at a sync point, and
// returns the highest and the lowest step they offered there, of those
// that offered it here (known: one did; a task moved here waits at a
// step this PE was not told).
func (pe *PE) waitingAtSync() (n int, high, low uint64, known bool) {
	if !pe.syncMaybe {
		return 0, 0, 0, false
	}
	defer func() { pe.syncMaybe = n > 0 }()
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			if el := cs.local[lin]; el.atSync {
				n++
				if el.progress.Offered {
					if !known {
						high, low, known = el.progress.Step, el.progress.Step, true
					}
					high, low = max(high, el.progress.Step), min(low, el.progress.Step)
				}
			}
		}
	}
	return n, high, low, known
}

// resume calls ResumeFromSync on every task waiting at a sync point.
// passed is the coordinator's Resume.Passed: from now on a task that
// reaches a sync point of a lower step goes on by itself.
func (pe *PE) resume(passed uint64) {
	if pe.cfg.Trace != nil {
		defer pe.traceRuntime("resume", time.Now())
	}
	pe.resumedBelow = passed
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			if el := cs.local[lin]; el.atSync {
				pe.resumeTask(el)
			}
		}
	}
	pe.runAutoResumes()
	pe.transmit()
	pe.schedule()
}

func (pe *PE) resumeTask(el *element) {
	el.atSync = false
	ctx := &pe.ctx
	ctx.el = el
	if pe.rec != nil {
		pe.recordRun(el, record.Kind_RESUME, logging.Message{})
	}
	if pe.call(el, nil, "", func() { el.task.(actor.Resumer).ResumeFromSync(ctx) }) {
		pe.markRunnable(el)
	}
}

// traceRuntime records a phase of the runtime's own work (a checkpoint's
// packing, its commit, a resume) in the PE's trace, as a span from start
// to now under the collection name "runtime".
func (pe *PE) traceRuntime(name string, start time.Time) {
	if pe.cfg.Trace != nil {
		pe.cfg.Trace("runtime", name, start, time.Since(start))
	}
}
