package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
)

// gave is what a task of giveApp gave or was handed: the message, and a
// copy of its content then.
type gave struct {
	task int
	m    *testmsg.Num
	then *testmsg.Num
}

// giveApp has 4 tasks, 2 per PE (block map). A message with key 1 makes
// its receiver give a new message (key 0) to task From; with key 3 it
// gives a nil message. Handlers record what they gave and what they got.
func giveApp(given, got *[]gave) actor.App {
	return actor.App{Name: "give", Define: func(j *actor.Job, args []string) error {
		tasks := actor.NewCollection(j, "tasks", actor.Shape{4}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		var in *actor.Proxy[*testmsg.Num]
		in = actor.Handle(tasks, "in", actor.AnnotateOrderDependent(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			me := int(ctx.Index()[0])
			*got = append(*got, gave{me, m, proto.Clone(m).(*testmsg.Num)})
			var out *testmsg.Num
			switch m.Key {
			case 1:
				out = &testmsg.Num{Value: float64(10*me) + float64(m.From), Data: bigData(64, byte(me))}
			case 3:
			default:
				return
			}
			*given = append(*given, gave{int(m.From), out, proto.Clone(out).(*testmsg.Num)})
			in.Give(ctx, actor.Idx(int(m.From)), out)
		})
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		actor.Main(j, actor.Handle(mains, "start", actor.AnnotateOrdered(), func(*mainTask, actor.Context, *actor.Start) {}), actor.Idx(0))
		return nil
	}}
}

// A message given (Proxy.Give) to a task on the same PE reaches its
// handler as the sender's value itself, unencoded, under every protocol
// (none logs a message between two tasks of one PE); with the annotation
// check or a record, to another PE, or nil, it is encoded as Send's are, and the handler gets what decoding gives:
// into a message given and encoded before (a spare), if there is one. An
// observer sees the given message encoded as it would have been sent.
func TestGiveHandsTheValueOverOnThisPE(t *testing.T) {
	cases := []struct {
		name     string
		kind     logging.Kind
		check    int
		observe  bool
		record   bool
		handOver bool
	}{
		{"none", logging.KindNone, 0, false, false, true},
		{"none observed", logging.KindNone, 0, true, false, true},
		{"none checked", logging.KindNone, 2, false, false, false},
		{"none recorded", logging.KindNone, 0, false, true, false},
		{"fulldet", logging.KindFullDet, 0, false, false, true},
		{"partialdet", logging.KindPartialDet, 0, false, false, true},
		{"partialdet recorded", logging.KindPartialDet, 0, false, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var given, got []gave
			var observed [][]byte
			cfg := Config{Rank: 1, Size: 2, JobID: 42, App: giveApp(&given, &got), Protocol: c.kind,
				Net: &recordingNet{sent: map[int][][]byte{}}, Control: nopControl{}, CheckAnnotations: c.check}
			if c.record {
				cfg.RecordDir = t.TempDir()
			}
			if c.observe {
				cfg.Observe = func(o Observation) {
					if o.Kind == ObserveSend || o.Kind == ObserveHandle {
						observed = append(observed, append([]byte(nil), o.Message.Payload...))
					}
				}
			}
			net := cfg.Net.(*recordingNet)
			pe, err := New(cfg)
			require.NoError(t, err)

			// Task 2 (here) gives to task 3 (here), then to task 0 (on
			// PE 0), then a nil message to task 3.
			for srn, from := range []int64{3, 0} {
				pe.Receive(0, bigBatch(t, uint64(srn+1), 2, &testmsg.Num{Key: 1, From: from}))
				runPosted(pe, net)
			}
			pe.Receive(0, bigBatch(t, 3, 2, &testmsg.Num{Key: 3, From: 3}))
			runPosted(pe, net)
			require.Zero(t, pe.Stats().Dropped)

			require.Len(t, given, 3)
			require.Len(t, got, 5) // three at task 2, two at task 3
			local := got[1]
			require.Equal(t, 3, local.task)
			require.True(t, proto.Equal(given[0].then, local.then), "task 3 gets what task 2 gave")
			// Handed over, or encoded and decoded into the message given
			// (a spare): the same object either way.
			require.Same(t, given[0].m, local.m)
			if c.handOver {
				require.EqualValues(t, 1, pe.Stats().Given)
			} else {
				require.Zero(t, pe.Stats().Given)
			}
			// Task 2's next message, from PE 0, was decoded into a new
			// message (no spare then); after its give to PE 0, which is
			// encoded under every protocol, the next one into the
			// message given, bytes field and all.
			require.Equal(t, 2, got[2].task)
			require.NotSame(t, given[0].m, got[2].m)
			require.NotSame(t, given[1].m, got[2].m)
			require.Equal(t, 2, got[3].task)
			require.Same(t, given[1].m, got[3].m, "decoded into the spare given before")
			require.True(t, proto.Equal(&testmsg.Num{Key: 3, From: 3}, got[3].then))

			// The nil message reaches task 3 as Send's would: empty.
			require.Equal(t, 3, got[4].task)
			require.NotNil(t, got[4].m)
			require.True(t, proto.Equal(&testmsg.Num{}, got[4].m))

			// The message to PE 0 was encoded into its batch, whatever the
			// protocol.
			want, err := proto.Marshal(given[1].then)
			require.NoError(t, err)
			var found bool
			for _, b := range net.sent[0] {
				found = found || containsBytes(b, want)
			}
			require.True(t, found, "the message to PE 0 is in a batch to PE 0")
			if c.kind != logging.KindNone && !c.record {
				// Logged as the bytes sent (encoded straight into the
				// sender log): a recovery of PE 0 replays them to task 0.
				var task0 commutative.TaskID
				for _, cs := range pe.colls {
					if cs.def.Name == "tasks" {
						task0 = commutative.TaskID(TaskID(cs.def.ID, 0))
					}
				}
				require.EqualValues(t, 1, pe.proto.Stats().LoggedMessages)
				pe.proto.FailureNotice([]logging.PEID{0}, []logging.Relocation{{Task: task0, PE: 1}})
				var replayed [][]byte
				for _, env := range pe.proto.Ready().Envelopes {
					if env.Replayed && env.Message.To == task0 {
						require.Nil(t, env.Message.Value)
						replayed = append(replayed, env.Message.Payload)
					}
				}
				require.Equal(t, [][]byte{want}, replayed, "the log replays the bytes sent")
			}

			if c.observe {
				// Sends and handlings of task 2's three messages at task
				// 3 and PE 0, each with the payload Send would have made.
				wantLocal, err := proto.Marshal(given[0].then)
				require.NoError(t, err)
				var seen int
				for _, p := range observed {
					if string(p) == string(wantLocal) {
						seen++
					}
				}
				require.Equal(t, 2, seen, "the local message observed sent and handled, encoded")
			}
		})
	}
}

