package scheduler

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
	"github.com/gochare/gochare/scheduler/wire"
)

// worker is the task of the test app: it exchanges keyed messages with its
// two ring neighbours for a number of rounds (a commutative region of 2 per
// round) and keeps a history hash of what it saw.
type worker struct {
	round   uint64
	got     [2]float64
	history uint64
}

func (w *worker) MarshalBinary() ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(nil, w.round)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w.got[0]))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w.got[1]))
	return binary.LittleEndian.AppendUint64(b, w.history), nil
}

func (w *worker) UnmarshalBinary(b []byte) error {
	if len(b) != 32 {
		return fmt.Errorf("worker state of %d bytes", len(b))
	}
	w.round = binary.LittleEndian.Uint64(b)
	w.got[0] = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	w.got[1] = math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))
	w.history = binary.LittleEndian.Uint64(b[24:])
	return nil
}

type mainTask struct{ replies int }

func (m *mainTask) MarshalBinary() ([]byte, error) { return []byte(strconv.Itoa(m.replies)), nil }
func (m *mainTask) UnmarshalBinary(b []byte) error {
	n, err := strconv.Atoi(string(b))
	m.replies = n
	return err
}

// contribution is a value whose floating-point sum depends on the order of
// addition.
func contribution(lin int) float64 {
	return math.Pow(10, float64((lin*7)%17)) / float64(lin+3)
}

// ringApp builds the test application: n workers in a ring, rounds rounds.
func ringApp(n, rounds int, m actor.Map) actor.App {
	return actor.App{Name: "ring", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		workers := actor.NewCollection(j, "workers", actor.Shape{n}, m, func(actor.Index) *worker { return &worker{} })
		concat := j.CustomReducer("concat", func(a, b actor.Value) actor.Value {
			return actor.Value{Bytes: append(append([]byte(nil), a.Bytes...), b.Bytes...)}
		})
		var neighbour, begin *actor.Proxy[*testmsg.Num]
		var sums, digests, extremes, reply *actor.Proxy[*actor.ReductionResult]
		var quiet *actor.Proxy[*actor.Quiescence]
		// A worker's last key: the ping that follows its contributions.
		// Main's: the quiescence notice after its three results.
		pingKey, quietKey := uint64(rounds+1), uint64(4)
		send := func(w *worker, ctx actor.Context) {
			me := int(ctx.Index()[0])
			v := contribution(me) + float64(w.round)
			// Round r's messages carry key r+1: key 0 is the begin message,
			// so a neighbour's first message waits until this worker began.
			ctx.Expect(w.round + 1)
			neighbour.Send(ctx, actor.Idx((me+1)%n), &testmsg.Num{Key: w.round + 1, From: 0, Value: v})
			neighbour.Send(ctx, actor.Idx((me+n-1)%n), &testmsg.Num{Key: w.round + 1, From: 1, Value: v})
		}
		neighbour = actor.Handle(workers, "neighbour", actor.AnnotateCommutative(2),
			func(w *worker, ctx actor.Context, m *testmsg.Num) { w.got[m.From] = m.Value },
			actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }),
			actor.WhenComplete(func(w *worker, ctx actor.Context, key uint64) {
				h := fnv.New64a()
				fmt.Fprintf(h, "%d %x %x %x", key-1, math.Float64bits(w.got[0]), math.Float64bits(w.got[1]), w.history)
				w.history = h.Sum64()
				w.round++
				if int(w.round) < rounds {
					send(w, ctx)
					return
				}
				me := int(ctx.Index()[0])
				ctx.Contribute(actor.Sum, actor.Value{Floats: []float64{contribution(me)}, Ints: []int64{int64(me)}}, sums.At(actor.Idx(0)))
				ctx.Contribute(concat, actor.Value{Bytes: binary.LittleEndian.AppendUint64(nil, w.history)}, digests.At(actor.Idx(0)))
				ctx.Contribute(actor.Max, actor.Value{Floats: []float64{contribution(me)}, Ints: []int64{int64(me)}}, extremes.At(actor.Idx(0)))
				ctx.Expect(pingKey)
			}))
		begin = actor.Handle(workers, "begin", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			send(w, ctx)
		}, actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }))
		// Main handles Start (key 0), the three reductions in number order
		// (key number+1), then the quiescence notice.
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			ctx.Expect(1)
			begin.Broadcast(ctx, &testmsg.Num{})
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		resultKey := actor.KeyBy(func(r *actor.ReductionResult) uint64 { return r.Number + 1 })
		sums = actor.Handle(mains, "sums", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Expect(r.Number + 2)
			ctx.Printf("sum %x ints %d contributors %d", math.Float64bits(r.Floats[0]), r.Ints[0], r.Contributors)
		}, resultKey)
		digests = actor.Handle(mains, "digests", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Expect(r.Number + 2)
			h := fnv.New64a()
			h.Write(r.Bytes)
			ctx.Printf("digest %x of %d bytes", h.Sum64(), len(r.Bytes))
		}, resultKey)
		var ping *actor.Proxy[*testmsg.Num]
		extremes = actor.Handle(mains, "extremes", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Expect(quietKey)
			ctx.Printf("max %x maxint %d", math.Float64bits(r.Floats[0]), r.Ints[0])
			// A section multicast whose members reply; quiescence then
			// tells main that every reply is in.
			var sec actor.Section
			for i := 0; i < n; i += 2 {
				sec = append(sec, actor.Idx(i))
			}
			ping.Multicast(ctx, sec, &testmsg.Num{})
			ctx.StartQuiescence(quiet.At(actor.Idx(0)))
		}, resultKey)
		reply = actor.Handle(mains, "reply", actor.AnnotateOrderDependent(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			t.replies++
		})
		ping = actor.Handle(workers, "ping", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			reply.Send(ctx, actor.Idx(0), &actor.ReductionResult{})
		}, actor.KeyBy(func(*testmsg.Num) uint64 { return pingKey }))
		quiet = actor.Handle(mains, "quiet", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, q *actor.Quiescence) {
			ctx.Printf("replies %d", t.replies)
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.Quiescence) uint64 { return quietKey }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
}

