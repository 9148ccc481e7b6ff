package scheduler

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
	"github.com/gochare/gochare/scheduler/wire"
)

// partsRecorder is a Net that takes payloads in parts, as transport.TCP
// does, and records them: head copied (as the transport copies it),
// body kept.
type partsRecorder struct {
	recordingNet
	parts    map[int][][2][]byte
	released bool
}

// Released says what the test sets: the recorder keeps the bodies.
func (n *partsRecorder) Released() bool { return n.released }

func (n *partsRecorder) SendParts(to int, head, body []byte) {
	n.parts[to] = append(n.parts[to], [2][]byte{bytes.Clone(head), body})
}

// overlaps reports whether a and b share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// bigData is a recognisable payload of n bytes.
func bigData(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// handled is what a task of bigApp saw of one message.
type handled struct {
	task int
	data []byte // the message's own bytes, as the handler got them
	ok   bool   // their content was the expected one
}

// bigApp has 4 tasks, 2 per PE (block map). A message with key 1 makes
// its receiver send a large message to task From; with key 2, to tasks
// 0 and 1 at once (one multicast). Every handler checks the bytes it
// got, records them, then writes into them (a handler owns its message).
func bigApp(size int, seen *[]handled) actor.App {
	return actor.App{Name: "big", Define: func(j *actor.Job, args []string) error {
		tasks := actor.NewCollection(j, "tasks", actor.Shape{4}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		var in *actor.Proxy[*testmsg.Num]
		in = actor.Handle(tasks, "in", actor.AnnotateOrderDependent(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			me := int(ctx.Index()[0])
			*seen = append(*seen, handled{task: me, data: m.Data, ok: bytes.Equal(m.Data, bigData(size, byte(m.Value)))})
			switch m.Key {
			case 1:
				in.Send(ctx, actor.Idx(int(m.From)), &testmsg.Num{Value: float64(me), Data: bigData(size, byte(me))})
			case 2:
				in.Multicast(ctx, actor.Section{actor.Idx(0), actor.Idx(1)}, &testmsg.Num{Value: float64(me), Data: bigData(size, byte(me))})
			}
			for i := range m.Data {
				m.Data[i] = 0xEE
			}
		})
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		actor.Main(j, actor.Handle(mains, "start", actor.AnnotateOrdered(), func(*mainTask, actor.Context, *actor.Start) {}), actor.Idx(0))
		return nil
	}}
}

// bigBatch is a batch from PE 0 to PE 1 with one message for task to.
func bigBatch(t *testing.T, srn uint64, to int, m *testmsg.Num) []byte {
	payload, err := proto.Marshal(m)
	require.NoError(t, err)
	b, err := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{{
		Kind: uint32(logging.EnvelopeMessage), From: 0, To: 1, Message: &wire.Message{
			Id: &wire.MessageID{Sender: TaskID(0, 0), Srn: srn}, To: TaskID(0, to), Handler: handlerID(0, 0),
			Order: uint32(commutative.OrderDependent), Payload: payload,
		}}}})
	require.NoError(t, err)
	return b
}

