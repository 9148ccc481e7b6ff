package logging

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/commutative"
)

// The envelopes of one Ready whose logged payloads have the same bytes
// (a multicast's, sent from one buffer) carry one slice, so that the
// scheduler sends it once per batch; a payload with other bytes, or one
// logged after Advance, keeps its own copy. A PE that got a determinant
// from another does not carry it back there.
func TestMulticastEnvelopesShareTheLoggedPayload(t *testing.T) {
	e := newEngine(KindFullDet, Config{PE: 0, PEs: 3})
	e.HostTask(0)
	ordered := commutative.OrderedAnnotation()
	buf := make([]byte, 100)
	for i := range buf {
		buf[i] = byte(i)
	}
	e.Send(0, 1, Message{To: 1, Annotation: ordered, Payload: buf})
	e.Send(0, 2, Message{To: 2, Annotation: ordered, Payload: buf})
	other := append([]byte(nil), buf...)
	other[99] = 0
	e.Send(0, 2, Message{To: 3, Annotation: ordered, Payload: other})
	envs := e.Ready().Envelopes
	require.Len(t, envs, 3)
	require.Same(t, &envs[0].Message.Payload[0], &envs[1].Message.Payload[0], "a multicast's envelopes share the first logged copy")
	require.NotSame(t, &buf[0], &envs[0].Message.Payload[0], "the logged copy, not the caller's buffer")
	require.NotSame(t, &envs[1].Message.Payload[0], &envs[2].Message.Payload[0])
	require.Equal(t, other, envs[2].Message.Payload)
	e.Advance()
	e.Send(0, 1, Message{To: 1, Annotation: ordered, Payload: other})
	next := e.Ready().Envelopes
	require.NotSame(t, &envs[2].Message.Payload[0], &next[0].Message.Payload[0], "a later Ready's envelope has its own copy")
	require.Equal(t, 4, e.log.len(), "every message is logged")
	for i := range 2 {
		require.Equal(t, buf, e.log.message(i).Payload)
	}
}

func TestDeterminantDoesNotRideBackToItsSender(t *testing.T) {
	pes := []*engine{
		newEngine(KindFullDet, Config{PE: 0, PEs: 4}),
		newEngine(KindFullDet, Config{PE: 1, PEs: 4}),
	}
	for p, e := range pes {
		e.HostTask(TaskID(p))
	}
	ordered := commutative.OrderedAnnotation()
	pes[1].Send(1, 0, Message{To: 0, Annotation: ordered})
	arriveAll(pes, 1)
	_, ok := pes[0].NextDelivery(0, func(Message) bool { return true })
	require.True(t, ok)
	pes[0].Send(0, 1, Message{To: 1, Annotation: ordered})
	pes[0].EndHandler(0)
	arriveAll(pes, 0)
	// PE 1 now stores PE 0's determinant (unstable: two holders of the
	// three f = 2 asks), and sends to PE 0 and PE 2.
	_, ok = pes[1].NextDelivery(1, func(Message) bool { return true })
	require.True(t, ok)
	pes[1].Send(1, 0, Message{To: 0, Annotation: ordered})
	pes[1].Send(1, 2, Message{To: 2, Annotation: ordered})
	pes[1].EndHandler(1)
	var toZero, toTwo []Determinant
	for _, env := range pes[1].Ready().Envelopes {
		if env.Kind != EnvelopeMessage {
			continue
		}
		switch env.To {
		case 0:
			toZero = append(toZero, env.Determinants...)
		case 2:
			toTwo = append(toTwo, env.Determinants...)
		}
	}
	k := determinantKey{0, 1}
	require.Contains(t, toTwo, pes[1].determinants.determinant(pes[1].determinants.record(k)), "carried on to a PE that lacks it")
	require.NotContains(t, toZero, pes[1].determinants.determinant(pes[1].determinants.record(k)), "not carried back to its creator")
}
