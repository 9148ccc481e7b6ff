package scheduler

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/internal/protofield"
)

// Reused buffers for messages whose envelope keeps their payload.
//
// Under FullDet and PartialDet the sender log copies the payload of every
// message to another PE, so one buffer (PE.postBuf) serves every such
// send. Under None, and under every protocol for a message to a task of
// this PE (which no protocol logs: logging.Protocol.Send), the envelope
// keeps the marshalled payload itself.
//
// Under None a message to one task on another PE whose batch copies it
// (a payload smaller than detachMin) is marshalled into an arena that
// transmit empties once it has copied every such payload into its batch
// (marshalArena); a batch with a message is always sent by the end of
// transmit, so no batch under way refers to a payload's address (the
// payloads shared within a batch are found by address) when the arena
// is reused.
//
// Under None a large payload goes to the transport as it is
// (PE.transmit), which reads it until the receiver acknowledged it. So,
// for a large message to one task on another PE through a Net that says
// when it holds none of the payloads it was given
// (partsNet.Released), the PE marshals into a buffer it reuses once
// nothing refers to it: lent to the message while the slice runs, then
// (transmit) in the Net's hands, then free again once the Net released
// everything. Nothing else refers to such a payload: the protocol drops
// the envelope once it is sent (None logs nothing), and the receiver
// has its own copy. Multicasts (whose envelopes share one payload) are
// marshalled into memory of their own.
//
// A message to one task on this PE is marshalled into memory of its own
// that nothing but its envelope refers to: the envelope keeps the
// payload itself, nothing logs it, and the protocol forgets the message
// once delivered; the recorder, the replayer and the annotation checker
// copy what they keep, before the handler runs. So the PE owns such a
// payload alone, as one received from another PE (ownPayload), and its
// handler message is decoded aliasing it (unmarshalAliasing): the
// message is marshalled once and its large bytes fields are not copied
// again. Such a message whose handler message is a copy instead (a
// protobuf one under aliasMin bytes, a plain or binary one: their codecs
// copy what they decode) leaves its payload free once decoded: it is
// marshalled into a buffer the PE takes back after the handler ran
// (marshalLocal, freeLocal), so that the forward path does not allocate
// a payload per message. The copies of a multicast for tasks of this PE
// under FullDet and PartialDet share one copy of PE.postBuf (PE.post),
// as under None all its envelopes share one payload, and a replay from the sender log to a task restored here carries the
// log's copy: their handler messages are always copies.

// maxFreeBufs bounds the free buffers kept; maxInNet the buffers waited
// for (a Net that never releases everything keeps them from being
// reused, not from being collected).
const (
	maxFreeBufs = 4
	maxInNet    = 64
)

// maxLocalFree and maxLocalFreeBytes bound the free buffers kept for
// messages to tasks on this PE; maxLocalLent the payloads in them not
// delivered yet (a payload never delivered, dropped by a rollback or
// forwarded to a task that moved, is forgotten with the others once
// there are more: it only goes back to the collector).
const (
	maxLocalFree      = 1024
	maxLocalFreeBytes = 8 << 20
	maxLocalLent      = 1 << 14
)

// marshalOwn marshals m, to be sent to target t of collection cs under
// None, or to one task of this PE under any protocol, into memory the
// envelope may keep.
func (pe *PE) marshalOwn(t actor.Target, cs *collectionState, codec actor.Codec, m any) ([]byte, error) {
	local := t.Scope == actor.ScopeOne && int(cs.homeOf[cs.def.Shape.Linear(t.Index)]) == pe.cfg.Rank
	if local && pe.replay == nil {
		return pe.marshalLocal(codec, m)
	}
	net := pe.partsNet
	ok := net != nil
	pm, isProto := m.(proto.Message)
	arena := t.Scope == actor.ScopeOne && !local && pe.rec == nil && pe.replay == nil && pe.cfg.Observe == nil
	if !ok || !isProto || codec.NewProto == nil || t.Scope != actor.ScopeOne || local {
		if arena && !ok {
			return pe.marshalArena(codec, m)
		}
		return codec.Append(nil, m)
	}
	n := protoSize(pm)
	if n < detachMin {
		if arena {
			return pe.marshalArena(codec, m)
		}
		return codec.Append(nil, m)
	}
	payload, err := codec.Append(pe.marshalBuffer(net, n), m)
	if err == nil {
		pe.lent = append(pe.lent, payload)
	}
	return payload, err
}