// A large message goes out as the tail of its batch, from the memory
// the protocol gave it (no copy into the batch); a handler's message from
// another PE is a slice of the received buffer (no copy), one sent on
// the PE itself a slice of its payload (no copy: no protocol logs it);
// a large multicast payload travels
// once per batch. Every handler gets the right bytes, whatever the
// others write into theirs.
func TestLargeMessagesAreNotCopied(t *testing.T) {
	const size = 100 << 10
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			var seen []handled
			var handledPayloads, sentPayloads [][]byte
			net := &partsRecorder{recordingNet: recordingNet{sent: map[int][][]byte{}}, parts: map[int][][2][]byte{}}
			pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: bigApp(size, &seen), Protocol: kind, Net: net, Control: nopControl{},
				Observe: func(o Observation) {
					switch o.Kind {
					case ObserveHandle:
						handledPayloads = append(handledPayloads, o.Message.Payload)
					case ObserveSend:
						sentPayloads = append(sentPayloads, o.Message.Payload)
					}
				}})
			require.NoError(t, err)

			// Task 2 (here) gets a message from PE 0 and sends to task 3
			// (here too), which gets a copy.
			in := bigBatch(t, 1, 2, &testmsg.Num{Key: 1, From: 3, Value: 9, Data: bigData(size, 9)})
			pe.Receive(0, in)
			runPosted(pe, &net.recordingNet)
			require.Len(t, seen, 2)
			require.Equal(t, 2, seen[0].task)
			require.True(t, seen[0].ok, "task 2's bytes")
			require.True(t, overlaps(seen[0].data, in), "a message from another PE aliases the received buffer")
			require.Equal(t, 3, seen[1].task)
			require.True(t, seen[1].ok, "task 3's bytes")
			require.Len(t, handledPayloads, 2)
			// The envelope keeps the payload marshalled for this send
			// alone (no protocol logs a message to this PE): the
			// handler's message aliases it.
			require.True(t, overlaps(seen[1].data, handledPayloads[1]), "a message sent on this PE aliases its payload")
			require.True(t, overlaps(handledPayloads[1], sentPayloads[0]), "the payload marshalled by the sender")
			require.Empty(t, net.parts[0])
			require.Empty(t, net.sent[0], "a Net that takes parts gets every batch in parts")

			// Task 2 sends to task 0 on PE 0: under None the payload is
			// the batch's tail, not copied into the batch; under the
			// logging protocols it is the sender log's copy (memory the
			// log unmaps after a checkpoint or a rollback, while the
			// transport may still hold the frame), copied into the batch.
			pe.Receive(0, bigBatch(t, 2, 2, &testmsg.Num{Key: 1, From: 0, Value: 9, Data: bigData(size, 9)}))
			runPosted(pe, &net.recordingNet)
			head, body := messageBatch(t, net.parts[0])
			if kind == logging.KindNone {
				require.Less(t, len(head), 1<<10, "the batch without its payload")
				require.Greater(t, len(body), size, "the payload, from its own memory")
				// None sends the message as marshalled for this send.
				require.True(t, overlaps(body, sentPayloads[len(sentPayloads)-1]))
			} else {
				require.Empty(t, body)
				require.Greater(t, len(head), size, "the payload copied into the batch")
				require.False(t, overlaps(head, sentPayloads[len(sentPayloads)-1]))
			}
			checkBatch(t, append(head, body...), 0, size, 2)

			// A multicast's payload goes once in one batch. (The logging
			// protocols log a copy per message, and the envelopes of one
			// Ready with the same bytes carry the first copy: sent once
			// too.)
			net.parts[0] = nil
			pe.Receive(0, bigBatch(t, 3, 2, &testmsg.Num{Key: 2, Value: 9, Data: bigData(size, 9)}))
			runPosted(pe, &net.recordingNet)
			batches := messageBatches(t, net.parts[0])
			require.Len(t, batches, 1)
			head, body = batches[0][0], batches[0][1]
			require.Empty(t, body)
			require.Less(t, len(head), size+size/2, "one copy of the payload for both messages")
			checkBatch(t, head, 0, size, 2, 2)
			for _, h := range seen {
				require.True(t, h.ok, "task %d's bytes", h.task)
			}
			require.Zero(t, pe.Stats().Dropped)
		})
	}
}

// messageBatch returns the one batch of parts that carries messages
// (the others carry acknowledgements).
func messageBatch(t *testing.T, parts [][2][]byte) (head, body []byte) {
	t.Helper()
	batches := messageBatches(t, parts)
	require.Len(t, batches, 1, "batches with messages")
	return batches[0][0], batches[0][1]
}

