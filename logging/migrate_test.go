package logging

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/commutative"
)

// A task moved between PEs keeps its identity counters and received set:
// its next send has the identity it would have had, and a message it
// already received is still a duplicate.
func TestExportImportKeepsIdentity(t *testing.T) {
	for _, kind := range []Kind{KindNone, KindFullDet, KindPartialDet} {
		a, b := New(kind, Config{PE: 0, PEs: 2}), New(kind, Config{PE: 1, PEs: 2})
		const task, peer = TaskID(7), TaskID(9)
		a.HostTask(task)
		b.HostTask(peer)
		ordered := commutative.Annotation{Order: commutative.Ordered}
		// peer sends to task, which handles it and sends once.
		b.Send(peer, 0, Message{To: task, Annotation: ordered})
		first := b.Ready().Envelopes[0]
		b.Advance()
		a.Arrive(first)
		d, ok := a.NextDelivery(task, func(Message) bool { return true })
		require.True(t, ok)
		a.Send(task, 1, Message{To: peer, Annotation: ordered})
		a.EndHandler(task)
		a.Advance()
		moved := a.ExportTask(task)
		require.Panics(t, func() { a.NextDelivery(task, func(Message) bool { return true }) }, "the task left PE 0")
		c := New(kind, Config{PE: 1, PEs: 2})
		c.ImportTask(moved)
		// The same message again is recognised.
		c.Arrive(first)
		_, again := c.NextDelivery(task, func(Message) bool { return true })
		require.False(t, again, "%v: a message received before the move is a duplicate after it", kind)
		// The next send continues the sequence.
		id := c.Send(task, 1, Message{To: peer, Annotation: ordered})
		require.Equal(t, d.RSN, uint64(1))
		require.Equal(t, uint64(2), id.SRN, "%v: SRN continues after the move", kind)
	}
}

// FullDet and PartialDet log a message to another PE, not one between two
// tasks of the PE (its sender rolls back with its receiver), unless one of
// the two moved here since the last checkpoint: such a task rolls back
// with the tasks of the PE it left if that PE fails before the next
// commit. None logs nothing.
func TestLoggedSparesMessagesWithinAPE(t *testing.T) {
	for _, kind := range []Kind{KindNone, KindFullDet, KindPartialDet} {
		p := New(kind, Config{PE: 0, PEs: 2})
		const a, b, moved = TaskID(1), TaskID(2), TaskID(3)
		p.HostTask(a)
		p.HostTask(b)
		logs := kind != KindNone
		// send sends and says how many bytes the log took, checking that
		// Logged says whether it would.
		send := func(from TaskID, toPE PEID, to TaskID, logged bool) int {
			before := p.Stats().LoggedBytes
			require.Equal(t, logs && logged, p.Logged(from, toPE, to), "%v: %d to %d on PE %d", kind, from, to, toPE)
			p.Send(from, toPE, Message{To: to, Payload: []byte("payload")})
			p.Advance()
			return p.Stats().LoggedBytes - before
		}
		require.Zero(t, send(a, 0, b, false), "%v: within the PE", kind)
		require.Equal(t, logs, send(a, 1, 9, true) > 0, "%v: to another PE", kind)
		p.ImportTask(TaskCheckpoint{Counters: commutative.TaskState{Task: moved}})
		require.Equal(t, logs, send(a, 0, moved, true) > 0, "%v: to a task that moved here", kind)
		require.Equal(t, logs, send(moved, 0, b, true) > 0, "%v: from a task that moved here", kind)
		require.Zero(t, send(a, 0, b, false), "%v: between two others", kind)
		// Deliver what waits, so that the checkpoint finds no message
		// buffered.
		for _, task := range []TaskID{b, moved} {
			for {
				if _, ok := p.NextDelivery(task, func(Message) bool { return true }); !ok {
					break
				}
				p.EndHandler(task)
			}
		}
		p.Advance()
		p.Checkpoint()
		require.Zero(t, send(a, 0, moved, false), "%v: the checkpoint after the move settles it", kind)
	}
}
