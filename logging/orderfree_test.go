package logging

import (
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// A task that Config.OrderFree names makes no progress record under
// PartialDet: its envelopes carry none, while another task's sends do;
// delivering an order-dependent message to it panics.
func TestOrderFreeTaskMakesNoProgressRecord(t *testing.T) {
	free := func(task TaskID) bool { return task == 0 }
	pes := []*engine{
		newEngine(KindPartialDet, Config{PE: 0, PEs: 2, OrderFree: free}),
		newEngine(KindPartialDet, Config{PE: 1, PEs: 2, OrderFree: free}),
	}
	pes[0].HostTask(0)
	pes[0].HostTask(2)
	pes[1].HostTask(1)
	ordered := commutative.OrderedAnnotation()
	pes[0].Send(0, 1, Message{To: 1, Annotation: ordered})
	ready := pes[0].Ready()
	require.Len(t, ready.Envelopes, 1)
	require.Empty(t, ready.Envelopes[0].Progress, "task 0 is order-free")
	pes[0].Advance()
	pes[0].Send(2, 1, Message{To: 1, Annotation: ordered})
	ready = pes[0].Ready()
	require.Len(t, ready.Envelopes, 1)
	require.Equal(t, []Progress{{Task: 2, RSN: 0}}, ready.Envelopes[0].Progress)
	pes[0].Advance()
	require.Zero(t, pes[0].Stats().ProgressRecords-1, "one record carried in all")

	// An order-dependent message for task 0 breaks the caller's promise.
	pes[1].Send(1, 0, Message{To: 0, Annotation: commutative.OrderDependentAnnotation()})
	arriveAll(pes, 1)
	require.PanicsWithValue(t, "logging: pe0: order-dependent message t1#1 for task 0, which Config.OrderFree says takes none", func() {
		pes[0].NextDelivery(0, func(Message) bool { return true })
	})
}