// expectedRing computes the ring app's results serially.
func expectedRing(n, rounds int) []string {
	values := make([]actor.Value, n)
	history := make([]uint64, n)
	got := make([][2]float64, n)
	for r := 0; r < rounds; r++ {
		for me := 0; me < n; me++ {
			v := contribution(me) + float64(r)
			got[(me+1)%n][0] = v
			got[(me+n-1)%n][1] = v
		}
		for me := 0; me < n; me++ {
			h := fnv.New64a()
			fmt.Fprintf(h, "%d %x %x %x", r, math.Float64bits(got[me][0]), math.Float64bits(got[me][1]), history[me])
			history[me] = h.Sum64()
		}
	}
	var all []byte
	for me := range values {
		values[me] = actor.Value{Floats: []float64{contribution(me)}, Ints: []int64{int64(me)}}
		all = binary.LittleEndian.AppendUint64(all, history[me])
	}
	var tree func(r actor.Reducer, lo, hi int) actor.Value
	tree = func(r actor.Reducer, lo, hi int) actor.Value {
		if hi-lo == 1 {
			return values[lo]
		}
		mid := (lo + hi) / 2
		return r.Combine(tree(r, lo, mid), tree(r, mid, hi))
	}
	sum, mx := tree(actor.Sum, 0, n), tree(actor.Max, 0, n)
	h := fnv.New64a()
	h.Write(all)
	return []string{
		fmt.Sprintf("sum %x ints %d contributors %d", math.Float64bits(sum.Floats[0]), sum.Ints[0], n),
		fmt.Sprintf("digest %x of %d bytes", h.Sum64(), 8*n),
		fmt.Sprintf("max %x maxint %d", math.Float64bits(mx.Floats[0]), mx.Ints[0]),
		fmt.Sprintf("replies %d", (n+1)/2),
	}
}

func run(t *testing.T, app actor.App, pes int, kind logging.Kind) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := RunInProcess(ctx, app, nil, pes, nil, WithProtocol(kind))
	require.NoError(t, err)
	return res
}

