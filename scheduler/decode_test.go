package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// batchResult is what a PE makes of a batch: the batch's error, or its
// header and each envelope or the envelope's error.
type batchResult struct {
	// Err is "malformed" for bytes that are no wire.Batch, else the text
	// of resolvePayloads' error.
	Err             string
	Job, Generation uint64
	Envelopes       []logging.Envelope
	Errs            []string
}

func (r *batchResult) add(env logging.Envelope, err error) {
	if err != nil {
		r.Envelopes = append(r.Envelopes, logging.Envelope{})
		r.Errs = append(r.Errs, err.Error())
		return
	}
	r.Envelopes = append(r.Envelopes, env)
	r.Errs = append(r.Errs, "")
}

// protoDecode is the reference: proto.Unmarshal, resolvePayloads and
// envelopeFromWire. checkpoint reports a checkpoint batch (its envelopes
// are not read).
func protoDecode(b []byte, from, self, size int) (r batchResult, checkpoint bool) {
	var w wire.Batch
	if err := proto.Unmarshal(b, &w); err != nil {
		return batchResult{Err: "malformed"}, false
	}
	if err := resolvePayloads(&w); err != nil {
		return batchResult{Err: err.Error()}, false
	}
	r.Job, r.Generation = w.Job, w.Generation
	if w.CheckpointKind != wire.CheckpointKind_CHECKPOINT_NONE {
		return r, true
	}
	for _, e := range w.Envelopes {
		r.add(envelopeFromWire(e, from, self, size))
	}
	return r, false
}

// fastDecode decodes b with d; fallback reports a batch d leaves to the
// proto path.
func fastDecode(d *batchDecoder, b []byte, from, self, size int) (r batchResult, fallback bool) {
	defer d.reset()
	err := d.parse(b)
	if errors.Is(err, errFallback) {
		return r, true
	}
	if err != nil {
		return batchResult{Err: "malformed"}, false
	}
	if err := d.resolvePayloads(); err != nil {
		return batchResult{Err: err.Error()}, false
	}
	r.Job, r.Generation = d.job, d.generation
	for i := range d.envelopes {
		env, err := d.envelope(i, from, self, size)
		// An acknowledgement's records are the decoder's until reset.
		env.Determinants, env.Progress = slices.Clone(env.Determinants), slices.Clone(env.Progress)
		r.add(env, err)
	}
	return r, false
}

// randomBatch is a batch as PE from sends it to PE self of a job of size
// PEs: random envelopes (every kind, with determinants, progress,
// requires, paths; a few with a wrong sender or receiver), some messages
// sharing a payload (a multicast's), put in an outBatch.
func randomBatch(r *rand.Rand, from, self, size int) []byte {
	var ob outBatch
	var envs []logging.Envelope
	for range r.IntN(8) {
		e := randomEnvelope(r)
		e.From, e.To = logging.PEID(from), logging.PEID(self)
		if r.IntN(10) == 0 {
			e.From = logging.PEID(r.IntN(size + 1))
		}
		if r.IntN(10) == 0 {
			e.To = logging.PEID(r.IntN(size + 1))
		}
		if e.Kind == logging.EnvelopeMessage && r.IntN(3) == 0 {
			for _, o := range envs {
				if o.Kind == logging.EnvelopeMessage && len(o.Message.Payload) >= sharedPayloadMin {
					e.Message.Payload = o.Message.Payload
					break
				}
			}
		}
		envs = append(envs, e)
	}
	for i := range envs {
		e := &envs[i]
		if p := e.Message.Payload; e.Kind == logging.EnvelopeMessage && len(p) > 0 && r.IntN(3) == 0 {
			// Encoded into the batch, as a given message is (addGiven).
			e.Message.Payload = nil
			ok := ob.addEncoded(e, len(p), func(b []byte) ([]byte, error) { return append(b, p...), nil })
			e.Message.Payload = p
			if ok {
				continue
			}
			panic("addEncoded refused its payload")
		}
		ob.add(e)
	}
	return append(batchHeader(nil, r.Uint64N(2)*r.Uint64(), r.Uint64N(3)), ob.buf...)
}

