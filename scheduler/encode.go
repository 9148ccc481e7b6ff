package scheduler

import (
	"fmt"
	"math/bits"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gochare/gochare/internal/protofield"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// A hand-written encoder for the envelopes a PE sends: it appends a
// logging.Envelope as a wire.Batch's envelopes field straight into the
// batch being built, without building wire objects (a dozen per message)
// for proto.Marshal to walk. The bytes are what proto.Marshal writes for
// the same envelope (fields in number order, zero values left out);
// receivers decode them with proto.Unmarshal. encode_test.go checks the
// two agree.

// Field numbers of scheduler/wire/wire.proto.
const (
	batchJob        = 1
	batchEnvelopes  = 2
	batchGeneration = 3

	envKind         = 1
	envFrom         = 2
	envTo           = 3
	envMessage      = 4
	envReplayed     = 5
	envDeterminants = 6
	envProgress     = 7
	envTask         = 8
	envEpoch        = 9
	envCarry        = 11
	envPacked       = 12

	msgID          = 1
	msgTo          = 2
	msgHandler     = 3
	msgOrder       = 4
	msgRegionSize  = 5
	msgKey         = 6
	msgPayload     = 7
	msgRequires    = 8
	msgPayloadFrom = 9

	idSender = 1
	idSRN    = 2
	idCPI    = 3

	depTask    = 1
	depTrigger = 2

	detMessage  = 1
	detReceiver = 2
	detRSN      = 3
	// detCreator and detSeq are the event logger's stamp (absent
	// without one: zero).
	detCreator = 4
	detSeq     = 5

	progTask    = 1
	progRSN     = 2
	progCreator = 3
	progSeq     = 4
)

// sizeNested is the size of a length-delimited field holding size bytes
// (written even when empty: a set message field).
func sizeNested(n protowire.Number, size int) int {
	return protowire.SizeTag(n) + protowire.SizeBytes(size)
}

func appendNestedHeader(b []byte, n protowire.Number, size int) []byte {
	if n < 16 && uint(size) < 0x80 {
		return append(b, byte(n<<3)|byte(protowire.BytesType), byte(size))
	}
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(size))
}

// int32Varint is how protobuf encodes an int32: sign-extended to 64 bits.
func int32Varint(v int32) uint64 { return uint64(int64(v)) }

func sizeID(id logging.MessageID) int {
	n := protofield.VarintSize(idSender, uint64(id.Sender)) + protofield.VarintSize(idSRN, id.SRN)
	if l := id.CPI.Len(); l > 0 {
		n += protowire.SizeTag(idCPI) + protowire.SizeBytes(l)
	}
	return n
}

func appendID(b []byte, n protowire.Number, id logging.MessageID) []byte {
	b = appendNestedHeader(b, n, sizeID(id))
	b = protofield.AppendVarint(b, idSender, uint64(id.Sender))
	b = protofield.AppendVarint(b, idSRN, id.SRN)
	if l := id.CPI.Len(); l > 0 {
		b = appendNestedHeader(b, idCPI, l)
		b = id.CPI.AppendEncoded(b)
	}
	return b
}

func sizeDependency(d logging.Dependency) int {
	return protofield.VarintSize(depTask, uint64(d.Task)) + sizeNested(depTrigger, sizeID(d.Trigger))
}

// sizeMessage is the size of m's encoding; from, when not 0, stands for
// its payload (see payload_from in wire.proto).
func sizeMessage(m *logging.Message, from uint32) int {
	return sizeMessageLen(m, from, len(m.Payload))
}

// sizeMessageLen is sizeMessage for a payload of plen bytes, whatever
// m.Payload holds.
func sizeMessageLen(m *logging.Message, from uint32, plen int) int {
	n := sizeNested(msgID, sizeID(m.ID)) +
		protofield.VarintSize(msgTo, uint64(m.To)) +
		protofield.VarintSize(msgHandler, uint64(m.Handler)) +
		protofield.VarintSize(msgOrder, uint64(m.Annotation.Order)) +
		protofield.VarintSize(msgRegionSize, uint64(uint32(m.Annotation.RegionSize))) +
		protofield.VarintSize(msgKey, m.Key)
	if plen > 0 && from == 0 {
		n += protowire.SizeTag(msgPayload) + protowire.SizeBytes(plen)
	}
	for _, d := range m.Requires {
		n += sizeNested(msgRequires, sizeDependency(d))
	}
	return n + protofield.VarintSize(msgPayloadFrom, uint64(from))
}

