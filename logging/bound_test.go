package logging

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/commutative"
)

func TestCheckFailures(t *testing.T) {
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		for failed := 0; failed <= DefaultFailures; failed++ {
			require.NoError(t, CheckFailures(kind, Config{PEs: 8}, failed), "%v, %d failures", kind, failed)
		}
		err := CheckFailures(kind, Config{PEs: 8}, DefaultFailures+1)
		require.ErrorIs(t, err, ErrTooManyFailures)
		require.ErrorContains(t, err, "3 PEs failed since the last checkpoint")
		require.NoError(t, CheckFailures(kind, Config{PEs: 8, Failures: 3}, 3))
		require.ErrorIs(t, CheckFailures(kind, Config{PEs: 8, Failures: 1}, 2), ErrTooManyFailures)
	}
	require.NoError(t, CheckFailures(KindNone, Config{PEs: 8}, 5), "checkpoint/restart rolls every task back")
}

// The f in force is the configured one, or one less than the PEs alive:
// a record every live PE stores survives any failure.
func TestBoundFollowsThePEsAlive(t *testing.T) {
	for _, c := range []struct{ pes, failures, failed, bound int }{
		{pes: 8, bound: DefaultFailures},
		{pes: 8, failures: 1, bound: 1},
		{pes: 3, bound: 2},
		{pes: 2, bound: 1},
		{pes: 1, bound: 0},
		{pes: 4, failed: 1, bound: 2},
		{pes: 4, failed: 2, bound: 1},
		{pes: 4, failed: 3, bound: 0},
	} {
		e := newEngine(KindFullDet, Config{PE: PEID(c.pes - 1), PEs: c.pes, Failures: c.failures})
		for p := range PEID(c.failed) {
			e.FailureNotice([]PEID{p}, nil)
		}
		require.Equal(t, c.bound, e.bound, "%d PEs, f=%d, %d failed", c.pes, c.failures, c.failed)
	}
}

// A PE that piggybacks a record holds it: a PE that already stores the
// record counts the sender as a holder, so that it need not carry the
// record on to a third PE when three hold it.
func TestResentRecordCountsItsSenderAsHolder(t *testing.T) {
	pes := []*engine{
		newEngine(KindFullDet, Config{PE: 0, PEs: 3}),
		newEngine(KindFullDet, Config{PE: 1, PEs: 3}),
		newEngine(KindFullDet, Config{PE: 2, PEs: 3}),
	}
	for p, e := range pes {
		e.HostTask(TaskID(p))
	}
	ordered := commutative.OrderedAnnotation()
	pes[1].Send(1, 0, Message{To: 0, Annotation: ordered})
	arriveAll(pes, 1)
	_, ok := pes[0].NextDelivery(0, func(Message) bool { return true })
	require.True(t, ok)
	// t0's handler sends to t1 and t2: both envelopes carry the new
	// determinant; PE 1 and PE 2 each know two holders of it.
	pes[0].Send(0, 1, Message{To: 1, Annotation: ordered})
	pes[0].Send(0, 2, Message{To: 2, Annotation: ordered})
	pes[0].EndHandler(0)
	arriveAll(pes, 0)
	k := determinantKey{0, 1}
	require.Len(t, pes[2].determinants.holderList(pes[2].determinants.record(k)), 2)
	// PE 1 carries it on (not stable there with f=2): PE 2 learns that a
	// third PE holds it.
	_, ok = pes[1].NextDelivery(1, func(Message) bool { return true })
	require.True(t, ok)
	pes[1].Send(1, 2, Message{To: 2, Annotation: ordered})
	pes[1].EndHandler(1)
	arriveAll(pes, 1)
	require.Equal(t, []PEID{0, 1, 2}, pes[2].determinants.holderList(pes[2].determinants.record(k)))
	require.True(t, pes[2].isStable(pes[2].determinants.record(k)))
}

// arriveAll transmits PE from's Ready: every envelope arrives at once.
func arriveAll(pes []*engine, from PEID) {
	ready := pes[from].Ready()
	pes[from].Advance()
	for _, env := range ready.Envelopes {
		pes[env.To].Arrive(env)
	}
}

