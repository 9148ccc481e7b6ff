package logging

import (
	"fmt"
	"strings"
)

// Describe says, for diagnostics, where a hosted task stands: its reception
// count, replay bound, the survivors it awaits, the determinant recorded
// for its next position, and the messages waiting for it.
func (e *engine) Describe(task TaskID) string {
	t, ok := e.tasks[task]
	if !ok {
		return fmt.Sprintf("t%d: not hosted on pe%d", task, e.pe)
	}
	var b strings.Builder
	next := t.counters.RSN + 1
	fmt.Fprintf(&b, "t%d rsn %d replayEnd %d awaiting %v region %+v", task, t.counters.RSN, t.replayEnd, t.awaited(), t.counters.Region)
	if d, ok := e.determinants.get(determinantKey{task, next}); ok {
		fmt.Fprintf(&b, " next recorded %v", e.determinants.message(d))
	}
	for _, m := range t.buffer {
		fmt.Fprintf(&b, "\n    waiting %v key %d handler %x", m.ID, m.Key, m.Handler)
	}
	return b.String()
}
