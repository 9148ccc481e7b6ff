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
