package scheduler

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// randomID draws a message id, sometimes with a nested commutative path
// and sometimes with zero fields (which protobuf leaves out).
func randomID(r *rand.Rand, depth int) logging.MessageID {
	id := logging.MessageID{Sender: commutative.TaskID(r.Uint64N(3) * r.Uint64()), SRN: r.Uint64N(3) * r.Uint64N(1<<40)}
	if depth < 2 && r.IntN(3) == 0 {
		id.CPI = commutative.Child(randomID(r, depth+1), r.Uint32N(5))
	}
	return id
}

func randomEnvelope(r *rand.Rand) logging.Envelope {
	kinds := []logging.EnvelopeKind{logging.EnvelopeMessage, logging.EnvelopeAck, logging.EnvelopeRecovery}
	e := logging.Envelope{
		Kind: kinds[r.IntN(len(kinds))], From: logging.PEID(r.IntN(9)), To: logging.PEID(r.IntN(9)),
		Replayed: r.IntN(2) == 0, Task: commutative.TaskID(r.Uint64N(2) * r.Uint64()), Epoch: r.Uint32N(3),
		Carry: r.Uint64N(2) * (r.Uint64() >> r.IntN(64)),
	}
	if e.Kind == logging.EnvelopeMessage {
		m := logging.Message{ID: randomID(r, 0), To: commutative.TaskID(r.Uint64N(1 << 50)), Handler: r.Uint32N(3) << 16, Key: r.Uint64N(2) * r.Uint64()}
		m.Annotation.Order = commutative.Order(r.IntN(3))
		m.Annotation.RegionSize = r.IntN(3)
		if n := r.IntN(3); n > 0 {
			m.Payload = make([]byte, n*r.IntN(3000))
			for i := range m.Payload {
				m.Payload[i] = byte(r.Uint32())
			}
		}
		for range r.IntN(3) {
			m.Requires = append(m.Requires, logging.Dependency{Task: commutative.TaskID(r.Uint64N(100)), Trigger: randomID(r, 0)})
		}
		e.Message = m
	}
	for range r.IntN(3) {
		creator, seq := randomStamp(r)
		e.Determinants = append(e.Determinants, logging.Determinant{Message: randomID(r, 0), Receiver: commutative.TaskID(r.Uint64N(100)), RSN: r.Uint64N(1000),
			Creator: creator, Seq: seq})
	}
	for range r.IntN(3) {
		creator, seq := randomStamp(r)
		// Values of every varint length (the encoder and decoder write
		// and read records by hand).
		e.Progress = append(e.Progress, logging.Progress{Task: commutative.TaskID(r.Uint64() >> r.IntN(64)), RSN: r.Uint64() >> r.IntN(64), Creator: creator, Seq: seq})
	}
	return e
}

// randomStamp is an event logger's stamp half the time, none otherwise.
func randomStamp(r *rand.Rand) (logging.PEID, uint64) {
	if r.IntN(2) == 0 {
		return 0, 0
	}
	return logging.PEID(r.IntN(10) - 2), r.Uint64N(1 << 40) // a logger's PE number is negative
}

// The hand-written encoder writes, envelope by envelope, the bytes
// proto.Marshal writes for envelopeToWire, and a whole batch decodes to
// the batch proto.Marshal would have sent.
func TestEncoderMatchesProtoMarshal(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 7))
		job, gen := r.Uint64N(2)*r.Uint64(), r.Uint64N(3)
		want := &wire.Batch{Job: job, Generation: gen}
		buf := batchHeader(nil, job, gen)
		for range r.IntN(4) {
			e := randomEnvelope(r)
			w := envelopeToWire(e)
			want.Envelopes = append(want.Envelopes, w)
			entry := appendEnvelope(nil, &e, 0)
			buf = append(buf, entry...)

			exact, err := proto.Marshal(w)
			require.NoError(t, err)
			num, typ, n := protowire.ConsumeTag(entry)
			require.Equal(t, protowire.Number(batchEnvelopes), num, "seed %d", seed)
			require.Equal(t, protowire.BytesType, typ, "seed %d", seed)
			body, m := protowire.ConsumeBytes(entry[n:])
			require.Equal(t, len(entry), n+m, "seed %d", seed)
			require.Equal(t, exact, body, "seed %d: envelope %+v", seed, e)
		}
		got := &wire.Batch{}
		require.NoError(t, proto.Unmarshal(buf, got), "seed %d", seed)
		require.True(t, proto.Equal(want, got), "seed %d", seed)
	}
}

