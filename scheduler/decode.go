package scheduler

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// A hand-written decoder for the batches a PE receives, the mirror of
// encode.go: it reads a wire.Batch's bytes straight into logging.Envelope
// values, without the wire objects proto.Unmarshal builds (a dozen per
// message) and without copying payloads: a message's Payload is a slice
// of the received buffer, which the transport hands over to the PE
// (transport.Handler.Receive) and which nothing writes afterwards but
// the handler of the one message whose payload it is (the protocol
// copies a payload it logs; a handler's message aliases the payload it
// came in, unless other envelopes share it: unmarshal.go).
//
// It accepts and rejects what proto.Unmarshal, resolvePayloads and
// envelopeFromWire accept and reject, with the same envelopes and errors
// (FuzzDecodeBatch checks it): fields in any order, the last of a scalar
// field wins, unknown fields and known ones of another wire type are
// skipped. What it leaves to the proto path (errFallback): a checkpoint
// batch, and a singular message field given twice (protobuf merges the
// two).
//
// The decoding state is a batchDecoder the PE keeps and reuses, so that
// a batch of plain messages and acknowledgements costs no allocation. The
// Requires and Progress slices of message and recovery envelopes are the
// exception: the protocol keeps them (a buffered message, the
// acknowledgement of the records a message piggybacks, an envelope for a
// task not placed yet), so each batch that has any gets one new array of
// each, shared by its envelopes. Determinants, and an acknowledgement's
// records, which Protocol.Arrive reads and does not keep, are in arrays
// the decoder reuses (under FullDet a PE receives every determinant of
// the job, most of them more than once: a new array per batch was a
// tenth of a LeanMD PE's allocations).

// Field numbers of scheduler/wire/wire.proto the encoder does not write
// (the others are in encode.go).
const (
	batchCheckpointKind = 4
	envForwarded        = 10
)

// errFallback says the batch is one the decoder leaves to proto.Unmarshal.
var errFallback = errors.New("left to the proto decoder")

// rawID is a wire.MessageID as read (cpi aliases the batch).
type rawID struct {
	sender, srn uint64
	cpi         []byte
	set         bool
}

type rawDependency struct {
	task    uint64
	trigger rawID
}

type rawDeterminant struct {
	message                     rawID
	receiver, rsn, creator, seq uint64
}

type rawProgress struct{ task, rsn, creator, seq uint64 }

// span is a range of one of batchDecoder's arrays.
type span struct{ from, to int32 }

// rawEnvelope is a wire.Envelope as read; its message's payload aliases
// the batch.
type rawEnvelope struct {
	kind                   uint32
	from, to               int32
	replayed, forwarded    bool
	task, carry            uint64
	epoch                  uint32
	determinants, progress span
	// packed is the packed_determinants field, read into determinants
	// after the others once the envelope is read; packedErr says it was
	// malformed (an error of the envelope, as envelopeFromWire's). When
	// the envelope has no other determinant (a piggyback), they are read
	// converted, into converted of packedDeterminants (unpackInto).
	packed    []byte
	packedErr error
	direct    bool
	converted span

	hasMessage                 bool
	id                         rawID
	msgTo, key                 uint64
	handler, order, regionSize uint32
	payload                    []byte
	payloadFrom                uint32
	requires                   span
	// shared: another envelope of the batch has the same payload.
	shared bool
}

// batchDecoder decodes one batch at a time; its arrays are reused.
type batchDecoder struct {
	job, generation uint64
	envelopes       []rawEnvelope
	dependencies    []rawDependency
	determinants    []rawDeterminant
	progress        []rawProgress
	// The arrays handed out to this batch's envelopes (see envelope).
	outRequires []logging.Dependency
	outProgress []logging.Progress
	// The reused arrays of the envelopes' determinants (packedDeterminants
	// those read converted: rawEnvelope.converted) and of the
	// acknowledgements' progress records.
	packedDeterminants []logging.Determinant
	outDeterminants    []logging.Determinant
	ackDeterminants    []logging.Determinant
	ackProgress        []logging.Progress
}