func TestRingResultsIndependentOfPlacement(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) { testRing(t, kind) })
	}
}

func testRing(t *testing.T, kind logging.Kind) {
	const n, rounds = 23, 12
	want := expectedRing(n, rounds)
	// The order-sensitive float sum must differ from a plain left-to-right
	// sum, or the test would not show that the tree is respected.
	plain := 0.0
	for me := 0; me < n; me++ {
		plain += contribution(me)
	}
	require.NotEqual(t, fmt.Sprintf("sum %x", math.Float64bits(plain)), strings.Fields(want[0])[0]+" "+strings.Fields(want[0])[1])
	for _, pes := range []int{1, 2, 3, 5} {
		for name, m := range map[string]actor.Map{"block": actor.BlockMap, "roundrobin": actor.RoundRobinMap} {
			t.Run(fmt.Sprintf("%s/%dpes", name, pes), func(t *testing.T) {
				res := run(t, ringApp(n, rounds, m), pes, kind)
				require.Equal(t, 0, res.Status)
				require.Equal(t, want, res.Output)
				var delivered uint64
				var determinants int
				for _, s := range res.Stats {
					require.Zero(t, s.Dropped)
					delivered += s.Delivered
					determinants += s.Protocol.Determinants
				}
				switch kind {
				case logging.KindPartialDet:
					// Only the replies to main are order-dependent.
					require.Equal(t, (n+1)/2, determinants)
				case logging.KindFullDet:
					require.Equal(t, int(delivered), determinants)
				case logging.KindNone:
					require.Zero(t, determinants)
				}
				// start + n begins + 2 per worker per round + 3 reductions
				// of n contributions at the reducer + 3 results + pings +
				// replies + quiescence callback.
				require.Equal(t, uint64(1+n+2*n*rounds+3*n+3+2*((n+1)/2)+1), delivered)
			})
		}
	}
}

func TestQuiescenceWithoutExitIsAnError(t *testing.T) {
	app := actor.App{Name: "stuck", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		workers := actor.NewCollection(j, "w", actor.Shape{4}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		// Keyed with key 7 while workers expect 0: waits forever.
		wait := actor.Handle(workers, "wait", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {},
			actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }))
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			wait.Broadcast(ctx, &testmsg.Num{Key: 7})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := RunInProcess(ctx, app, nil, 2, nil)
	require.ErrorIs(t, err, job.ErrQuiescentWithoutExit)
	// The error says what waits, and for what.
	require.ErrorContains(t, err, "w(0): expects key 0; holds 1 of w.wait key 7 (from main(0) on PE 0)")
	require.ErrorContains(t, err, "w(3): expects key 0; holds 1 of w.wait key 7 (from main(0) on PE 0)")
	var delivered uint64
	for _, s := range res.Stats {
		delivered += s.Delivered
	}
	require.Equal(t, uint64(1), delivered, "only Start is handled; the four keyed messages wait")
}

// recordingNet captures what a PE sends and posts.
type recordingNet struct {
	sent   map[int][][]byte
	posted []any
}

func (n *recordingNet) Send(to int, p []byte) { n.sent[to] = append(n.sent[to], p) }
func (n *recordingNet) Flush()                {}
func (n *recordingNet) Post(ev any)           { n.posted = append(n.posted, ev) }
func (n *recordingNet) Backlog() int          { return 0 }

type nopControl struct{}

func (nopControl) Output(string)                                {}
func (nopControl) Exit(int)                                     {}
func (nopControl) Idle(job.IdleStatus)                          {}
func (nopControl) RequestQuiescence()                           {}
func (nopControl) CheckpointStaged(uint64, int, int)            {}
func (nopControl) BuddyStored(uint64, int, uint64)              {}
func (nopControl) DiskWritten(uint64, migrate.FileEntry, error) {}
func (nopControl) Restored(uint64, int, job.Progress)           {}
func (nopControl) Reached(uint64, uint64)                       {}
func (nopControl) Fail(error)                                   {}

func TestBadInputIsDroppedAndCounted(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) { testBadInput(t, kind) })
	}
}