// A message that reaches a task's old PE is forwarded through its
// protocol: the old PE stores and acknowledges the records the envelope
// carries, and sends the message on with the ones not stable.
func TestForwardStoresAndCarriesRecords(t *testing.T) {
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		sender := newEngine(kind, Config{PE: 0, PEs: 3})
		old := newEngine(kind, Config{PE: 1, PEs: 3})
		sender.HostTask(0)
		old.HostTask(1)
		// t0 handles an order-dependent message (a determinant) and sends
		// to t1, which the sender still thinks is on PE 1.
		sender.Arrive(Envelope{Kind: EnvelopeMessage, From: 0, To: 0, Message: Message{
			ID: MessageID{Sender: 0, SRN: 100}, To: 0, Annotation: commutative.OrderDependentAnnotation(),
		}})
		_, ok := sender.NextDelivery(0, func(Message) bool { return true })
		require.True(t, ok)
		sender.Send(0, 1, Message{To: 2, Annotation: commutative.OrderedAnnotation()})
		sender.EndHandler(0)
		env := sender.Ready().Envelopes[0]
		sender.Advance()
		require.NotEmpty(t, env.Determinants)
		old.Forward(env, 2)
		ready := old.Ready()
		require.Len(t, ready.Envelopes, 2)
		ack, fwd := ready.Envelopes[0], ready.Envelopes[1]
		require.Equal(t, EnvelopeAck, ack.Kind)
		require.Equal(t, PEID(0), ack.To)
		require.Empty(t, ack.Determinants)
		require.NotZero(t, env.Carry)
		require.Equal(t, env.Carry, ack.Carry)
		require.Equal(t, EnvelopeMessage, fwd.Kind)
		require.Equal(t, PEID(1), fwd.From)
		require.Equal(t, PEID(2), fwd.To)
		require.Equal(t, env.Message.ID, fwd.Message.ID)
		require.Equal(t, env.Determinants, fwd.Determinants, "%v: stored on two PEs, not stable with f=2", kind)
		require.True(t, old.HoldsDeterminant(0, 1))
		require.Equal(t, 1, old.Stats().Forwarded)
		require.Panics(t, func() { old.Forward(env, 1) }, "a PE does not forward to itself")
	}
}

// A message logged to a PE that then fails, for a task that had moved away
// from it, is sent again where Locate says the task is: the failed PE may
// not have forwarded it.
func TestFailureResendsWhatTheFailedPEMayNotHaveForwarded(t *testing.T) {
	where := map[TaskID]PEID{0: 0, 1: 2, 2: 1}
	e := newEngine(KindPartialDet, Config{PE: 0, PEs: 3, Locate: func(task TaskID) PEID { return where[task] }})
	e.HostTask(0)
	ordered := commutative.OrderedAnnotation()
	stale := e.Send(0, 1, Message{To: 1, Annotation: ordered}) // t1 moved to PE 2
	e.Send(0, 1, Message{To: 2, Annotation: ordered})          // t2 is on PE 1
	e.Send(0, 2, Message{To: 1, Annotation: ordered})          // sent where t1 is
	e.Advance()
	// PE 1 fails; t2 is restored on PE 2.
	where[2] = 2
	e.FailureNotice([]PEID{1}, []Relocation{{Task: 2, PE: 2}})
	var resent []MessageID
	for _, env := range e.Ready().Envelopes {
		if env.Kind == EnvelopeMessage {
			require.True(t, env.Replayed)
			require.Equal(t, PEID(2), env.To)
			resent = append(resent, env.Message.ID)
		}
	}
	require.Len(t, resent, 2, "t2's log for its restore, and the message PE 1 had to forward to t1")
	require.Contains(t, resent, stale)
}

func TestCheckFailureBound(t *testing.T) {
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		require.NoError(t, CheckFailureBound(kind, false, 4, 1))
		require.NoError(t, CheckFailureBound(kind, false, 4, 3))
		require.NoError(t, CheckFailureBound(kind, false, 2, 1))
		require.NoError(t, CheckFailureBound(kind, false, 100, MaxFailures))
		for _, c := range []struct {
			pes, f int
			want   string
		}{
			{4, 0, "f=0, want at least 1"},
			{4, -1, "f=-1, want at least 1"},
			{100, MaxFailures + 1, "f=9, at most 8"},
			{4, 4, "f=4 on 4 PEs, at most 3"},
			{2, 2, "f=2 on 2 PEs, at most 1"},
			{1, 1, "on 1 PE no other PE can hold a record"},
		} {
			err := CheckFailureBound(kind, false, c.pes, c.f)
			require.ErrorIs(t, err, ErrFailureBoundConfig)
			require.ErrorContains(t, err, c.want)
		}
		require.ErrorIs(t, CheckFailureBound(kind, true, 4, 1), ErrFailureBoundConfig, "an event logger has no f")
	}
	require.ErrorIs(t, CheckFailureBound(KindNone, false, 4, 1), ErrFailureBoundConfig, "None keeps no record")
}
