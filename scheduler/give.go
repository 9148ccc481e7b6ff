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
// it (observe); an envelope that would leave the PE (which post never
// makes: the value is only set for a task of this PE, and a task moves
// only with no message waiting) is encoded before it is batched
// (transmit), so a bug there costs a copy, not a wrong message.

// give posts m, whose sender gave it up, to target t on behalf of task
// sender.
func (pe *PE) give(t actor.Target, key uint64, m any, sender commutative.TaskID) {
	if int(t.Collection) >= len(pe.colls) || int(t.Handler) >= len(pe.colls[t.Collection].def.Handlers) || isNilPointer(m) {
		pe.post(t, key, m, sender) // post says what is wrong, or sends what a nil decodes to
		return
	}
	cs := pe.colls[t.Collection]
	lin := cs.def.Shape.Linear(t.Index)
	if pe.replay != nil || pe.rec != nil || pe.checker != nil ||
		t.Scope != actor.ScopeOne || int(cs.homeOf[lin]) != pe.cfg.Rank ||
		pe.proto.Logged(sender, logging.PEID(pe.cfg.Rank), commutative.TaskID(TaskID(cs.def.ID, lin))) {
		pe.post(t, key, m, sender)
		pe.keepSpare(handlerID(t.Collection, t.Handler), cs.def.Handlers[t.Handler], m)
		return
	}
	h := cs.def.Handlers[t.Handler]
	msg := logging.Message{
		Handler: handlerID(t.Collection, t.Handler), Annotation: annotationOf(h.Annotation), Key: key,
		To: commutative.TaskID(TaskID(cs.def.ID, lin)), Value: m,
	}
	if h.Annotation.Order == actor.Commutative && h.Annotation.SizedAtRunTime() {
		msg.Annotation.RegionSize = regionSizeAt(cs, h, lin, key)
	}
	pe.stats.Given++
	pe.send(sender, cs.homeOf[lin], msg)
}

// isNilPointer reports whether m is a nil pointer: given, it is posted,
// so that its handler gets what decoding it gives (an empty protobuf
// message, say), as from Send.
func isNilPointer(m any) bool {
	v := reflect.ValueOf(m)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

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
	n := proto.Size(pm)
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
