package logging

import "fmt"

// ExportTask removes a task from this PE to move it to another one, and
// returns its identity counters and received set for ImportTask there. The
// task must be between receptions, with no open region and no message
// waiting (the scheduler moves tasks at sync points, where none can be).
// Its sender log stays here: the checkpoint that follows a move makes it
// useless.
func (e *engine) ExportTask(task TaskID) TaskCheckpoint {
	t := e.task(task)
	if t.counters.InReception() || t.counters.Region.Open || len(t.buffer) > 0 || len(t.awaiting) > 0 {
		panic(fmt.Sprintf("logging: pe%d: task %d moved inside a reception, a region, a recovery, or with %d messages waiting", e.pe, task, len(t.buffer)))
	}
	cp := TaskCheckpoint{Counters: t.counters, Requires: append([]Dependency(nil), t.requires...), Received: t.received.list()}
	delete(e.tasks, task)
	if stored := e.determinants.of(task); stored != nil {
		stored.host = nil
	}
	return cp
}

// ImportTask places a task moved from another PE (ExportTask) on this one.
// Unlike RestoreTask it awaits nothing: the task continues where it was.
func (e *engine) ImportTask(cp TaskCheckpoint) {
	t := &hostedTask{counters: cp.Counters}
	for _, id := range cp.Received {
		t.received.add(id)
	}
	for _, d := range cp.Requires {
		t.addRequirement(d)
	}
	t.replayEnd = cp.Counters.RSN
	if e.movedIn == nil {
		e.movedIn = map[TaskID]struct{}{}
	}
	e.movedIn[cp.Counters.Task] = struct{}{}
	e.place(cp.Counters.Task, t)
}

// OpenRegion reports whether a hosted task is inside a commutative region,
// and of which handler (a coordinated checkpoint cannot be taken then).
func (e *engine) OpenRegion(task TaskID) (handler uint32, open bool) {
	t, ok := e.tasks[task]
	if !ok || !t.counters.Region.Open {
		return 0, false
	}
	return t.counters.Region.Key.Handler, true
}