// BenchmarkEncodeEnvelope compares the encoder with envelopeToWire plus
// proto.Marshal on a LeanMD-sized message (1.8 KB payload, a path).
func BenchmarkEncodeEnvelope(b *testing.B) {
	e := logging.Envelope{Kind: logging.EnvelopeMessage, From: 1, To: 2, Message: logging.Message{
		ID: logging.MessageID{Sender: 12345, SRN: 678, CPI: commutative.Child(logging.MessageID{Sender: 3, SRN: 9}, 2)},
		To: 99, Handler: 1<<16 | 2, Payload: make([]byte, 1800),
	}, Progress: []logging.Progress{{Task: 12345, RSN: 40}}}
	b.Run("encoder", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendEnvelope(buf[:0], &e, 0)
		}
	})
	b.Run("proto", func(b *testing.B) {
		for b.Loop() {
			if _, err := proto.Marshal(&wire.Batch{Envelopes: []*wire.Envelope{envelopeToWire(e)}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A payload several messages of a batch share (a multicast's) travels
// once: the batch is smaller, and once resolved it holds the envelopes
// proto.Marshal would have sent. An envelope whose payload_from does not
// name an earlier envelope with a payload makes the batch malformed.
func TestSharedPayloadTravelsOncePerBatch(t *testing.T) {
	shared := make([]byte, 1800)
	for i := range shared {
		shared[i] = byte(i)
	}
	small := []byte("tiny")
	var envs []logging.Envelope
	for i := range 6 {
		p := shared
		if i == 4 {
			p = small // below the threshold: always sent as is
		}
		envs = append(envs, logging.Envelope{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{
			ID: logging.MessageID{Sender: 7, SRN: uint64(i + 1)}, To: commutative.TaskID(10 + i), Handler: 1, Payload: p,
		}})
	}
	// A second shared payload (the batch's first one is kept apart from
	// the others: outBatch.firstKey).
	other := append([]byte(nil), shared[:900]...)
	for i := range 2 {
		envs = append(envs, logging.Envelope{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{
			ID: logging.MessageID{Sender: 8, SRN: uint64(i + 1)}, To: 20, Handler: 1, Payload: other,
		}})
	}
	envs = append(envs, logging.Envelope{Kind: logging.EnvelopeAck, From: 0, To: 1, Progress: []logging.Progress{{Task: 7, RSN: 3}}})

	var ob outBatch
	want := &wire.Batch{Job: 5, Generation: 1}
	for i := range envs {
		ob.add(&envs[i])
		want.Envelopes = append(want.Envelopes, envelopeToWire(envs[i]))
	}
	full, err := proto.Marshal(want)
	require.NoError(t, err)
	buf := append(batchHeader(nil, 5, 1), ob.buf...)
	require.Less(t, len(buf), len(full)-4*len(shared)-len(other), "a shared payload went more than once")

	got := &wire.Batch{}
	require.NoError(t, proto.Unmarshal(buf, got))
	require.Equal(t, uint32(1), got.Envelopes[1].Message.PayloadFrom)
	require.Equal(t, uint32(7), got.Envelopes[7].Message.PayloadFrom)
	require.NoError(t, resolvePayloads(got))
	require.True(t, proto.Equal(want, got))

	for _, bad := range []func(b *wire.Batch){
		func(b *wire.Batch) { b.Envelopes[0].Message.PayloadFrom = 1 },  // itself
		func(b *wire.Batch) { b.Envelopes[1].Message.PayloadFrom = 3 },  // a later one
		func(b *wire.Batch) { b.Envelopes[2].Message.PayloadFrom = 7 },  // no such envelope
		func(b *wire.Batch) { b.Envelopes[2].Message.Payload = shared }, // both
		func(b *wire.Batch) { b.Envelopes[0].Message.Payload = nil },    // the one named has no payload
	} {
		b := &wire.Batch{}
		require.NoError(t, proto.Unmarshal(buf, b))
		bad(b)
		require.Error(t, resolvePayloads(b))
	}
}

// envelopeToWire builds the wire objects of e field by field, the
// reference the encoder is checked against.
func envelopeToWire(e logging.Envelope) *wire.Envelope {
	w := &wire.Envelope{Kind: uint32(e.Kind), From: int32(e.From), To: int32(e.To), Replayed: e.Replayed, Task: uint64(e.Task), Epoch: e.Epoch, Carry: e.Carry}
	// (Forwarded is set only by forward.)
	if e.Kind == logging.EnvelopeMessage {
		m := e.Message
		w.Message = &wire.Message{
			Id: idToWire(m.ID), To: uint64(m.To), Handler: m.Handler,
			Order: uint32(m.Annotation.Order), RegionSize: uint32(m.Annotation.RegionSize),
			Key: m.Key, Payload: m.Payload,
		}
		for _, d := range m.Requires {
			w.Message.Requires = append(w.Message.Requires, &wire.Dependency{Task: uint64(d.Task), Trigger: idToWire(d.Trigger)})
		}
	}
	if e.Kind == logging.EnvelopeAck {
		// An acknowledgement's determinants go without their message.
		for _, d := range e.Determinants {
			w.Determinants = append(w.Determinants, &wire.Determinant{Receiver: uint64(d.Receiver), Rsn: d.RSN, Creator: int32(d.Creator), Seq: d.Seq})
		}
	} else if len(e.Determinants) > 0 {
		w.PackedDeterminants = appendPackedDeterminants(nil, e.Determinants)
	}
	for _, p := range e.Progress {
		w.Progress = append(w.Progress, &wire.Progress{Task: uint64(p.Task), Rsn: p.RSN, Creator: int32(p.Creator), Seq: p.Seq})
	}
	return w
}

// A batch ending with an envelope written by appendEnvelopeLast, then
// its payload, decodes (through proto.Unmarshal and through the
// hand-written decoder) to the batch proto.Marshal would have sent.
func TestEnvelopeWithPayloadLastDecodes(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 11))
		job, gen := r.Uint64N(2)*r.Uint64(), r.Uint64N(3)
		want := &wire.Batch{Job: job, Generation: gen}
		buf := batchHeader(nil, job, gen)
		for range r.IntN(3) {
			e := randomEnvelope(r)
			want.Envelopes = append(want.Envelopes, envelopeToWire(e))
			buf = appendEnvelope(buf, &e, 0)
		}
		var e logging.Envelope
		for e.Kind != logging.EnvelopeMessage {
			e = randomEnvelope(r)
		}
		e.Message.Payload = make([]byte, 1+r.IntN(3*detachMin))
		for i := range e.Message.Payload {
			e.Message.Payload[i] = byte(r.Uint32())
		}
		want.Envelopes = append(want.Envelopes, envelopeToWire(e))
		buf = append(appendEnvelopeLast(buf, &e), e.Message.Payload...)

		got := &wire.Batch{}
		require.NoError(t, proto.Unmarshal(buf, got), "seed %d", seed)
		require.True(t, proto.Equal(want, got), "seed %d", seed)
		d := new(batchDecoder)
		require.NoError(t, d.decode(buf), "seed %d", seed)
		require.Len(t, d.envelopes, len(want.Envelopes))
		last := d.envelopes[len(d.envelopes)-1]
		require.True(t, bytes.Equal(e.Message.Payload, last.payload), "seed %d", seed)
		require.Same(t, &buf[len(buf)-len(e.Message.Payload)], &last.payload[0], "seed %d: the payload is the batch's end", seed)
	}
}

// A batch's bytes are its header then its envelopes, the same whether
// they lie in the batch's own memory (after a first batch sized it) or
// are copied; from the second batch on they are in that memory, and an
// envelope whose encoder does not append what it announced leaves the
// batch as it was.
func TestOutBatchBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	var ob outBatch
	var spare []byte
	for round := range 4 {
		var want []byte
		n := 1 // a first batch larger than the next ones, which fit its memory
		if round == 0 {
			n = 40
		}
		for range n {
			e := randomEnvelope(r)
			ob.add(&e)
			want = appendEnvelope(want, &e, 0)
		}
		e := randomEnvelope(r)
		e.Kind = logging.EnvelopeMessage
		before := len(ob.buf)
		require.False(t, ob.addEncoded(&e, 10, func(b []byte) ([]byte, error) { return append(b, 1, 2, 3), nil }))
		require.Len(t, ob.buf, before, "a short encoding leaves the batch as it was")
		job, gen := r.Uint64(), r.Uint64N(5)
		got := ob.bytes(job, gen, spare)
		require.Equal(t, append(batchHeader(nil, job, gen), want...), got, "round %d", round)
		if round > 0 {
			require.True(t, ob.inMem(), "round %d: in the batch's memory", round)
			require.Same(t, &ob.buf[0], &got[len(got)-len(ob.buf)], "round %d: not copied", round)
		}
		ob.reset()
	}
}

// A nested field begun with a wrong guess of its length ends as if its
// length had been known: the body moves when the length's varint takes
// more or fewer bytes than the room left for it, and bytes the caller
// appends after it (extra) count.
func TestEndNestedMatchesKnownLength(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 129, 16383, 16384, 20000} {
		for _, guess := range []int{0, 5, 127, 128, 16383, 16384, 1 << 21} {
			for _, extra := range []int{0, 1, 200} {
				if extra > n {
					continue
				}
				body := make([]byte, n-extra)
				for i := range body {
					body[i] = byte(i * 7)
				}
				want := append(appendNestedHeader([]byte("pre"), batchEnvelopes, n), body...)
				b, mark, room := beginNested([]byte("pre"), batchEnvelopes, guess)
				got := endNested(append(b, body...), mark, room, extra)
				require.Equal(t, want, got, "length %d, guess %d, extra %d", n, guess, extra)
			}
		}
	}
}
