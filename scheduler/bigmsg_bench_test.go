package scheduler

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/internal/cputime"
	"github.com/gochare/gochare/logging"
)

// countingNet is a Net that counts what it is given and keeps nothing;
// with parts, it takes payloads in parts as transport.TCP does.
type countingNet struct {
	posted  []any
	batches int
	bytes   int
}

func (n *countingNet) Send(to int, p []byte) { n.batches++; n.bytes += len(p) }
func (n *countingNet) Flush()                {}
func (n *countingNet) Post(ev any)           { n.posted = append(n.posted, ev) }
func (n *countingNet) Backlog() int          { return 0 }

type countingPartsNet struct{ countingNet }

func (n *countingPartsNet) Released() bool { return true }

func (n *countingPartsNet) SendParts(to int, head, body []byte) {
	n.batches++
	n.bytes += len(head) + len(body)
}

// echoApp has two tasks, one per PE; task 1 sends every ball it gets back
// to task 0 (the pingpong example's second player).
func echoApp() actor.App {
	return actor.App{Name: "echo", Define: func(j *actor.Job, args []string) error {
		players := actor.NewCollection(j, "players", actor.Shape{2}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		var ball *actor.Proxy[*wrapperspb.BytesValue]
		ball = actor.Handle(players, "ball", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *wrapperspb.BytesValue) {
			ball.Send(ctx, actor.Idx(0), m)
		})
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		actor.Main(j, actor.Handle(mains, "start", actor.AnnotateOrdered(), func(*mainTask, actor.Context, *actor.Start) {}), actor.Idx(0))
		return nil
	}}
}

// BenchmarkLargeMessageThroughPE measures one message through a PE's
// runtime, as PE 1 of the pingpong example handles it: a batch from PE 0
// with one message (read into one reused buffer, as the transport's
// reader would) is decoded, its handler message unmarshalled, the
// handler sends it back, and the PE encodes and sends the batch to the
// Net, which keeps nothing. One op is one message in and one out; the
// bytes are the payload's; allocs/op are the runtime's (the transport's
// own are not in it). net=send is a Net that takes one payload per
// batch (job/inprocess, the simulator), net=parts one that takes it in
// parts (transport.TCP).
func BenchmarkLargeMessageThroughPE(b *testing.B) {
	for _, size := range []int{64, 512 << 10} {
		// (Only None: without PE 0's acknowledgements, a logging
		// protocol's determinants would pile up on every message.)
		for _, kind := range []logging.Kind{logging.KindNone} {
			for _, parts := range []bool{false, true} {
				netName := "send"
				if parts {
					netName = "parts"
				}
				b.Run(fmt.Sprintf("size=%d/ft=%s/net=%s", size, kind, netName), func(b *testing.B) {
					benchLargeMessage(b, size, kind, parts)
				})
			}
		}
	}
}

func benchLargeMessage(b *testing.B, size int, kind logging.Kind, parts bool) {
	var net Net
	var counts *countingNet
	if parts {
		n := &countingPartsNet{}
		net, counts = n, &n.countingNet
	} else {
		counts = &countingNet{}
		net = counts
	}
	pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: echoApp(), Protocol: kind, Net: net, Control: nopControl{}})
	if err != nil {
		b.Fatal(err)
	}
	payload, err := proto.Marshal(wrapperspb.Bytes(make([]byte, size)))
	if err != nil {
		b.Fatal(err)
	}
	var in, id, msg, env, head []byte
	run := func(srn uint64) {
		// The batch: job 42, one message envelope from PE 0 to PE 1,
		// written by hand (the payload, its last field, copied in as
		// the socket read would).
		msg, env = msg[:0], env[:0]
		id = protowire.AppendVarint(protowire.AppendTag(id[:0], idSender, protowire.VarintType), uint64(TaskID(0, 0)))
		id = protowire.AppendVarint(protowire.AppendTag(id, idSRN, protowire.VarintType), srn)
		msg = protowire.AppendBytes(protowire.AppendTag(msg, msgID, protowire.BytesType), id)
		msg = protowire.AppendVarint(protowire.AppendTag(msg, msgTo, protowire.VarintType), uint64(TaskID(0, 1)))
		msg = protowire.AppendVarint(protowire.AppendTag(msg, msgOrder, protowire.VarintType), uint64(commutative.Ordered))
		msg = protowire.AppendTag(msg, msgPayload, protowire.BytesType)
		msg = protowire.AppendVarint(msg, uint64(len(payload)))
		env = protowire.AppendVarint(protowire.AppendTag(env, envKind, protowire.VarintType), uint64(logging.EnvelopeMessage))
		env = protowire.AppendVarint(protowire.AppendTag(env, envTo, protowire.VarintType), 1)
		env = protowire.AppendTag(env, envMessage, protowire.BytesType)
		env = protowire.AppendVarint(env, uint64(len(msg)+len(payload)))
		head = protowire.AppendVarint(protowire.AppendTag(head[:0], batchJob, protowire.VarintType), 42)
		head = protowire.AppendTag(head, batchEnvelopes, protowire.BytesType)
		head = protowire.AppendVarint(head, uint64(len(env)+len(msg)+len(payload)))
		head = append(append(head, env...), msg...)
		in = append(append(in[:0], head...), payload...)
		pe.Receive(0, in)
		for i := 0; i < len(counts.posted); i++ {
			pe.Event(counts.posted[i])
		}
		clear(counts.posted)
		counts.posted = counts.posted[:0]
	}
	run(1) // warm
	if pe.Stats().Delivered != 1 || counts.batches == 0 {
		b.Fatalf("the message was not handled: %+v, %d batches", pe.Stats(), counts.batches)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := cputime.Process()
	for i := 0; i < b.N; i++ {
		run(uint64(i + 2))
	}
	b.StopTimer()
	if cpu1, ok := cputime.Process(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	if got := pe.Stats().Delivered; got != uint64(b.N+1) || pe.Stats().Dropped != 0 {
		b.Fatalf("%d messages handled of %d, %d dropped", got, b.N+1, pe.Stats().Dropped)
	}
}
