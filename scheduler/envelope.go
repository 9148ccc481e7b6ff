package scheduler

import (
	"fmt"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// Conversions between the protocol's envelopes and their wire form. Every
// field that comes off the wire is checked here, so the protocol only ever
// sees well-formed envelopes.

func idToWire(id logging.MessageID) *wire.MessageID {
	return &wire.MessageID{Sender: uint64(id.Sender), Srn: id.SRN, Cpi: id.CPI.Bytes()}
}

func idFromWire(w *wire.MessageID) (logging.MessageID, error) {
	if w == nil {
		return logging.MessageID{}, fmt.Errorf("%w: missing message id", ErrMalformed)
	}
	cpi, err := commutative.ParsePath(w.Cpi)
	if err != nil {
		return logging.MessageID{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return logging.MessageID{Sender: commutative.TaskID(w.Sender), SRN: w.Srn, CPI: cpi}, nil
}

// envelopeFromWire decodes and checks an envelope that arrived from PE
// from at PE self of a job of size PEs.
func envelopeFromWire(w *wire.Envelope, from, self, size int) (logging.Envelope, error) {
	e := logging.Envelope{Kind: logging.EnvelopeKind(w.Kind), From: logging.PEID(w.From), To: logging.PEID(w.To), Replayed: w.Replayed, Task: commutative.TaskID(w.Task), Epoch: w.Epoch, Carry: w.Carry}
	if (int(w.From) != from && !w.Forwarded) || w.From < 0 || int(w.From) >= size || int(w.To) != self {
		return e, fmt.Errorf("%w: envelope from PE %d to PE %d arrived from PE %d at PE %d", ErrMalformed, w.From, w.To, from, self)
	}
	switch e.Kind {
	case logging.EnvelopeMessage:
		if w.Message == nil {
			return e, fmt.Errorf("%w: message envelope without a message", ErrMalformed)
		}
		m := w.Message
		id, err := idFromWire(m.Id)
		if err != nil {
			return e, err
		}
		if m.Order > uint32(commutative.Commutative) {
			return e, fmt.Errorf("%w: order %d", ErrMalformed, m.Order)
		}
		if commutative.Order(m.Order) == commutative.Commutative && m.RegionSize < 1 {
			return e, fmt.Errorf("%w: commutative region of %d messages", ErrMalformed, m.RegionSize)
		}
		e.Message = logging.Message{
			ID: id, To: commutative.TaskID(m.To), Handler: m.Handler,
			Annotation: commutative.Annotation{Order: commutative.Order(m.Order), RegionSize: int(m.RegionSize)},
			Key:        m.Key, Payload: m.Payload,
		}
		for _, d := range m.Requires {
			trig, err := idFromWire(d.Trigger)
			if err != nil {
				return e, err
			}
			e.Message.Requires = append(e.Message.Requires, logging.Dependency{Task: commutative.TaskID(d.Task), Trigger: trig})
		}
	case logging.EnvelopeAck, logging.EnvelopeRecovery:
	default:
		return e, fmt.Errorf("%w: envelope kind %d", ErrMalformed, w.Kind)
	}
	for _, d := range w.Determinants {
		var id logging.MessageID
		var err error
		if e.Kind != logging.EnvelopeAck || d.Message != nil {
			// An acknowledgement's determinants may come without their
			// message (appendDeterminant).
			id, err = idFromWire(d.Message)
		}
		if err != nil {
			return e, err
		}
		e.Determinants = append(e.Determinants, logging.Determinant{Message: id, Receiver: commutative.TaskID(d.Receiver), RSN: d.Rsn,
			Creator: logging.PEID(d.Creator), Seq: d.Seq})
	}
	if len(w.PackedDeterminants) > 0 {
		packed, err := unpackDeterminants(nil, w.PackedDeterminants)
		if err != nil {
			return e, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		for i := range packed {
			d, err := determinantFromRaw(&packed[i])
			if err != nil {
				return e, err
			}
			e.Determinants = append(e.Determinants, d)
		}
	}
	for _, p := range w.Progress {
		e.Progress = append(e.Progress, logging.Progress{Task: commutative.TaskID(p.Task), RSN: p.Rsn,
			Creator: logging.PEID(p.Creator), Seq: p.Seq})
	}
	return e, nil
}
