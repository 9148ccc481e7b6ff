package logging

import "fmt"

// Snapshot returns the protocol part of each hosted task's checkpoint, as
// Checkpoint does, but discards nothing: a coordinated checkpoint is staged
// first and committed only once every PE has staged it, and if a PE fails
// in between, the checkpoint is abandoned and the failed PE's tasks replay
// from the previous one, with the logs and determinants made since. The
// caller calls Checkpoint (and ignores its result, which is the same) when
// the checkpoint commits. The same conditions hold: no application message
// in flight, no handler or region open, nothing buffered.
func (e *engine) Snapshot() []TaskCheckpoint {
	ids := e.hostedIDs()
	out := make([]TaskCheckpoint, 0, len(ids))
	for _, id := range ids {
		t := e.tasks[id]
		if t.counters.InReception() || t.counters.Region.Open {
			panic(fmt.Sprintf("logging: pe%d: snapshot of task %d inside a reception or region", e.pe, id))
		}
		if len(t.buffer) > 0 {
			panic(fmt.Sprintf("logging: pe%d: snapshot with %d messages buffered for task %d", e.pe, len(t.buffer), id))
		}
		out = append(out, TaskCheckpoint{Counters: t.counters})
	}
	return out
}

// Snapshotter is implemented by every protocol of this package.
type Snapshotter interface {
	Snapshot() []TaskCheckpoint
}