// The decoder makes of the batches PEs send what the proto path makes of
// them, without falling back to it.
func TestDecoderMatchesProto(t *testing.T) {
	var d batchDecoder
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 11))
		size := 1 + r.IntN(4)
		from, self := r.IntN(size), r.IntN(size)
		b := randomBatch(r, from, self, size)
		want, checkpoint := protoDecode(b, from, self, size)
		require.False(t, checkpoint)
		got, fallback := fastDecode(&d, b, from, self, size)
		require.False(t, fallback, "seed %d", seed)
		require.Equal(t, want, got, "seed %d", seed)
	}
}

// oddBatches are encodings proto.Marshal does not write but
// proto.Unmarshal accepts (or rejects): fields out of order, repeated
// scalars, unknown fields of every wire type, known fields of another
// wire type, a forwarded envelope, a checkpoint; and some broken ones.
func oddBatches(t testing.TB) [][]byte {
	good := goodMessage(t)
	env, err := proto.Marshal(good)
	require.NoError(t, err)
	wrap := func(n protowire.Number, body []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), body)
	}
	varintField := func(n protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	msg, err := proto.Marshal(good.Message)
	require.NoError(t, err)
	id, err := proto.Marshal(good.Message.Id)
	require.NoError(t, err)
	group := cat(protowire.AppendTag(nil, 40, protowire.StartGroupType), varintField(1, 5), protowire.AppendTag(nil, 40, protowire.EndGroupType))
	unknown := cat(varintField(33, 7), protowire.AppendFixed32(protowire.AppendTag(nil, 34, protowire.Fixed32Type), 1),
		protowire.AppendFixed64(protowire.AppendTag(nil, 35, protowire.Fixed64Type), 1), wrap(36, []byte("x")), group)
	forwarded := proto.Clone(good).(*wire.Envelope)
	forwarded.Forwarded, forwarded.From = true, 1
	fwd, err := proto.Marshal(forwarded)
	require.NoError(t, err)
	acked := &wire.Envelope{Kind: uint32(logging.EnvelopeAck), From: 0, To: 1,
		Determinants: []*wire.Determinant{{Message: good.Message.Id, Receiver: 3, Rsn: 4}}, Progress: []*wire.Progress{{Task: 3, Rsn: 4}}}
	ack, err := proto.Marshal(acked)
	require.NoError(t, err)
	ckpt, err := proto.Marshal(&wire.Batch{Job: 42, CheckpointKind: wire.CheckpointKind_CHECKPOINT_BUDDY, Checkpoint: []byte("ck")})
	require.NoError(t, err)
	return [][]byte{
		cat(wrap(batchEnvelopes, env), varintField(batchJob, 42)),                                                                           // job last
		cat(varintField(batchJob, 1), wrap(batchEnvelopes, env), varintField(batchJob, 42)),                                                 // job twice
		cat(varintField(batchJob, 42), unknown, wrap(batchEnvelopes, cat(env, unknown))),                                                    // unknown fields
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(env, varintField(envKind, 1)))),                                             // kind twice
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(wrap(envMessage, msg), varintField(envTo, 1)))),                             // kind last
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(env, wrap(envKind, []byte{1})))),                                            // kind as bytes
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(env, varintField(envMessage, 1)))),                                          // message as varint
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(env, wrap(envMessage, varintField(msgKey, 9))))),                            // message twice: merged
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(varintField(envTo, 1), wrap(envMessage, cat(msg, wrap(msgID, id)))))),       // id twice
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(varintField(envTo, 1), wrap(envMessage, cat(msg, wrap(msgPayload, nil)))))), // empty payload last
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(varintField(envTo, 1), wrap(envMessage, cat(msg, unknown, wrap(msgPayload, []byte("p"))))))),
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, fwd)),
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, ack), wrap(batchEnvelopes, cat(ack, unknown))),
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, env), varintField(batchCheckpointKind, 1<<32)), // checkpoint kind 0 in 32 bits
		ckpt,
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, env[:len(env)-1])),                                                                                                        // cut envelope
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, env))[:10],                                                                                                                // cut batch
		cat(varintField(batchJob, 42), protowire.AppendTag(nil, 40, protowire.EndGroupType)),                                                                                          // lone end group
		cat(varintField(batchJob, 42), protowire.AppendTag(nil, 1<<29, protowire.VarintType), []byte{1}),                                                                              // field number too large
		cat(varintField(batchJob, 42), []byte{0x07, 1}),                                                                                                                               // wire type 7
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(env, []byte{0x00, 1}))),                                                                                               // field 0
		cat(varintField(batchJob, 42), wrap(batchEnvelopes, cat(varintField(envTo, 1), varintField(envKind, 1), wrap(envDeterminants, wrap(detMessage, wrap(idCPI, []byte{0x80})))))), // bad path
		{},
	}
}

