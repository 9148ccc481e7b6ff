package scheduler

import (
	"fmt"

	"github.com/gochare/gochare/actor"
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