// goodMessage is a begin message for worker 3 (on PE 1 of 2) from PE 0.
func goodMessage(t testing.TB) *wire.Envelope {
	payload, err := proto.Marshal(&testmsg.Num{})
	require.NoError(t, err)
	return &wire.Envelope{Kind: uint32(logging.EnvelopeMessage), From: 0, To: 1, Message: &wire.Message{
		Id: &wire.MessageID{Sender: TaskID(1, 0), Srn: 1}, To: TaskID(1, 3), Handler: handlerID(1, 1),
		Order: uint32(commutative.Ordered), Key: 0, Payload: payload,
	}}
}

func testBadInput(t *testing.T, kind logging.Kind) {
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: ringApp(4, 1, actor.BlockMap), Protocol: kind, Net: net, Control: nopControl{}})
	require.NoError(t, err)
	batch := func(job uint64, mutate func(*wire.Envelope)) []byte {
		env := goodMessage(t)
		if mutate != nil {
			mutate(env)
		}
		b, err := proto.Marshal(&wire.Batch{Job: job, Envelopes: []*wire.Envelope{env}})
		require.NoError(t, err)
		return b
	}
	cases := []struct {
		name    string
		payload []byte
		reason  string
	}{
		{"garbage", []byte{0xff, 0xff, 0xff}, "malformed batch"},
		{"other job", batch(7, nil), "batch from another job"},
		{"unknown collection", batch(42, func(e *wire.Envelope) { e.Message.To = TaskID(9, 0) }), "unknown collection or handler"},
		{"unknown handler", batch(42, func(e *wire.Envelope) { e.Message.Handler = handlerID(1, 99) }), "unknown collection or handler"},
		{"handler of another collection", batch(42, func(e *wire.Envelope) { e.Message.Handler = handlerID(0, 0) }), "unknown collection or handler"},
		{"element out of range", batch(42, func(e *wire.Envelope) { e.Message.To = TaskID(1, 1<<40) }), "no such element here"},
		{"wrong sender PE", batch(42, func(e *wire.Envelope) { e.From = 5 }), "malformed batch"},
		{"bad path", batch(42, func(e *wire.Envelope) { e.Message.Id.Cpi = []byte{0x80} }), "malformed batch"},
		{"no message", batch(42, func(e *wire.Envelope) { e.Message = nil }), "malformed batch"},
		{"bad kind", batch(42, func(e *wire.Envelope) { e.Kind = 17 }), "malformed batch"},
		{"bad order", batch(42, func(e *wire.Envelope) { e.Message.Order = 9 }), "malformed batch"},
		{"bad payload", batch(42, func(e *wire.Envelope) {
			e.Message.Payload = []byte{0xff}
			e.Message.Id.Srn = 2
		}), "message does not decode"},
	}
	for i, c := range cases {
		pe.Receive(0, c.payload)
		runPosted(pe, net)
		st := pe.Stats()
		require.Equal(t, uint64(i+1), st.Dropped, c.name)
		require.NotZero(t, st.DroppedByReason[c.reason], c.name)
	}
	// A message for an element that lives on another PE is passed on there.
	pe.Receive(0, batch(42, func(e *wire.Envelope) { e.Message.To = TaskID(1, 0) }))
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Forwarded)
	require.Len(t, net.sent[0], 1)
	net.sent[0] = nil
	// The PE still works: a good begin for worker 3 is handled; its send
	// to worker 2 (also on PE 1) waits, as worker 2 has not begun, and its
	// send to worker 0 goes to PE 0.
	pe.Receive(0, batch(42, func(e *wire.Envelope) { e.Message.Id.Srn = 3 }))
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Delivered)
	require.Len(t, net.sent[0], 1, "the send to worker 0 on PE 0")
	// The same message again is a duplicate: not handled twice.
	pe.Receive(0, batch(42, func(e *wire.Envelope) { e.Message.Id.Srn = 3 }))
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Delivered)
}

func runPosted(pe *PE, net *recordingNet) {
	for i := 0; i < 1000 && len(net.posted) > 0; i++ {
		ev := net.posted[0]
		net.posted = net.posted[1:]
		pe.Event(ev)
	}
}