// reset forgets the last batch (and the references into its buffer).
func (d *batchDecoder) reset() {
	clear(d.envelopes)
	clear(d.dependencies)
	clear(d.determinants)
	d.envelopes, d.dependencies, d.determinants, d.progress = d.envelopes[:0], d.dependencies[:0], d.determinants[:0], d.progress[:0]
	d.outRequires, d.outProgress = nil, nil
	clear(d.outDeterminants)
	clear(d.packedDeterminants)
	d.outDeterminants, d.packedDeterminants = d.outDeterminants[:0], d.packedDeterminants[:0]
	clear(d.ackDeterminants)
	d.ackDeterminants, d.ackProgress = d.ackDeterminants[:0], d.ackProgress[:0]
	d.job, d.generation = 0, 0
}

var (
	errTruncated = errors.New("truncated or invalid field")
	errTag       = errors.New("invalid field number")
)

// field reads one field's tag of b. A tag of one byte (fields 1 to 15)
// is read here, without protowire's call.
func field(b []byte) (protowire.Number, protowire.Type, int, error) {
	if len(b) > 0 && b[0] < 0x80 && b[0]>>3 != 0 && protowire.Type(b[0]&7) != protowire.EndGroupType {
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1, nil
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, 0, protowire.ParseError(n)
	}
	if num > protowire.MaxValidNumber {
		return 0, 0, 0, errTag
	}
	if typ == protowire.EndGroupType {
		return 0, 0, 0, fmt.Errorf("unmatched end group of field %d", num)
	}
	return num, typ, n, nil
}

// skip consumes the value of an unknown field (or a known one of another
// wire type, which protobuf treats alike).
func skip(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
	n := protowire.ConsumeFieldValue(num, typ, b)
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	return n, nil
}

func varint(b []byte) (uint64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil
	}
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, protowire.ParseError(n)
	}
	return v, n, nil
}

func nested(b []byte) ([]byte, int, error) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) {
		n := 1 + int(b[0])
		return b[1:n:n], n, nil
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, 0, protowire.ParseError(n)
	}
	return v, n, nil
}

// decode reads a whole batch: any error is the batch's (it is malformed),
// or errFallback.
func (d *batchDecoder) decode(b []byte) error {
	if err := d.parse(b); err != nil {
		return err
	}
	return d.resolvePayloads()
}

