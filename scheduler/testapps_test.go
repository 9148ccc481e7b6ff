package scheduler

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
)

// The test applications of this package's tests: a ring of workers that
// exchange keyed messages with their neighbours (ringApp, and stepApp
// with sync points), and a token ring that ends by quiescence (rateApp).
// Their results are known in advance (expectedRing).

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

// syncWorker offers a sync point after its only step.
type syncWorker struct{ worker }

func (w *syncWorker) ResumeFromSync(ctx actor.Context) {}

// stepWorker is a ring worker that offers a sync point after every round.
type stepWorker struct {
	worker
	resume func(*stepWorker, actor.Context)
}

func (w *stepWorker) ResumeFromSync(ctx actor.Context) { w.resume(w, ctx) }

// stepApp is the ring of ringApp with sync points: n workers (block
// mapped) exchange values with their neighbours for rounds rounds; after
// round r a worker offers step r. Main prints the digest of the workers'
// histories, the line expectedRing gives.
func stepApp(n, rounds int) actor.App { return stepAppWith(n, rounds, nil) }

// unevenStepApp is stepApp in which the workers on the first PEs of a
// block map work longer each round, so that load balancing moves tasks.
func unevenStepApp(n, rounds int) actor.App {
	return stepAppWith(n, rounds, func(_ actor.Context, me int, _ uint64) {
		if me < n/4 {
			deadline := time.Now().Add(200 * time.Microsecond)
			for time.Now().Before(deadline) {
			}
		}
	})
}

// stepAppWith is stepApp whose workers call each(ctx, index, round) as
// they complete a round.
func stepAppWith(n, rounds int, each func(ctx actor.Context, me int, round uint64)) actor.App {
	return actor.App{Name: "steps", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		var neighbour, begin *actor.Proxy[*testmsg.Num]
		send := func(w *stepWorker, ctx actor.Context) {
			me := int(ctx.Index()[0])
			v := contribution(me) + float64(w.round)
			ctx.Expect(w.round + 1)
			neighbour.Send(ctx, actor.Idx((me+1)%n), &testmsg.Num{Key: w.round + 1, From: 0, Value: v})
			neighbour.Send(ctx, actor.Idx((me+n-1)%n), &testmsg.Num{Key: w.round + 1, From: 1, Value: v})
		}
		workers := actor.NewCollection(j, "workers", actor.Shape{n}, actor.BlockMap, func(actor.Index) *stepWorker { return &stepWorker{resume: send} })
		workers.UsesAtSync()
		concat := j.CustomReducer("concat", func(a, b actor.Value) actor.Value {
			return actor.Value{Bytes: append(append([]byte(nil), a.Bytes...), b.Bytes...)}
		})
		// Main handles Start (key 0), then the digests (key 1).
		digests := actor.Handle(mains, "digests", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			h := fnv.New64a()
			h.Write(r.Bytes)
			ctx.Printf("digest %x of %d bytes", h.Sum64(), len(r.Bytes))
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
		neighbour = actor.Handle(workers, "neighbour", actor.AnnotateCommutative(2),
			func(w *stepWorker, ctx actor.Context, m *testmsg.Num) { w.got[m.From] = m.Value },
			actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }),
			actor.WhenComplete(func(w *stepWorker, ctx actor.Context, key uint64) {
				if each != nil {
					each(ctx, int(ctx.Index()[0]), key-1)
				}
				h := fnv.New64a()
				fmt.Fprintf(h, "%d %x %x %x", key-1, math.Float64bits(w.got[0]), math.Float64bits(w.got[1]), w.history)
				w.history = h.Sum64()
				w.round++
				if int(w.round) == rounds {
					ctx.Contribute(concat, actor.Value{Bytes: binary.LittleEndian.AppendUint64(nil, w.history)}, digests.At(actor.Idx(0)))
					return
				}
				if ctx.AtSync(w.round - 1) {
					return // ResumeFromSync sends the next round
				}
				send(w, ctx)
			}))
		begin = actor.Handle(workers, "begin", actor.AnnotateOrdered(), func(w *stepWorker, ctx actor.Context, m *testmsg.Num) {
			send(w, ctx)
		}, actor.KeyBy(func(m *testmsg.Num) uint64 { return m.Key }))
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			ctx.Expect(1)
			begin.Broadcast(ctx, &testmsg.Num{})
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
}

// rateApp: tasks tasks, each passes a token hops times along the ring; the
// job ends by quiescence detection. tasks*hops messages in all.
func rateApp(tasks, hops int) actor.App {
	return actor.App{Name: "rate", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		ring := actor.NewCollection(j, "ring", actor.Shape{tasks}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		var pass *actor.Proxy[*testmsg.Num]
		pass = actor.Handle(ring, "pass", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			if m.Key == 0 {
				return
			}
			pass.Send(ctx, actor.Idx((int(ctx.Index()[0])+1)%tasks), &testmsg.Num{Key: m.Key - 1})
		})
		var quiet *actor.Proxy[*actor.Quiescence]
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			ctx.Expect(1)
			pass.Broadcast(ctx, &testmsg.Num{Key: uint64(hops)})
			ctx.StartQuiescence(quiet.At(actor.Idx(0)))
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		quiet = actor.Handle(mains, "quiet", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, q *actor.Quiescence) {
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.Quiescence) uint64 { return 1 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
}