func FuzzReceive(f *testing.F) {
	good, _ := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{goodMessage(f)}})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x12, 0x04, 0x10, 0x01, 0x18, 0x01})
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
			net := &recordingNet{sent: map[int][][]byte{}}
			pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: ringApp(4, 1, actor.BlockMap), Protocol: kind, Net: net, Control: nopControl{}})
			if err != nil {
				t.Fatal(err)
			}
			pe.Receive(0, payload)
			runPosted(pe, net)
		}
	})
}

func (nopControl) Loads([]migrate.TaskLoad) {}
func (nopControl) Migrated()                {}
func (nopControl) Progress(uint64)          {}
func (nopControl) Committed(uint64)         {}
func (nopControl) Diagnosis(string)         {}

// A message that reaches a PE after its task moved away is passed on to
// the task's new PE, not dropped.
func TestMessageForMovedTaskIsForwarded(t *testing.T) {
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 1, Size: 3, JobID: 42, App: ringApp(6, 1, actor.BlockMap), Protocol: logging.KindPartialDet, Net: net, Control: nopControl{}})
	require.NoError(t, err)
	// Worker 3 starts on PE 1 (block map of 6 over 3) and moves to PE 2.
	workers := pe.colls[1]
	_, err = pe.exportTask(workers, 3)
	require.NoError(t, err)
	workers.homeOf[3] = 2
	env := goodMessage(t)
	b, err := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{env}})
	require.NoError(t, err)
	pe.Receive(0, b)
	runPosted(pe, net)
	require.Zero(t, pe.Stats().Dropped)
	require.Equal(t, uint64(1), pe.Stats().Forwarded)
	require.Len(t, net.sent[2], 1)
	var out wire.Batch
	require.NoError(t, proto.Unmarshal(net.sent[2][0], &out))
	require.Len(t, out.Envelopes, 1)
	fwd := out.Envelopes[0]
	require.Equal(t, int32(1), fwd.From, "the forwarding PE sends it on as its own envelope")
	require.Equal(t, int32(2), fwd.To)
	got, err := envelopeFromWire(fwd, 1, 2, 3)
	require.NoError(t, err)
	require.Equal(t, env.Message.Id.Srn, got.Message.ID.SRN)
}

// syncWorker offers a sync point after its only step.
type syncWorker struct{ worker }

func (w *syncWorker) ResumeFromSync(ctx actor.Context) {}

// A callback handler keyed by the reduction number receives the results
// in number order; a task inside an open commutative region at a
// checkpoint is reported by name instead of failing the PE.
func TestKeyedCallbacksAndRegionAtCheckpoint(t *testing.T) {
	app := func(openRegion bool) actor.App {
		return actor.App{Name: "keyed", Define: func(j *actor.Job, args []string) error {
			mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
			workers := actor.NewCollection(j, "w", actor.Shape{5}, actor.RoundRobinMap, func(actor.Index) *syncWorker { return &syncWorker{} })
			workers.UsesAtSync()
			var results *actor.Proxy[*actor.ReductionResult]
			var half *actor.Proxy[*testmsg.Num]
			step := actor.Handle(workers, "step", actor.AnnotateOrdered(), func(w *syncWorker, ctx actor.Context, m *testmsg.Num) {
				for n := 0; n < 3; n++ {
					ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(n)}}, results.At(actor.Idx(0)))
				}
				if openRegion && ctx.Index()[0] == 0 {
					half.Send(ctx, actor.Idx(0), &testmsg.Num{})
				}
				ctx.AtSync(0)
			})
			// Start has key 0, result n key n+2; the half region (key 1)
			// comes first when it is sent at all.
			results = actor.Handle(mains, "results", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
				ctx.Printf("result %d = %d", r.Number, r.Ints[0])
				ctx.Expect(r.Number + 3)
				if r.Number == 2 && !openRegion {
					ctx.Exit(0)
				}
			}, actor.KeyBy(func(r *actor.ReductionResult) uint64 { return r.Number + 2 }))
			half = actor.Handle(mains, "half", actor.AnnotateCommutative(2), func(t *mainTask, ctx actor.Context, m *testmsg.Num) {},
				actor.KeyBy(func(*testmsg.Num) uint64 { return 1 }))
			start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
				if openRegion {
					ctx.Expect(1)
				} else {
					ctx.Expect(2)
				}
				step.Broadcast(ctx, &testmsg.Num{})
			}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
			actor.Main(j, start, actor.Idx(0))
			return nil
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := RunInProcess(ctx, app(false), nil, 3, nil, WithProtocol(logging.KindPartialDet))
	require.NoError(t, err)
	require.Equal(t, []string{"result 0 = 0", "result 1 = 5", "result 2 = 10"}, res.Output)

	_, err = RunInProcess(ctx, app(true), nil, 3, nil, WithProtocol(logging.KindPartialDet), WithCheckpointEvery(1))
	require.ErrorIs(t, err, ErrRegionAtCheckpoint)
	require.ErrorContains(t, err, "main(0) is inside a region of handler half")
}

