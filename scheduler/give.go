package scheduler

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// Messages handed over without being encoded (actor.Proxy.Give).
//
// A sender that gives its message up (Proxy.Give) lets the runtime hand
// the value itself to its handler. The PE does so when nothing needs the
// message's bytes: to one task on this PE (nothing crosses the network,
// and no protocol logs a message between two tasks of one PE, unless one
// of them moved here since the last checkpoint: logging.Protocol.Logged),
// without a recorder, a replayer or the annotation check (each keeps or
// compares the payloads).
// The envelope then carries the value (logging.Message.Value) and no
// payload; the protocol buffers it like any local message, and invoke
// hands the value to the handler. A given message that does not qualify
// is posted, encoded, as Send's are.
//
// Under FullDet and PartialDet a given protobuf message to one task on
// another PE carries its value to the protocol's Send, which encodes it
// straight into the sender log (logValues); its envelope carries the
// log's bytes, which transmit copies into the batch, and the value is
// kept as a spare (below). So it is encoded once, and copied once.
//
// A given protobuf message to one task on another PE under None (same
// conditions, but for the place) carries its value too, as far as the
// batch: transmit encodes it straight into the batch for that PE
// (addGiven), at its envelope's place, without a buffer of its own, and
// keeps it as a spare (below). So a message given across PEs is encoded
// once, into memory the PE reuses for every batch.
//
// A given message that is encoded instead is the runtime's once encoded
// (nothing refers to it: the protocol, the recorder and the batches keep
// the bytes): the PE keeps such protobuf messages, per handler, as spares,
// and decodes the next messages of that handler into them, into their
// bytes fields' memory too (decodeInto). So an application that gives
// back the messages it receives (e.g. a stencil's faces, sent on in the
// next iteration) allocates no message per reception on the encoded
// paths either, once as many are given as received.
//
// What could see such an envelope's missing bytes is covered: an
// observer (Config.Observe, the simulator's) gets the message encoded for
// it (observe); an envelope that leaves the PE is encoded as it is
// batched (transmit, addGiven), and only there.

// give posts m, whose sender gave it up, to target t on behalf of task
// sender.
func (pe *PE) give(t actor.Target, key uint64, m any, sender commutative.TaskID) {
	if int(t.Collection) >= len(pe.colls) || int(t.Handler) >= len(pe.colls[t.Collection].def.Handlers) || isNilPointer(m) {
		pe.post(t, key, m, sender) // post says what is wrong, or sends what a nil decodes to
		return
	}
	cs := pe.colls[t.Collection]
	lin := cs.def.Shape.Linear(t.Index)
	h := cs.def.Handlers[t.Handler]
	_, isProto := m.(proto.Message)
	local := int(cs.homeOf[lin]) == pe.cfg.Rank
	if pe.replay != nil || pe.rec != nil || pe.checker != nil || t.Scope != actor.ScopeOne ||
		local && pe.proto.Logged(sender, logging.PEID(pe.cfg.Rank), commutative.TaskID(TaskID(cs.def.ID, lin))) ||
		!local && (!isProto || h.Message.NewProto == nil) {
		pe.post(t, key, m, sender)
		pe.keepSpare(handlerID(t.Collection, t.Handler), h, m)
		return
	}
	msg := logging.Message{
		Handler: handlerID(t.Collection, t.Handler), Annotation: annotationOf(h.Annotation), Key: key,
		To: commutative.TaskID(TaskID(cs.def.ID, lin)), Value: m,
	}
	if h.Annotation.Order == actor.Commutative && h.Annotation.SizedAtRunTime() {
		msg.Annotation.RegionSize = regionSizeAt(cs, h, lin, key)
	}
	if local {
		pe.stats.Given++ // handed over as it is
	}
	pe.send(sender, cs.homeOf[lin], msg)
	if !local && pe.cfg.Protocol != logging.KindNone {
		// Logged: encoded into the sender log by Send (logValues), whose
		// bytes its envelope carries; the value is the runtime's.
		pe.keepSpare(msg.Handler, h, m)
	}
}

// logValues encodes the value of a message given to a task on another PE
// under FullDet and PartialDet straight into the sender log (the
// protocol's Config.Values), by its handler's codec: the message is
// encoded once, and the batch copies the log's bytes.
type logValues struct{ pe *PE }

func (v logValues) ValueSize(handler uint32, value any) int {
	return proto.Size(value.(proto.Message))
}

func (v logValues) AppendValue(b []byte, handler uint32, value any) ([]byte, error) {
	coll, hi := splitHandler(handler)
	return v.pe.colls[coll].def.Handlers[hi].Message.Append(b, value)
}