func TestDecoderMatchesProtoOnOddEncodings(t *testing.T) {
	var d batchDecoder
	fallbacks := 0
	for i, b := range oddBatches(t) {
		want, checkpoint := protoDecode(b, 0, 1, 2)
		got, fallback := fastDecode(&d, b, 0, 1, 2)
		if fallback {
			fallbacks++
			continue
		}
		require.False(t, checkpoint, "batch %d: a checkpoint decoded", i)
		require.Equal(t, want, got, "batch %d", i)
	}
	// The checkpoint, and the message and the id given twice.
	require.Equal(t, 3, fallbacks)
}

// FuzzDecodeBatch checks that the decoder accepts and rejects what the
// proto path does, and makes the same envelopes and errors of what it
// accepts.
func FuzzDecodeBatch(f *testing.F) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 13))
		f.Add(randomBatch(r, 0, 1, 3), uint8(0))
	}
	for _, b := range oddBatches(f) {
		f.Add(b, uint8(0))
	}
	var d batchDecoder
	f.Fuzz(func(t *testing.T, b []byte, from uint8) {
		want, checkpoint := protoDecode(b, int(from%4), 1, 3)
		got, fallback := fastDecode(&d, b, int(from%4), 1, 3)
		if fallback {
			return // the proto path decodes it
		}
		if checkpoint {
			t.Fatalf("a checkpoint batch decoded: %+v", got)
		}
		require.Equal(t, want, got)
	})
}

// Decoded payloads are the received buffer's bytes, not copies.
func TestDecodedPayloadsAliasTheBatch(t *testing.T) {
	shared := make([]byte, 100)
	envs := []logging.Envelope{
		{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{ID: logging.MessageID{Sender: 1, SRN: 1}, Payload: shared}},
		{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{ID: logging.MessageID{Sender: 1, SRN: 2}, Payload: shared}},
		{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{ID: logging.MessageID{Sender: 1, SRN: 3}, Payload: []byte("own")}},
	}
	var ob outBatch
	for i := range envs {
		ob.add(&envs[i])
	}
	b := append(batchHeader(nil, 42, 0), ob.buf...)
	var d batchDecoder
	require.NoError(t, d.decode(b))
	var got []logging.Envelope
	for i := range d.envelopes {
		env, err := d.envelope(i, 0, 1, 2)
		require.NoError(t, err)
		got = append(got, env)
	}
	for i := range b {
		b[i] = 0xee
	}
	for i, env := range got {
		require.Equal(t, len(envs[i].Message.Payload), len(env.Message.Payload))
		for _, c := range env.Message.Payload {
			require.Equal(t, byte(0xee), c, "envelope %d: a copy of the payload", i)
		}
		require.Equal(t, len(env.Message.Payload), cap(env.Message.Payload), "envelope %d: room to append into the batch", i)
	}
}

// plainBatch is a batch of n message envelopes from PE 0 to workers 2 and
// 3 of ringApp(4, ...) on PE 1 of 2, with payloads of payload bytes, no
// records and no path; acks adds that many acknowledgements.
func plainBatch(n, payload, acks int) []byte {
	var ob outBatch
	for i := range n {
		e := logging.Envelope{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{
			ID: logging.MessageID{Sender: commutative.TaskID(TaskID(1, 0)), SRN: uint64(i + 1)}, To: commutative.TaskID(TaskID(1, 2+i%2)),
			Handler: handlerID(1, 1), Annotation: commutative.Annotation{Order: commutative.Ordered}, Payload: make([]byte, payload),
		}}
		ob.add(&e)
	}
	for i := range acks {
		e := logging.Envelope{Kind: logging.EnvelopeAck, From: 0, To: 1,
			Determinants: []logging.Determinant{{Message: logging.MessageID{Sender: 5, SRN: uint64(i)}, Receiver: 2, RSN: 3}},
			Progress:     []logging.Progress{{Task: 2, RSN: uint64(i)}}}
		ob.add(&e)
	}
	return append(batchHeader(nil, 42, 0), ob.buf...)
}