// marshalArena marshals m, a message to one task on another PE under
// None that its batch will copy (smaller than detachMin, or any size
// through a Net that takes payloads whole), after the slice's others in
// pe.sendArena, which transmit empties once it copied them into their
// batches: the send allocates nothing. Not while a recorder, replayer
// or observer runs (they may keep the payload).
func (pe *PE) marshalArena(codec actor.Codec, m any) ([]byte, error) {
	start := len(pe.sendArena)
	buf, err := codec.Append(pe.sendArena, m)
	if err != nil {
		return nil, err
	}
	// (An array the arena outgrew stays alive as long as the payloads
	// in it do.)
	pe.sendArena = buf
	return buf[start:len(buf):len(buf)], nil
}

// sendArenaMax is the largest arena transmit keeps for the next slice.
const sendArenaMax = 1 << 20

// marshalBuffer returns an empty free buffer with room for n bytes, or
// nil.
func (pe *PE) marshalBuffer(net partsNet, n int) []byte {
	if len(pe.inNet) > 0 && len(pe.freeBufs) < maxFreeBufs && net.Released() {
		for _, b := range pe.inNet {
			if len(pe.freeBufs) < maxFreeBufs {
				pe.freeBufs = append(pe.freeBufs, b)
			}
		}
		clear(pe.inNet)
		pe.inNet = pe.inNet[:0]
	}
	for i, b := range pe.freeBufs {
		if cap(b) >= n {
			last := len(pe.freeBufs) - 1
			pe.freeBufs[i], pe.freeBufs[last] = pe.freeBufs[last], nil
			pe.freeBufs = pe.freeBufs[:last]
			return b[:0]
		}
	}
	return nil
}

// lentToNet hands the buffers lent in this slice to the Net's keeping:
// their messages were sent (PE.transmit).
func (pe *PE) lentToNet() {
	for _, b := range pe.lent {
		if len(pe.inNet) == maxInNet {
			copy(pe.inNet, pe.inNet[1:])
			pe.inNet = pe.inNet[:maxInNet-1]
		}
		pe.inNet = append(pe.inNet, b)
	}
	clear(pe.lent)
	pe.lent = pe.lent[:0]
}

// marshalLocal marshals m, sent under None to one task on this PE, into
// memory nothing else refers to: a protobuf message of aliasMin bytes or
// more into memory of its own, which its handler message aliases
// (ownPayload); any other into a free buffer, taken back once delivered
// (freeLocal).
func (pe *PE) marshalLocal(codec actor.Codec, m any) ([]byte, error) {
	if pm, ok := m.(proto.Message); ok && codec.NewProto != nil {
		if n := protoSize(pm); n >= aliasMin {
			payload, err := codec.Append(make([]byte, 0, n), m)
			if err == nil {
				pe.ownPayload(payload)
			}
			return payload, err
		}
	}
	payload, err := codec.Append(pe.localBuffer(), m)
	if err != nil || len(payload) == 0 {
		return payload, err
	}
	pe.lendLocal(payload)
	return payload, nil
}

// localBuffer returns an empty free buffer of marshalLocal's (nil if it
// has none).
func (pe *PE) localBuffer() []byte {
	last := len(pe.localFree) - 1
	if last < 0 {
		return nil
	}
	buf := pe.localFree[last]
	pe.localFree[last] = nil
	pe.localFree = pe.localFree[:last]
	pe.localFreeBytes -= cap(buf)
	return buf
}

// lendLocal notes that payload, not empty, is in a buffer of
// localBuffer's until it is delivered (takeLocal).
func (pe *PE) lendLocal(payload []byte) {
	if len(pe.localLent) >= maxLocalLent {
		clear(pe.localLent)
	}
	if pe.localLent == nil {
		pe.localLent = map[*byte]struct{}{}
	}
	pe.localLent[&payload[0]] = struct{}{}
}

// takeLocal reports whether payload p, delivered, was marshalled into a
// buffer of marshalLocal, and forgets it.
func (pe *PE) takeLocal(p []byte) bool {
	if len(p) == 0 || len(pe.localLent) == 0 {
		return false
	}
	if _, ok := pe.localLent[&p[0]]; !ok {
		return false
	}
	delete(pe.localLent, &p[0])
	return true
}

// freeLocal takes back the buffer of a payload of takeLocal, once
// nothing refers to it: its handler message was decoded into memory of
// its own, and the handler ran.
func (pe *PE) freeLocal(p []byte) {
	if len(pe.localFree) < maxLocalFree && pe.localFreeBytes+cap(p) <= maxLocalFreeBytes {
		pe.localFree = append(pe.localFree, p[:0])
		pe.localFreeBytes += cap(p)
	}
}

// protoSize is proto.Size(m), by hand for a BytesValue.
func protoSize(m proto.Message) int {
	if v, ok := m.(*wrapperspb.BytesValue); ok {
		return protofield.SizeBytesValue(v)
	}
	return proto.Size(m)
}