func appendMessage(b []byte, m *logging.Message, from uint32) []byte {
	b = appendMessageHead(b, m, from)
	if len(m.Payload) > 0 && from == 0 {
		b = protowire.AppendTag(b, msgPayload, protowire.BytesType)
		b = protowire.AppendBytes(b, m.Payload)
	}
	return appendMessageRest(b, m, from)
}

func appendMessageHead(b []byte, m *logging.Message, from uint32) []byte {
	return appendMessageHeadLen(b, m, from, len(m.Payload))
}

func appendMessageHeadLen(b []byte, m *logging.Message, from uint32, plen int) []byte {
	b = appendNestedHeader(b, envMessage, sizeMessageLen(m, from, plen))
	b = appendID(b, msgID, m.ID)
	b = protofield.AppendVarint(b, msgTo, uint64(m.To))
	b = protofield.AppendVarint(b, msgHandler, uint64(m.Handler))
	b = protofield.AppendVarint(b, msgOrder, uint64(m.Annotation.Order))
	b = protofield.AppendVarint(b, msgRegionSize, uint64(uint32(m.Annotation.RegionSize)))
	return protofield.AppendVarint(b, msgKey, m.Key)
}

func appendMessageRest(b []byte, m *logging.Message, from uint32) []byte {
	for _, d := range m.Requires {
		b = appendNestedHeader(b, msgRequires, sizeDependency(d))
		b = protofield.AppendVarint(b, depTask, uint64(d.Task))
		b = appendID(b, depTrigger, d.Trigger)
	}
	return protofield.AppendVarint(b, msgPayloadFrom, uint64(from))
}

// sizeDeterminant is the size of d's encoding; keyOnly leaves out the
// message (see appendDeterminant).
func sizeDeterminant(d logging.Determinant, keyOnly bool) int {
	n := protofield.VarintSize(detReceiver, uint64(d.Receiver)) + protofield.VarintSize(detRSN, d.RSN) +
		protofield.VarintSize(detCreator, int32Varint(int32(d.Creator))) + protofield.VarintSize(detSeq, d.Seq)
	if !keyOnly {
		n += sizeNested(detMessage, sizeID(d.Message))
	}
	return n
}

// appendDeterminant appends d as one entry of an envelope's determinants
// field. An acknowledgement's determinants go keyOnly, without their
// message: the protocol reads only the position (receiver, RSN) of what
// is acknowledged, and acknowledgements are as many as the determinants
// piggybacked, so the message's identity made them cost as much on the
// wire as the piggybacks themselves.
func appendDeterminant(b []byte, d logging.Determinant, keyOnly bool) []byte {
	b = appendNestedHeader(b, envDeterminants, sizeDeterminant(d, keyOnly))
	if !keyOnly {
		b = appendID(b, detMessage, d.Message)
	}
	b = protofield.AppendVarint(b, detReceiver, uint64(d.Receiver))
	b = protofield.AppendVarint(b, detRSN, d.RSN)
	b = protofield.AppendVarint(b, detCreator, int32Varint(int32(d.Creator)))
	return protofield.AppendVarint(b, detSeq, d.Seq)
}

// sizeProgress is the size of a progress record's fields. Every field
// number is below 16 (a one-byte tag), and the record, at most 4 tags and
// 4 varints (45 bytes), has a one-byte length: sizeNested(envProgress,
// sizeProgress(p)) is 2 + sizeProgress(p). Progress records are most of
// what partialdet adds to an envelope (one per task that sent since its
// record was last stable), so they are sized and written without the
// general helpers' calls (appendProgress).
func sizeProgress(p logging.Progress) int {
	n := fieldSize(uint64(p.Task)) + fieldSize(p.RSN)
	if p.Creator != 0 || p.Seq != 0 {
		n += fieldSize(int32Varint(int32(p.Creator))) + fieldSize(p.Seq)
	}
	return n
}

// fieldSize is the size of a varint field of a number below 16 holding
// v: nothing for 0 (proto3 leaves zero values out).
func fieldSize(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + (bits.Len64(v)+6)/7
}

// appendProgress appends p as one entry of an envelope's progress field.
func appendProgress(b []byte, p logging.Progress) []byte {
	b = append(b, envProgress<<3|byte(protowire.BytesType), byte(sizeProgress(p)))
	b = appendSmallField(b, progTask, uint64(p.Task))
	b = appendSmallField(b, progRSN, p.RSN)
	if p.Creator != 0 || p.Seq != 0 {
		b = appendSmallField(b, progCreator, int32Varint(int32(p.Creator)))
		b = appendSmallField(b, progSeq, p.Seq)
	}
	return b
}