// A batch of plain messages and acknowledgements decodes without an
// allocation.
func TestDecodeAllocatesNothingForPlainMessages(t *testing.T) {
	b := plainBatch(64, 100, 8)
	var d batchDecoder
	decode := func() {
		if err := d.decode(b); err != nil {
			t.Fatal(err)
		}
		for i := range d.envelopes {
			if _, err := d.envelope(i, 0, 1, 2); err != nil {
				t.Fatal(err)
			}
		}
		d.reset()
	}
	decode()
	require.Zero(t, testing.AllocsPerRun(100, decode))
}

// BenchmarkReceiveBatch measures a PE's Receive of a batch of 64 message
// envelopes (payloads of 100 bytes or 1.8 KB, no records) through the
// proto path and the decoder: the batch's decoding, checks and the
// protocol's Arrive (after the first, every message is a duplicate the
// protocol drops, so that the PE's state stays the same).
func BenchmarkReceiveBatch(b *testing.B) {
	const n = 64
	for _, payload := range []int{100, 1800} {
		batch := plainBatch(n, payload, 0)
		for _, path := range []string{"proto", "decoder"} {
			b.Run(fmt.Sprintf("payload=%d/%s", payload, path), func(b *testing.B) {
				net := &recordingNet{sent: map[int][][]byte{}}
				pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: ringApp(4, 1, actor.BlockMap), Protocol: logging.KindNone, Net: net, Control: nopControl{}})
				if err != nil {
					b.Fatal(err)
				}
				receive := pe.Receive
				if path == "proto" {
					receive = pe.receiveProto
				}
				receive(0, batch)
				b.ReportAllocs()
				for b.Loop() {
					receive(0, batch)
				}
				b.StopTimer()
				if st := pe.Stats(); st.Dropped != 0 || st.Received != uint64(n)*uint64(b.N+1) {
					b.Fatalf("received %d, dropped %d", st.Received, st.Dropped)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/msg")
			})
		}
	}
}

// recordsBatch is plainBatch's messages each piggybacking a progress
// record and a determinant (PartialDet's steady state), and acks
// acknowledgements.
func recordsBatch(n, payload, acks int) []byte {
	var ob outBatch
	for i := range n {
		e := logging.Envelope{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{
			ID: logging.MessageID{Sender: commutative.TaskID(TaskID(1, 0)), SRN: uint64(i + 1)}, To: commutative.TaskID(TaskID(1, 2+i%2)),
			Handler: handlerID(1, 1), Annotation: commutative.Annotation{Order: commutative.Ordered}, Payload: make([]byte, payload),
		}, Progress: []logging.Progress{{Task: commutative.TaskID(TaskID(1, 0)), RSN: uint64(i)}},
			Determinants: []logging.Determinant{{Message: logging.MessageID{Sender: 5, SRN: uint64(i)}, Receiver: commutative.TaskID(TaskID(1, 0)), RSN: uint64(i)}}}
		ob.add(&e)
	}
	b := plainBatch(0, 0, acks)
	return append(b, ob.buf...)
}

// BenchmarkDecodeBatch measures the decoding alone of a batch of 64
// messages (100-byte payloads): proto.Unmarshal, resolvePayloads and
// envelopeFromWire against the decoder; plain messages, and messages
// with records plus 8 acknowledgements.
func BenchmarkDecodeBatch(b *testing.B) {
	const n = 64
	for _, kind := range []string{"plain", "records"} {
		batch := plainBatch(n, 100, 0)
		if kind == "records" {
			batch = recordsBatch(n, 100, 8)
		}
		b.Run(kind+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var w wire.Batch
				if err := proto.Unmarshal(batch, &w); err != nil {
					b.Fatal(err)
				}
				if err := resolvePayloads(&w); err != nil {
					b.Fatal(err)
				}
				for _, e := range w.Envelopes {
					if _, err := envelopeFromWire(e, 0, 1, 2); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/msg")
		})
		b.Run(kind+"/decoder", func(b *testing.B) {
			b.ReportAllocs()
			var d batchDecoder
			for b.Loop() {
				if err := d.decode(batch); err != nil {
					b.Fatal(err)
				}
				for i := range d.envelopes {
					if _, err := d.envelope(i, 0, 1, 2); err != nil {
						b.Fatal(err)
					}
				}
				d.reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/msg")
		})
	}
}
