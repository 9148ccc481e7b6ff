package scheduler

import (
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
)

// Reused buffers for large messages under None.
//
// Under FullDet and PartialDet the sender log copies every payload, so
// one buffer (PE.postBuf) serves every send. Under None the envelope
// keeps the marshalled payload itself, and a large one goes to the
// transport as it is (PE.transmit), which reads it until the receiver
// acknowledged it. So, for a large message to one task on another PE
// through a Net that says when it holds none of the payloads it was given
// (partsNet.Released), the PE marshals into a buffer it reuses once
// nothing refers to it: lent to the message while the slice runs, then
// (transmit) in the Net's hands, then free again once the Net released
// everything. Nothing else refers to such a payload: the protocol drops
// the envelope once it is sent (None logs nothing), and the receiver
// has its own copy. Messages to tasks on this PE (which the protocol
// buffers until they are handled) and multicasts (whose envelopes share
// one payload) are marshalled into memory of their own.

// maxFreeBufs bounds the free buffers kept; maxInNet the buffers waited
// for (a Net that never releases everything keeps them from being
// reused, not from being collected).
const (
	maxFreeBufs = 4
	maxInNet    = 64
)

// marshalOwn marshals m, to be sent under None to target t of collection
// cs, into memory the envelope may keep.
func (pe *PE) marshalOwn(t actor.Target, cs *collectionState, codec actor.Codec, m any) ([]byte, error) {
	net, ok := pe.cfg.Net.(partsNet)
	pm, isProto := m.(proto.Message)
	if !ok || !isProto || codec.NewProto == nil || t.Scope != actor.ScopeOne || int(cs.homeOf[cs.def.Shape.Linear(t.Index)]) == pe.cfg.Rank {
		return codec.Append(nil, m)
	}
	n := proto.Size(pm)
	if n < detachMin {
		return codec.Append(nil, m)
	}
	payload, err := codec.Append(pe.marshalBuffer(net, n), m)
	if err == nil {
		pe.lent = append(pe.lent, payload)
	}
	return payload, err
}

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