func containsBytes(b, sub []byte) bool {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return true
		}
	}
	return false
}

// givingBackNet records the payloads the PE gives back (Recycle).
type givingBackNet struct {
	recordingNet
	recycled [][]byte
}

func (n *givingBackNet) Recycle(p []byte) { n.recycled = append(n.recycled, p) }

// Under every protocol a message from another PE is decoded as it
// arrives (the receiver's protocol never needs its bytes: the sender log
// keeps them at the sender), so the PE gives the batch back to the
// transport before any handler runs, and the handler gets the right
// message whatever the transport then writes into that memory. For a
// large message without a spare to decode into (its handler message
// aliases the batch), the batch is kept.
func TestReceivedBatchGivenBackOnceDecoded(t *testing.T) {
	cases := []struct {
		name    string
		kind    logging.Kind
		size    int
		recycle bool
	}{
		{"none", logging.KindNone, 64, true},
		{"none large", logging.KindNone, 8 << 10, false},
		{"partialdet", logging.KindPartialDet, 64, true},
		{"fulldet", logging.KindFullDet, 64, true},
		{"fulldet large", logging.KindFullDet, 8 << 10, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var given, got []gave
			net := &givingBackNet{recordingNet: recordingNet{sent: map[int][][]byte{}}}
			pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: giveApp(&given, &got), Protocol: c.kind, Net: net, Control: nopControl{}})
			require.NoError(t, err)
			want := &testmsg.Num{Key: 2, Value: 7, Data: bigData(c.size, 3)}
			batch := bigBatch(t, 1, 2, want)
			pe.Receive(0, batch)
			if c.recycle {
				require.Len(t, net.recycled, 1)
				require.Same(t, &batch[0], &net.recycled[0][0], "the batch given back")
				clear(batch) // the transport reads into it again
			} else {
				require.Empty(t, net.recycled)
			}
			runPosted(pe, &net.recordingNet)
			require.Zero(t, pe.Stats().Dropped)
			require.Len(t, got, 1)
			require.True(t, proto.Equal(want, got[0].then), "the handler gets the message sent")
		})
	}
}