// appendSmallField appends varint field num (below 16) holding v, unless
// v is 0.
func appendSmallField(b []byte, num byte, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = append(b, num<<3|byte(protowire.VarintType))
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func sizeEnvelope(e *logging.Envelope, from uint32) int {
	return sizeEnvelopeLen(e, from, len(e.Message.Payload))
}

// sizeEnvelopeLen is sizeEnvelope for a payload of plen bytes, whatever
// e.Message.Payload holds. The packed determinants of a message or
// recovery envelope count as packedGuess says, not as they pack:
// appendEnvelope writes the envelope's length after its bytes
// (endNested), so that the determinants are gone over once, as they are
// packed, where sizing them took a pass of its own (a tenth of FullDet's
// encoding and decoding instructions on LeanMD at 4 PEs:
// docs/benchmarks.md, "fd4 (2026-11-28)").
func sizeEnvelopeLen(e *logging.Envelope, from uint32, plen int) int {
	n := protofield.VarintSize(envKind, uint64(e.Kind)) +
		protofield.VarintSize(envFrom, int32Varint(int32(e.From))) +
		protofield.VarintSize(envTo, int32Varint(int32(e.To)))
	if e.Kind == logging.EnvelopeMessage {
		n += sizeNested(envMessage, sizeMessageLen(&e.Message, from, plen))
	}
	if e.Replayed {
		n += protowire.SizeTag(envReplayed) + 1
	}
	if e.Kind == logging.EnvelopeAck {
		for _, d := range e.Determinants {
			n += sizeNested(envDeterminants, sizeDeterminant(d, true))
		}
	} else if len(e.Determinants) > 0 {
		n += sizeNested(envPacked, packedGuess(len(e.Determinants)))
	}
	for _, p := range e.Progress {
		n += 2 + sizeProgress(p) // see sizeProgress
	}
	return n + protofield.VarintSize(envTask, uint64(e.Task)) + protofield.VarintSize(envEpoch, uint64(e.Epoch)) +
		protofield.VarintSize(envCarry, e.Carry)
}

// appendEnvelope appends e as one entry of a batch's envelopes field;
// from, when not 0, is the earlier envelope of the batch whose payload e's
// message shares (1-based), sent instead of the payload.
func appendEnvelope(b []byte, e *logging.Envelope, from uint32) []byte {
	b, mark, room := beginNested(b, batchEnvelopes, sizeEnvelope(e, from))
	b = protofield.AppendVarint(b, envKind, uint64(e.Kind))
	b = protofield.AppendVarint(b, envFrom, int32Varint(int32(e.From)))
	b = protofield.AppendVarint(b, envTo, int32Varint(int32(e.To)))
	if e.Kind == logging.EnvelopeMessage {
		b = appendMessage(b, &e.Message, from)
	}
	return endNested(appendEnvelopeRest(b, e), mark, room, 0)
}

// packedGuess is the length sizeEnvelopeLen counts for n packed
// determinants (most take five to seven bytes): the room left for the
// length of the envelope they ride in is then right on most envelopes.
func packedGuess(n int) int { return 6 * n }

// beginNested appends the tag of nested field num and room for the
// varint of a length of size; endNested writes the real length there.
// The body starts at mark.
func beginNested(b []byte, num protowire.Number, size int) (_ []byte, mark, room int) {
	room = varintLen(uint64(size))
	if num < 16 {
		b = append(b, byte(num<<3)|byte(protowire.BytesType))
	} else {
		b = protowire.AppendTag(b, num, protowire.BytesType)
	}
	b = append(b, make([]byte, room)...)
	return b, len(b), room
}

// endNested writes the length of the nested field beginNested started:
// the bytes appended since mark, and extra more that the caller appends
// next. When the length takes more or fewer bytes than room, the body
// written so far moves.
func endNested(b []byte, mark, room, extra int) []byte {
	start, body := mark-room, len(b)-mark
	n := uint64(body + extra)
	if k := varintLen(n); k != room {
		if k > room {
			b = append(b, make([]byte, k-room)...)
		}
		copy(b[start+k:], b[mark:mark+body])
		b = b[:start+k+body]
	}
	protowire.AppendVarint(b[:start], n)
	return b
}

func appendEnvelopeRest(b []byte, e *logging.Envelope) []byte {
	if e.Replayed {
		b = protowire.AppendTag(b, envReplayed, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	ack := e.Kind == logging.EnvelopeAck
	if ack {
		for _, d := range e.Determinants {
			b = appendDeterminant(b, d, true)
		}
	}
	for _, p := range e.Progress {
		b = appendProgress(b, p)
	}
	b = protofield.AppendVarint(b, envTask, uint64(e.Task))
	b = protofield.AppendVarint(b, envEpoch, uint64(e.Epoch))
	b = protofield.AppendVarint(b, envCarry, e.Carry)
	if !ack && len(e.Determinants) > 0 {
		b = appendPackedField(b, e.Determinants)
	}
	return b
}

// appendPackedField appends ds as the packed_determinants field, packed
// once: the length is written after the bytes (endNested), which move
// when it takes more or fewer bytes than the guess left room for,
// instead of a pass over ds to size them first.
func appendPackedField(b []byte, ds []logging.Determinant) []byte {
	b, mark, room := beginNested(b, envPacked, packedGuess(len(ds)))
	return endNested(appendPackedDeterminants(b, ds), mark, room, 0)
}

// appendEnvelopeLast appends message envelope e like appendEnvelope,
// except that its payload comes last, after every other field of the
// envelope and of its message (protobuf takes fields in any order), and
// is left out: the bytes returned end with the payload's tag and length,
// and the payload must follow them, as the end of the batch.
func appendEnvelopeLast(b []byte, e *logging.Envelope) []byte {
	return appendEnvelopeLastLen(b, e, len(e.Message.Payload))
}

// appendEnvelopeLastLen is appendEnvelopeLast for a payload of plen
// bytes (more than 0), whatever e.Message.Payload holds.
func appendEnvelopeLastLen(b []byte, e *logging.Envelope, plen int) []byte {
	b, mark, room := beginNested(b, batchEnvelopes, sizeEnvelopeLen(e, 0, plen))
	b = protofield.AppendVarint(b, envKind, uint64(e.Kind))
	b = protofield.AppendVarint(b, envFrom, int32Varint(int32(e.From)))
	b = protofield.AppendVarint(b, envTo, int32Varint(int32(e.To)))
	b = appendEnvelopeRest(b, e)
	b = appendMessageHeadLen(b, &e.Message, 0, plen)
	b = appendMessageRest(b, &e.Message, 0)
	b = protowire.AppendTag(b, msgPayload, protowire.BytesType)
	return endNested(protowire.AppendVarint(b, uint64(plen)), mark, room, plen)
}

// maxBatchHeader bounds batchHeader's length.
const maxBatchHeader = 2 * (1 + 10)

// batchHeader appends a batch's job and generation fields; the envelopes
// follow (protobuf accepts fields in any order).
func batchHeader(b []byte, job, generation uint64) []byte {
	b = protofield.AppendVarint(b, batchJob, job)
	return protofield.AppendVarint(b, batchGeneration, generation)
}

// sharedPayloadMin is the smallest payload sent once per batch when
// several messages of the batch share it (a multicast's).
const sharedPayloadMin = 64

// payloadKey identifies a payload by its memory: the messages of one
// multicast share one marshalled payload (and keep sharing it in the
// sender log).
type payloadKey struct {
	first *byte
	n     int
}

// resolvePayloads gives every message of a received batch whose payload
// travelled with an earlier envelope that payload, or reports the batch
// malformed. It leaves no payload_from set, so an envelope can be
// forwarded on its own.
func resolvePayloads(b *wire.Batch) error {
	for i, w := range b.Envelopes {
		m := w.GetMessage()
		if m == nil || m.PayloadFrom == 0 {
			continue
		}
		k := int(m.PayloadFrom)
		if k > i || len(m.Payload) > 0 {
			return fmt.Errorf("envelope %d: payload_from %d (must name an earlier envelope, for a message without a payload of its own)", i+1, k)
		}
		src := b.Envelopes[k-1].GetMessage()
		if src == nil || len(src.Payload) == 0 {
			return fmt.Errorf("envelope %d: payload_from %d names an envelope without a payload", i+1, k)
		}
		m.Payload, m.PayloadFrom = src.Payload, 0
	}
	return nil
}

// detachMin is the smallest payload a batch does not copy, given a Net
// that takes a payload in parts (partsNet): the payload goes out from its
// own memory as the batch's tail (outBatch.addLast).
const detachMin = 16 << 10

// outBatch is a batch of envelopes being built for one PE: the encoded
// entries of its envelopes field.
type outBatch struct {
	buf []byte
	// mem is buf's memory with maxBatchHeader bytes before it, where
	// bytes puts the batch's header, so that a batch is sent without a
	// copy (while buf has not outgrown it: then reset makes a larger one).
	mem    []byte
	n      int  // envelopes
	nonAck bool // one of them is not an acknowledgement
	// tail, when not nil, is the payload of the last envelope, written
	// by addLast: the batch is buf then tail, and nothing more may be
	// added before it is sent.
	tail []byte
	// payloads are the envelopes (from 1) that carry each large payload
	// in this batch, for the others that share it; the entry keeps the
	// payload alive, so that its memory cannot be reused for another
	// while the batch is built. The batch's first such payload is in
	// firstKey and first, not in the map: a batch of one message (or of
	// messages that share one payload) makes no map entry.
	payloads map[payloadKey]sharedPayload
	firstKey payloadKey
	first    sharedPayload
}

type sharedPayload struct {
	envelope uint32
	keep     []byte
}

func (b *outBatch) reset() {
	if !b.inMem() && cap(b.buf) > 0 {
		// buf outgrew mem (or there was none): a larger mem, for the
		// next batches.
		b.mem = make([]byte, maxBatchHeader, maxBatchHeader+cap(b.buf))
		b.buf = b.mem[maxBatchHeader:]
	}
	b.buf, b.n, b.nonAck, b.tail = b.buf[:0], 0, false, nil
	b.firstKey, b.first = payloadKey{}, sharedPayload{}
	if len(b.payloads) > 0 {
		clear(b.payloads)
	}
}

// inMem reports whether buf lies in mem, after its header's room.
func (b *outBatch) inMem() bool {
	return cap(b.buf) > 0 && cap(b.mem) == maxBatchHeader+cap(b.buf) &&
		&b.mem[:maxBatchHeader+1][maxBatchHeader] == &b.buf[:1][0]
}

// bytes returns the batch's own bytes (not the tail) as a wire.Batch
// with job job and generation generation: in buf's memory when there is
// room before it, or else appended to spare.
func (b *outBatch) bytes(job, generation uint64, spare []byte) []byte {
	if b.inMem() {
		var h [maxBatchHeader]byte
		head := batchHeader(h[:0], job, generation)
		start := maxBatchHeader - len(head)
		copy(b.mem[start:], head)
		return b.mem[start : maxBatchHeader+len(b.buf)]
	}
	return append(batchHeader(spare[:0], job, generation), b.buf...)
}

// addEncoded appends message envelope e whose payload, of n bytes (more
// than 0), enc appends: straight into the batch, without a buffer of its
// own. It reports false, the batch unchanged, if enc failed or did not
// append n bytes.
func (b *outBatch) addEncoded(e *logging.Envelope, n int, enc func([]byte) ([]byte, error)) bool {
	mark := len(b.buf)
	buf := appendEnvelopeLastLen(b.buf, e, n)
	start := len(buf)
	buf, err := enc(buf)
	if err != nil || len(buf)-start != n {
		b.buf = buf[:mark]
		return false
	}
	b.buf = buf
	b.n++
	b.nonAck = true
	return true
}

// add appends e, sending a payload it shares with an earlier envelope of
// the batch only once.
func (b *outBatch) add(e *logging.Envelope) {
	var from uint32
	if p := e.Message.Payload; e.Kind == logging.EnvelopeMessage && len(p) >= sharedPayloadMin {
		k := payloadKey{&p[0], len(p)}
		switch {
		case b.firstKey.first == nil:
			b.firstKey, b.first = k, sharedPayload{uint32(b.n + 1), p}
		case k == b.firstKey:
			from = b.first.envelope
		default:
			if from = b.payloads[k].envelope; from == 0 {
				if b.payloads == nil {
					b.payloads = map[payloadKey]sharedPayload{}
				}
				b.payloads[k] = sharedPayload{uint32(b.n + 1), p}
			}
		}
	}
	b.buf = appendEnvelope(b.buf, e, from)
	b.n++
	b.nonAck = b.nonAck || e.Kind != logging.EnvelopeAck
}

// addLast appends message envelope e without copying its payload, which
// becomes the batch's tail (appendEnvelopeLast): the batch must be sent
// next. The payload's memory goes to the transport as it is, so nothing
// may write it again (a marshalled message of its own, or the sender
// log's copy; see PE.transmit).
func (b *outBatch) addLast(e *logging.Envelope) {
	b.buf = appendEnvelopeLast(b.buf, e)
	b.tail = e.Message.Payload
	b.n++
	b.nonAck = true
}