// parse is decode without resolvePayloads: the part proto.Unmarshal does.
func (d *batchDecoder) parse(b []byte) error {
	checkpoint := uint64(0)
	for len(b) > 0 {
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case num == batchJob && typ == protowire.VarintType:
			d.job, n, err = varint(b)
		case num == batchGeneration && typ == protowire.VarintType:
			d.generation, n, err = varint(b)
		case num == batchCheckpointKind && typ == protowire.VarintType:
			checkpoint, n, err = varint(b)
		case num == batchEnvelopes && typ == protowire.BytesType:
			var v []byte
			if v, n, err = nested(b); err == nil {
				err = d.readEnvelope(v)
			}
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	if int32(checkpoint) != 0 {
		return errFallback
	}
	return nil
}

func (d *batchDecoder) readEnvelope(b []byte) error {
	d.envelopes = append(d.envelopes, rawEnvelope{})
	e := &d.envelopes[len(d.envelopes)-1]
	e.determinants = span{int32(len(d.determinants)), int32(len(d.determinants))}
	e.progress = span{int32(len(d.progress)), int32(len(d.progress))}
	for len(b) > 0 {
		if len(b) > 1 && b[0] == envProgress<<3|byte(protowire.BytesType) && b[1] < 0x80 && int(b[1]) <= len(b)-2 {
			// A progress record as appendProgress writes it (a one-byte
			// length), without the general helpers' calls.
			size := 2 + int(b[1])
			if err := d.progressRecord(b[2:size]); err != nil {
				return err
			}
			e.progress.to = int32(len(d.progress))
			b = b[size:]
			continue
		}
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		if typ == protowire.VarintType && num != envMessage && num != envDeterminants && num != envProgress {
			var v uint64
			if v, n, err = varint(b); err != nil {
				return err
			}
			switch num {
			case envKind:
				e.kind = uint32(v)
			case envFrom:
				e.from = int32(v)
			case envTo:
				e.to = int32(v)
			case envReplayed:
				e.replayed = v != 0
			case envTask:
				e.task = v
			case envEpoch:
				e.epoch = uint32(v)
			case envForwarded:
				e.forwarded = v != 0
			case envCarry:
				e.carry = v
			}
			b = b[n:]
			continue
		}
		var v []byte
		switch {
		case typ == protowire.BytesType && num == envMessage:
			if e.hasMessage {
				return errFallback
			}
			e.hasMessage = true
			if v, n, err = nested(b); err == nil {
				err = d.message(e, v)
			}
		case typ == protowire.BytesType && num == envDeterminants:
			if v, n, err = nested(b); err == nil {
				err = d.determinant(v)
				e.determinants.to = int32(len(d.determinants))
			}
		case typ == protowire.BytesType && num == envProgress:
			if v, n, err = nested(b); err == nil {
				err = d.progressRecord(v)
				e.progress.to = int32(len(d.progress))
			}
		case typ == protowire.BytesType && num == envPacked:
			e.packed, n, err = nested(b)
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	if len(e.packed) > 0 && e.determinants.from == e.determinants.to {
		from := len(d.packedDeterminants)
		d.packedDeterminants, e.packedErr = unpackInto(d.packedDeterminants, e.packed)
		e.direct, e.converted = true, span{int32(from), int32(len(d.packedDeterminants))}
	} else if len(e.packed) > 0 {
		d.determinants, e.packedErr = unpackDeterminants(d.determinants, e.packed)
		e.determinants.to = int32(len(d.determinants))
	}
	return nil
}

func (d *batchDecoder) message(e *rawEnvelope, b []byte) error {
	e.requires = span{int32(len(d.dependencies)), int32(len(d.dependencies))}
	for len(b) > 0 {
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num != msgID && num != msgPayload && num != msgRequires:
			var v uint64
			if v, n, err = varint(b); err != nil {
				return err
			}
			switch num {
			case msgTo:
				e.msgTo = v
			case msgHandler:
				e.handler = uint32(v)
			case msgOrder:
				e.order = uint32(v)
			case msgRegionSize:
				e.regionSize = uint32(v)
			case msgKey:
				e.key = v
			case msgPayloadFrom:
				e.payloadFrom = uint32(v)
			}
		case typ == protowire.BytesType && num == msgID:
			var v []byte
			if v, n, err = nested(b); err == nil {
				err = readID(&e.id, v)
			}
		case typ == protowire.BytesType && num == msgPayload:
			var v []byte
			if v, n, err = nested(b); err == nil {
				e.payload = nil
				if len(v) > 0 {
					e.payload = v[:len(v):len(v)]
				}
			}
		case typ == protowire.BytesType && num == msgRequires:
			var v []byte
			if v, n, err = nested(b); err == nil {
				err = d.dependency(v)
				e.requires.to = int32(len(d.dependencies))
			}
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// readID reads a MessageID into id, which must not be set yet.
func readID(id *rawID, b []byte) error {
	if id.set {
		return errFallback
	}
	id.set = true
	for len(b) > 0 {
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num == idSender:
			id.sender, n, err = varint(b)
		case typ == protowire.VarintType && num == idSRN:
			id.srn, n, err = varint(b)
		case typ == protowire.BytesType && num == idCPI:
			id.cpi, n, err = nested(b)
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (d *batchDecoder) dependency(b []byte) error {
	d.dependencies = append(d.dependencies, rawDependency{})
	dep := &d.dependencies[len(d.dependencies)-1]
	for len(b) > 0 {
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num == depTask:
			dep.task, n, err = varint(b)
		case typ == protowire.BytesType && num == depTrigger:
			var v []byte
			if v, n, err = nested(b); err == nil {
				err = readID(&dep.trigger, v)
			}
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (d *batchDecoder) determinant(b []byte) error {
	d.determinants = append(d.determinants, rawDeterminant{})
	det := &d.determinants[len(d.determinants)-1]
	for len(b) > 0 {
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && num == detMessage:
			var v []byte
			if v, n, err = nested(b); err == nil {
				err = readID(&det.message, v)
			}
		case typ == protowire.VarintType && num == detReceiver:
			det.receiver, n, err = varint(b)
		case typ == protowire.VarintType && num == detRSN:
			det.rsn, n, err = varint(b)
		case typ == protowire.VarintType && num == detCreator:
			det.creator, n, err = varint(b)
		case typ == protowire.VarintType && num == detSeq:
			det.seq, n, err = varint(b)
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (d *batchDecoder) progressRecord(b []byte) error {
	d.progress = append(d.progress, rawProgress{})
	p := &d.progress[len(d.progress)-1]
	for len(b) > 0 {
		// The fields appendProgress writes: a one-byte tag and a varint,
		// read here without the general helpers' calls (a record's fields
		// are most of what partialdet adds to an envelope).
		var to *uint64
		switch b[0] {
		case progTask<<3 | byte(protowire.VarintType):
			to = &p.task
		case progRSN<<3 | byte(protowire.VarintType):
			to = &p.rsn
		case progCreator<<3 | byte(protowire.VarintType):
			to = &p.creator
		case progSeq<<3 | byte(protowire.VarintType):
			to = &p.seq
		}
		if to != nil {
			if len(b) > 1 && b[1] < 0x80 {
				*to, b = uint64(b[1]), b[2:]
				continue
			}
			v, n, err := varint(b[1:])
			if err != nil {
				return err
			}
			*to, b = v, b[1+n:]
			continue
		}
		num, typ, n, err := field(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num == progTask:
			p.task, n, err = varint(b)
		case typ == protowire.VarintType && num == progRSN:
			p.rsn, n, err = varint(b)
		case typ == protowire.VarintType && num == progCreator:
			p.creator, n, err = varint(b)
		case typ == protowire.VarintType && num == progSeq:
			p.seq, n, err = varint(b)
		default:
			n, err = skip(num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// resolvePayloads is resolvePayloads (encode.go) on the envelopes read.
func (d *batchDecoder) resolvePayloads() error {
	for i := range d.envelopes {
		e := &d.envelopes[i]
		if !e.hasMessage || e.payloadFrom == 0 {
			continue
		}
		k := int(e.payloadFrom)
		if k > i || len(e.payload) > 0 {
			return fmt.Errorf("envelope %d: payload_from %d (must name an earlier envelope, for a message without a payload of its own)", i+1, k)
		}
		src := &d.envelopes[k-1]
		if !src.hasMessage || len(src.payload) == 0 {
			return fmt.Errorf("envelope %d: payload_from %d names an envelope without a payload", i+1, k)
		}
		e.payload, e.payloadFrom = src.payload, 0
		e.shared, src.shared = true, true
	}
	return nil
}

func idFromRaw(w *rawID) (logging.MessageID, error) {
	if !w.set {
		return logging.MessageID{}, fmt.Errorf("%w: missing message id", ErrMalformed)
	}
	cpi, err := commutative.ParsePath(w.cpi)
	if err != nil {
		return logging.MessageID{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return logging.MessageID{Sender: commutative.TaskID(w.sender), SRN: w.srn, CPI: cpi}, nil
}

// take returns n elements of *block, which it first replaces with a
// new array of total elements if it has not room for n.
func take[T any](block *[]T, n, total int) []T {
	if n == 0 {
		return nil
	}
	if cap(*block)-len(*block) < n {
		*block = make([]T, 0, total)
	}
	s := (*block)[len(*block) : len(*block)+n : len(*block)+n]
	*block = (*block)[:len(*block)+n]
	return s
}

// envelope converts and checks the i-th envelope of the batch, from PE
// from at PE self of a job of size PEs, as envelopeFromWire does. The
// records of an acknowledgement are valid until reset.
func (d *batchDecoder) envelope(i, from, self, size int) (logging.Envelope, error) {
	w := &d.envelopes[i]
	e := logging.Envelope{Kind: logging.EnvelopeKind(w.kind), From: logging.PEID(w.from), To: logging.PEID(w.to), Replayed: w.replayed, Task: commutative.TaskID(w.task), Epoch: w.epoch, Carry: w.carry}
	if (int(w.from) != from && !w.forwarded) || w.from < 0 || int(w.from) >= size || int(w.to) != self {
		return e, fmt.Errorf("%w: envelope from PE %d to PE %d arrived from PE %d at PE %d", ErrMalformed, w.from, w.to, from, self)
	}
	switch e.Kind {
	case logging.EnvelopeMessage:
		if !w.hasMessage {
			return e, fmt.Errorf("%w: message envelope without a message", ErrMalformed)
		}
		id, err := idFromRaw(&w.id)
		if err != nil {
			return e, err
		}
		if w.order > uint32(commutative.Commutative) {
			return e, fmt.Errorf("%w: order %d", ErrMalformed, w.order)
		}
		if commutative.Order(w.order) == commutative.Commutative && w.regionSize < 1 {
			return e, fmt.Errorf("%w: commutative region of %d messages", ErrMalformed, w.regionSize)
		}
		e.Message = logging.Message{
			ID: id, To: commutative.TaskID(w.msgTo), Handler: w.handler,
			Annotation: commutative.Annotation{Order: commutative.Order(w.order), RegionSize: int(w.regionSize)},
			Key:        w.key, Payload: w.payload,
		}
		raw := d.dependencies[w.requires.from:w.requires.to]
		e.Message.Requires = take(&d.outRequires, len(raw), len(d.dependencies))
		for j := range raw {
			trig, err := idFromRaw(&raw[j].trigger)
			if err != nil {
				e.Message.Requires = nil
				return e, err
			}
			e.Message.Requires[j] = logging.Dependency{Task: commutative.TaskID(raw[j].task), Trigger: trig}
		}
	case logging.EnvelopeAck, logging.EnvelopeRecovery:
	default:
		return e, fmt.Errorf("%w: envelope kind %d", ErrMalformed, w.kind)
	}
	dets, progress := &d.outDeterminants, &d.outProgress
	if e.Kind == logging.EnvelopeAck {
		dets, progress = &d.ackDeterminants, &d.ackProgress
	}
	if w.direct {
		if w.packedErr != nil {
			return e, fmt.Errorf("%w: %v", ErrMalformed, w.packedErr)
		}
		c := w.converted
		if c.from < c.to {
			e.Determinants = d.packedDeterminants[c.from:c.to:c.to]
		}
		return d.progressOf(e, w, progress), nil
	}
	raw := d.determinants[w.determinants.from:w.determinants.to]
	e.Determinants = take(dets, len(raw), len(d.determinants))
	for j := range raw {
		var id logging.MessageID
		var err error
		if e.Kind != logging.EnvelopeAck || raw[j].message.set {
			// An acknowledgement's determinants may come without their
			// message (appendDeterminant).
			id, err = idFromRaw(&raw[j].message)
		}
		if err != nil {
			e.Determinants = nil
			return e, err
		}
		e.Determinants[j] = logging.Determinant{Message: id, Receiver: commutative.TaskID(raw[j].receiver), RSN: raw[j].rsn,
			Creator: logging.PEID(int32(raw[j].creator)), Seq: raw[j].seq}
	}
	if w.packedErr != nil {
		e.Determinants = nil
		return e, fmt.Errorf("%w: %v", ErrMalformed, w.packedErr)
	}
	return d.progressOf(e, w, progress), nil
}

// progressOf sets e's progress records, w's as read, in *progress.
func (d *batchDecoder) progressOf(e logging.Envelope, w *rawEnvelope, progress *[]logging.Progress) logging.Envelope {
	records := d.progress[w.progress.from:w.progress.to]
	e.Progress = take(progress, len(records), len(d.progress))
	for j, p := range records {
		e.Progress[j] = logging.Progress{Task: commutative.TaskID(p.task), RSN: p.rsn, Creator: logging.PEID(int32(p.creator)), Seq: p.seq}
	}
	return e
}