// messageBatches returns the batches of parts that carry messages.
func messageBatches(t *testing.T, parts [][2][]byte) [][2][]byte {
	t.Helper()
	var out [][2][]byte
	for _, p := range parts {
		d := new(batchDecoder)
		require.NoError(t, d.decode(append(bytes.Clone(p[0]), p[1]...)))
		for _, e := range d.envelopes {
			if logging.EnvelopeKind(e.kind) == logging.EnvelopeMessage {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// checkBatch decodes a batch sent to PE to and checks it carries, in
// order, messages whose payloads decode to bigData(size, from) for each
// of froms.
func checkBatch(t *testing.T, b []byte, to, size int, froms ...int) {
	t.Helper()
	d := new(batchDecoder)
	require.NoError(t, d.decode(b))
	var got []int
	for i := range d.envelopes {
		env, err := d.envelope(i, 1, to, 2)
		require.NoError(t, err)
		if env.Kind != logging.EnvelopeMessage {
			continue
		}
		var m testmsg.Num
		require.NoError(t, proto.Unmarshal(env.Message.Payload, &m))
		require.True(t, bytes.Equal(bigData(size, byte(m.Value)), m.Data), "envelope %d", i)
		got = append(got, int(m.Value))
	}
	require.Equal(t, froms, got)
}

// unmarshalAliasing decodes what proto.Unmarshal decodes, the same way,
// with large bytes fields slices of the input.
func TestUnmarshalAliasingMatchesProto(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var scratch []byte
	for i := 0; i < 300; i++ {
		// Fields in any order, repeated, and unknown ones.
		var b []byte
		for f := r.IntN(6); f >= 0; f-- {
			switch r.IntN(5) {
			case 0:
				b = protowire.AppendTag(b, 5, protowire.BytesType)
				b = protowire.AppendBytes(b, bigData([]int{0, 10, aliasMin - 1, aliasMin, 3 * aliasMin}[r.IntN(5)], byte(i)))
			case 1:
				b = protowire.AppendTag(b, 1, protowire.VarintType)
				b = protowire.AppendVarint(b, r.Uint64())
			case 2:
				b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
				b = protowire.AppendFixed64(b, r.Uint64())
			case 3:
				b = protowire.AppendTag(b, 99, protowire.BytesType)
				b = protowire.AppendBytes(b, bigData(r.IntN(2*aliasMin), 3))
			case 4:
				b = protowire.AppendTag(b, 5, protowire.VarintType) // the bytes field's number, another type
				b = protowire.AppendVarint(b, 7)
			}
		}
		if r.IntN(10) == 0 && len(b) > 0 {
			b = b[:r.IntN(len(b))] // truncated: both reject it or both take it
		}
		var want, got testmsg.Num
		wantErr := proto.Unmarshal(b, &want)
		gotErr := unmarshalAliasing(b, &got, &scratch)
		require.Equal(t, wantErr == nil, gotErr == nil, "input %d: %v / %v", i, wantErr, gotErr)
		if wantErr != nil {
			continue
		}
		require.True(t, proto.Equal(&want, &got), "input %d", i)
		if len(got.Data) >= aliasMin {
			require.True(t, overlaps(got.Data, b), "input %d: a large field aliases the input", i)
		} else {
			require.False(t, overlaps(got.Data, b), "input %d: a small field is copied", i)
		}

		// Into a message that held something else (a spare), aliasing
		// or not, with or without the Go field finder: the same message,
		// a copied bytes field in the spare's memory when it has room.
		for _, alias := range []bool{false, true} {
			for _, fields := range []*bytesFields{nil, {}} {
				old := bigData(r.IntN(2*aliasMin), 5)
				spare := &testmsg.Num{Key: 77, From: -3, Value: 2.5, Values: []float64{1, 2}, Data: old}
				require.NoError(t, decodeInto(b, spare, alias, &scratch, fields), "input %d", i)
				require.True(t, proto.Equal(&want, spare), "input %d", i)
				switch {
				case alias && len(spare.Data) >= aliasMin:
					require.True(t, overlaps(spare.Data, b), "input %d: a large field aliases the input", i)
				case len(spare.Data) > 0 && len(spare.Data) <= cap(old):
					require.Same(t, &old[0], &spare.Data[0], "input %d: copied into the spare's memory", i)
				default:
					require.False(t, overlaps(spare.Data, b), "input %d: a copy", i)
				}
			}
		}
	}
}

// Decoding into a spare message allocates nothing when the bytes field
// fits in the spare's memory, through the Go field finder.
func TestDecodeIntoSpareDoesNotAllocate(t *testing.T) {
	b, err := proto.Marshal(&testmsg.Num{Key: 3, Value: 1.5, Data: bigData(2048, 1)})
	require.NoError(t, err)
	spare := &testmsg.Num{Data: make([]byte, 2048)}
	var scratch []byte
	var fields bytesFields
	require.NoError(t, decodeInto(b, spare, false, &scratch, &fields))
	allocs := testing.AllocsPerRun(100, func() {
		if err := decodeInto(b, spare, false, &scratch, &fields); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, bigData(2048, 1), spare.Data)
}

// Under None, a large message to another PE is marshalled into a buffer
// reused once the Net released every body it was given, and not before:
// the bodies it holds keep their bytes.
func TestMarshalBuffersReusedOnlyOnceReleased(t *testing.T) {
	const size = 100 << 10
	var seen []handled
	net := &partsRecorder{recordingNet: recordingNet{sent: map[int][][]byte{}}, parts: map[int][][2][]byte{}}
	pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: bigApp(size, &seen), Protocol: logging.KindNone, Net: net, Control: nopControl{}})
	require.NoError(t, err)
	send := func(srn uint64) []byte {
		net.parts[0] = nil
		pe.Receive(0, bigBatch(t, srn, 2, &testmsg.Num{Key: 1, From: 0, Value: 9, Data: bigData(size, 9)}))
		runPosted(pe, &net.recordingNet)
		require.Len(t, net.parts[0], 1)
		return net.parts[0][0][1]
	}
	var held [][]byte
	for srn := uint64(1); srn <= 4; srn++ {
		held = append(held, send(srn))
	}
	for i, a := range held {
		for _, b := range held[i+1:] {
			require.False(t, overlaps(a, b), "a body the Net holds is not reused")
		}
		var m testmsg.Num
		require.NoError(t, proto.Unmarshal(a, &m))
		require.True(t, bytes.Equal(bigData(size, 2), m.Data), "body %d keeps its bytes", i)
	}
	net.released = true
	a := send(5)
	net.released = false
	b := send(6)
	reused := false
	for _, h := range held {
		reused = reused || overlaps(a, h)
	}
	require.True(t, reused, "once the Net released them, the buffers are reused")
	require.False(t, overlaps(a, b), "a body the Net holds is not reused")
	var m testmsg.Num
	require.NoError(t, proto.Unmarshal(a, &m))
	require.True(t, bytes.Equal(bigData(size, 2), m.Data), "the body of message 5 keeps its bytes")
	for _, h := range seen {
		require.True(t, h.ok, "task %d's bytes", h.task)
	}
}

// A small message to a task on this PE (whose handler message is a
// copy) is marshalled into a buffer the PE takes back once its handler
// ran, under every protocol (none logs it): the next such message reuses
// it, and every handler gets its own bytes, whatever the handlers before
// it wrote into theirs.
func TestSmallLocalPayloadsReused(t *testing.T) {
	const size = aliasMin / 4
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			var seen []handled
			var sent, handledAt []uintptr
			addr := func(p []byte) uintptr { return uintptr(unsafe.Pointer(&p[0])) }
			net := &recordingNet{sent: map[int][][]byte{}}
			pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: bigApp(size, &seen), Protocol: kind, Net: net, Control: nopControl{},
				Observe: func(o Observation) {
					switch o.Kind {
					case ObserveSend:
						sent = append(sent, addr(o.Message.Payload))
					case ObserveHandle:
						handledAt = append(handledAt, addr(o.Message.Payload))
					}
				}})
			require.NoError(t, err)
			// Each time, task 2 (here) gets a message from PE 0 and sends
			// to task 3 (here too).
			for srn := uint64(1); srn <= 3; srn++ {
				pe.Receive(0, bigBatch(t, srn, 2, &testmsg.Num{Key: 1, From: 3, Value: 9, Data: bigData(size, 9)}))
				runPosted(pe, net)
			}
			require.Len(t, seen, 6)
			for i, h := range seen {
				require.True(t, h.ok, "message %d: task %d's bytes", i, h.task)
				require.Equal(t, 2+i%2, h.task)
			}
			require.Len(t, sent, 3)
			require.Len(t, handledAt, 6)
			require.Equal(t, sent[0], sent[1], "the second local message reuses the first one's buffer")
			require.Equal(t, sent[1], sent[2])
			for i := 1; i < 6; i += 2 {
				require.Equal(t, sent[i/2], handledAt[i], "task 3 gets the payload marshalled for it")
				require.NotEqual(t, addr(seen[i].data), handledAt[i], "its handler message is a copy")
			}
			require.Zero(t, pe.Stats().Dropped)
		})
	}
}