// A handler that panics stops the job, in process as on PE processes,
// with the panic's value, the task, the handler and the stack.
func TestHandlerPanicStopsTheJob(t *testing.T) {
	app := actor.App{Name: "panics", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		workers := actor.NewCollection(j, "w", actor.Shape{4}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		work := actor.Handle(workers, "work", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			if ctx.Index()[0] == 2 {
				var table map[string]int
				table["boom"]++ // a nil map: the kind of bug a handler has
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			work.Broadcast(ctx, &testmsg.Num{})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := RunInProcess(ctx, app, nil, 3, nil, WithProtocol(kind))
		cancel()
		require.ErrorIs(t, err, ErrHandlerPanic)
		require.ErrorContains(t, err, "w(2), handler work")
		require.ErrorContains(t, err, "assignment to entry in nil map")
		require.ErrorContains(t, err, "pe_test.go") // the stack
	}
}

// Under partialdet, two messages without a determinant that a task could
// handle next stop the job with both handlers named: the program does not
// order them, so no replay could follow the order they had.
func TestAmbiguousOrderIsReported(t *testing.T) {
	app := actor.App{Name: "ambiguous", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		sinks := actor.NewCollection(j, "sink", actor.Shape{1}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		// Both keyed 0: the keys do not tell them apart.
		key := actor.KeyBy(func(*testmsg.Num) uint64 { return 0 })
		left := actor.Handle(sinks, "left", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {}, key)
		right := actor.Handle(sinks, "right", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {}, key)
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			left.Send(ctx, actor.Idx(0), &testmsg.Num{})
			right.Send(ctx, actor.Idx(0), &testmsg.Num{})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := RunInProcess(ctx, app, nil, 2, nil, WithProtocol(logging.KindPartialDet))
	require.ErrorIs(t, err, ErrAmbiguousOrder)
	require.ErrorContains(t, err, `sink(0) could handle "left" (ordered, key 0) from main(0) or "right" (ordered, key 0) from main(0) next`)
	// Under none the order does not matter to recovery: the job runs.
	_, err = RunInProcess(ctx, app, nil, 2, nil, WithProtocol(logging.KindNone))
	require.ErrorIs(t, err, job.ErrQuiescentWithoutExit)
}

// A job that stops making progress (here a handler that never returns)
// ends after the stall timeout with a diagnosis that names the handler,
// instead of hanging.
func TestStallIsDiagnosed(t *testing.T) {
	release := make(chan struct{})
	app := actor.App{Name: "stuck", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		workers := actor.NewCollection(j, "w", actor.Shape{4}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		work := actor.Handle(workers, "work", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			if ctx.Index()[0] == 3 {
				<-release // a handler that does not return
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			work.Broadcast(ctx, &testmsg.Num{})
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := RunInProcess(ctx, app, nil, 2, nil, WithStallTimeout(400*time.Millisecond))
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("the stalled job did not end")
	}
	close(release)
	require.ErrorIs(t, err, job.ErrStalled)
	require.ErrorContains(t, err, "PE 1 did not answer: it is running w(3) in handler work")
	require.ErrorContains(t, err, "PE 0 (generation 0")
}
