package logging

import "slices"

// TaskWait is what a hosted task waits for, as far as the protocol knows:
// the runtime's stall diagnosis reports it.
type TaskWait struct {
	// RSN is the number of receptions the task made; ReplayEnd the last
	// position it is known to have reached before a failure (RSN <
	// ReplayEnd: it is replaying).
	RSN, ReplayEnd uint64
	// AwaitingRecovery lists the survivors whose recovery envelope the
	// restored task still waits for; it delivers nothing until they come.
	AwaitingRecovery []PEID
	// NextRecorded, when Recorded, is the message a determinant names for
	// the task's next reception: replay takes it and nothing else there.
	NextRecorded MessageID
	Recorded     bool
	// Region is the task's open commutative region, if any.
	Region RegionWait
	// Buffered are the messages that arrived and wait, in arrival order.
	Buffered []Message
}

// RegionWait describes an open commutative region.
type RegionWait struct {
	Open           bool
	Handler        uint32
	Key            uint64
	Consumed, Size int
}

// Waits reports whether the task is waiting for anything: a recovery
// envelope, a recorded message, the rest of a region, or a message that
// would let the buffered ones be handled.
func (w TaskWait) Waits() bool {
	return len(w.AwaitingRecovery) > 0 || w.Recorded || w.Region.Open || len(w.Buffered) > 0
}

// Waiting returns what a hosted task waits for (the zero TaskWait and
// false if the task is not hosted here).
func (e *engine) Waiting(task TaskID) (TaskWait, bool) {
	t, ok := e.tasks[task]
	if !ok {
		return TaskWait{}, false
	}
	w := TaskWait{
		RSN: t.counters.RSN, ReplayEnd: t.replayEnd,
		AwaitingRecovery: t.awaited(),
		Buffered:         slices.Clone(t.buffer),
	}
	if r := t.counters.Region; r.Open {
		w.Region = RegionWait{Open: true, Handler: r.Key.Handler, Key: r.Key.Key, Consumed: r.Consumed, Size: r.Size}
	}
	if t.counters.RSN < t.replayEnd {
		if d, ok := e.determinants.get(determinantKey{task, t.counters.RSN + 1}); ok {
			w.NextRecorded, w.Recorded = e.determinants.message(d), true
		}
	}
	return w, true
}

// Diagnoser is implemented by every protocol of this package.
type Diagnoser interface {
	Waiting(task TaskID) (TaskWait, bool)
}