// isNilPointer reports whether m is a nil pointer: given, it is posted,
// so that its handler gets what decoding it gives (an empty protobuf
// message, say), as from Send.
func isNilPointer(m any) bool {
	v := reflect.ValueOf(m)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// addGiven adds message envelope e, which carries its value (a protobuf
// message given to a task on PE to), to the batch for to: encoded
// straight into the batch, without a buffer of its own; the value is then
// the runtime's, a spare to decode into (keepSpare).
func (pe *PE) addGiven(to int, e *logging.Envelope) {
	coll, hi := splitHandler(e.Message.Handler)
	h := pe.colls[coll].def.Handlers[hi]
	v := e.Message.Value
	b := &pe.out[to]
	pm, ok := v.(proto.Message)
	n := 0
	if ok {
		n = protoSize(pm)
	}
	if b.n > 0 && len(b.buf)+n+maxEnvelopeHead > maxBatchBytes {
		pe.flushTo(to) // one frame of the transport's holds the batch
	}
	e.Message.Value = nil
	if !ok || n == 0 || !b.addEncoded(e, n, func(buf []byte) ([]byte, error) { return h.Message.Append(buf, v) }) {
		// Empty (no payload field, as Send's), or not what proto.Size
		// said (a guard): encoded on its own.
		e.Message.Value = v
		e.Message = pe.encoded(e.Message)
		b.add(e)
	}
	pe.keepSpare(e.Message.Handler, h, v)
	if len(b.buf) >= maxBatchBytes {
		pe.flushTo(to)
	}
}

// maxBatchBytes is the size from which a batch is sent without waiting
// for the end of the slice; maxEnvelopeHead bounds what an envelope of a
// given message adds to its batch beyond its payload.
const (
	maxBatchBytes   = 1<<20 - 4<<10
	maxEnvelopeHead = 1 << 10
)

// encodeValue returns the payload of a message that carries its value
// (Message.Value), encoded by its handler's codec into memory of its own.
func (pe *PE) encodeValue(msg logging.Message) []byte {
	coll, hi := splitHandler(msg.Handler)
	h := pe.colls[coll].def.Handlers[hi]
	payload, err := h.Message.Append(nil, msg.Value)
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal %T for %s.%s: %v", msg.Value, pe.colls[coll].def.Name, h.Name, err))
	}
	return payload
}

// encoded returns msg with its value, if it carries one, encoded into
// its payload instead.
func (pe *PE) encoded(msg logging.Message) logging.Message {
	if msg.Value != nil {
		msg.Payload, msg.Value = pe.encodeValue(msg), nil
	}
	return msg
}

// decodesOnArrival reports whether messages from other PEs are decoded as
// they arrive (decodeOnArrival): with nothing that reads their bytes
// later (a recorder, a replayer, the annotation check). Under every
// protocol: the receiver's protocol never needs a message's bytes (the
// sender log, at the sender, keeps them), and a message for a task that
// is elsewhere is forwarded before it is decoded (receiveEnvelope); one
// kept for a task not placed yet (logging's unhosted arrivals) or
// forwarded by the protocol later carries its value, which transmit
// encodes into the batch (addGiven).
func (pe *PE) decodesOnArrival() bool {
	return pe.replay == nil && pe.rec == nil && pe.checker == nil
}

// decodeOnArrival decodes m, a message from another PE for a task of this
// PE, into a spare (newMessage), copying its bytes fields into the
// spare's memory: m then carries the value instead of its payload, as a
// given message does, and nothing refers to the memory the payload was
// received in, which the transport may reuse at once (PE.Receive). So a
// message given across PEs costs no memory at either end once spares
// circulate. A message that is not a protobuf one, or whose payload does
// not decode, is left as it is, for invoke, and so is one of aliasMin
// bytes or more when there is no spare to decode it into: invoke decodes
// it aliasing the payload, which is then the handler's.
func (pe *PE) decodeOnArrival(m *logging.Message) {
	coll, hi := splitHandler(m.Handler)
	h := pe.colls[coll].def.Handlers[hi]
	if h.Message.NewProto == nil || (len(m.Payload) >= aliasMin && len(pe.spares[m.Handler]) == 0) {
		return // a large one without a spare: aliased by invoke instead
	}
	pm := pe.newMessage(m.Handler, h)
	if err := decodeInto(m.Payload, pm, false, &pe.unmarshalBuf, &pe.bytesFields); err != nil {
		return
	}
	m.Value, m.Payload = pm, nil
}

// spare is a protobuf message given and encoded, kept to decode into
// (keepSpare); n is its encoded size, what it holds.
type spare struct {
	m proto.Message
	n int
}

// maxSpares and maxSpareBytes bound the spares a PE keeps, in number and
// encoded size.
const (
	maxSpares     = 1024
	maxSpareBytes = 16 << 20
)

// keepSpare keeps m, a message of handler h (id handler) given and
// encoded, to decode a later message of h into.
func (pe *PE) keepSpare(handler uint32, h *actor.HandlerDef, m any) {
	pm, ok := m.(proto.Message)
	if !ok || h.Message.NewProto == nil || pe.spareCount >= maxSpares {
		return
	}
	n := protoSize(pm)
	if pe.spareBytes+n > maxSpareBytes {
		return
	}
	if pe.spares == nil {
		pe.spares = map[uint32][]spare{}
	}
	pe.spares[handler] = append(pe.spares[handler], spare{pm, n})
	pe.spareCount++
	pe.spareBytes += n
}

// newMessage returns a message of handler h (id handler) to decode into:
// a spare (keepSpare), or a new one.
func (pe *PE) newMessage(handler uint32, h *actor.HandlerDef) proto.Message {
	s := pe.spares[handler]
	if len(s) == 0 {
		return h.Message.NewProto()
	}
	last := s[len(s)-1]
	s[len(s)-1] = spare{}
	pe.spares[handler] = s[:len(s)-1]
	pe.spareCount--
	pe.spareBytes -= last.n
	return last.m
}
