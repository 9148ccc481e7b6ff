package actor_test

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job/inprocess"
)

// stateless is a task with no state of its own.
type stateless struct{}

func (*stateless) MarshalBinary() ([]byte, error) { return nil, nil }
func (*stateless) UnmarshalBinary([]byte) error   { return nil }

// runExample runs an app on 3 PEs inside this process and prints its output.
func runExample(app actor.App) {
	res, err := inprocess.Run(context.Background(), app, nil, 3, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, line := range res.Output {
		fmt.Println(line)
	}
	fmt.Println("exit status", res.Status)
}

// A broadcast to a collection and a sum reduction of every element's answer.
func ExampleProxy_Broadcast() {
	runExample(actor.App{Name: "broadcast", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		cells := actor.NewCollection(j, "cells", actor.Shape{2, 3, 4}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		var total *actor.Proxy[*actor.ReductionResult]
		ask := actor.Handle(cells, "ask", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, m *wrapperspb.Int64Value) {
			at := ctx.Index()
			ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{m.Value * int64(at[0]+at[1]+at[2])}}, total.At(actor.Idx(0)))
		})
		// Main's two handlers are told apart by key: Start is 0, the
		// total 1 (Expect says which comes next).
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *actor.Start) {
			ctx.Expect(1)
			ask.Broadcast(ctx, wrapperspb.Int64(10))
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		total = actor.Handle(mains, "total", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Printf("%d contributions, total %d", r.Contributors, r.Ints[0])
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}})
	// Output:
	// 24 contributions, total 720
	// exit status 0
}

// accumulator keeps the values of its current region.
type accumulator struct {
	slots [4]float64
	sums  []float64
}

func (*accumulator) MarshalBinary() ([]byte, error) { return nil, nil }
func (*accumulator) UnmarshalBinary([]byte) error   { return nil }

// A commutative region of 4 messages keyed by round: each message fills its
// own slot, and the completion step adds the slots in a fixed order, so the
// result is the same whatever order the messages arrive in. Messages of the
// next round wait until the task expects that round.
func ExampleAnnotateCommutative() {
	runExample(actor.App{Name: "regions", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		sinks := actor.NewCollection(j, "sink", actor.Shape{1}, actor.BlockMap, func(actor.Index) *accumulator { return &accumulator{} })
		senders := actor.NewCollection(j, "senders", actor.Shape{4}, actor.RoundRobinMap, func(actor.Index) *stateless { return &stateless{} })
		const rounds = 3
		var part *actor.Proxy[*wrapperspb.DoubleValue]
		part = actor.Handle(sinks, "part", actor.AnnotateCommutative(4),
			func(a *accumulator, ctx actor.Context, m *wrapperspb.DoubleValue) {
				slot := int(m.Value) % 4
				a.slots[slot] = m.Value
			},
			actor.KeyBy(func(m *wrapperspb.DoubleValue) uint64 { return uint64(m.Value) / 4 }),
			actor.WhenComplete(func(a *accumulator, ctx actor.Context, round uint64) {
				a.sums = append(a.sums, a.slots[0]+a.slots[1]+a.slots[2]+a.slots[3])
				ctx.Expect(round + 1)
				if len(a.sums) == rounds {
					ctx.Printf("round sums %v", a.sums)
					ctx.Exit(0)
				}
			}))
		send := actor.Handle(senders, "send", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *actor.Start) {
			me := float64(ctx.Index()[0])
			for r := 0; r < rounds; r++ {
				part.Send(ctx, actor.Idx(0), wrapperspb.Double(float64(4*r)+me))
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, s *actor.Start) {
			send.Broadcast(ctx, s)
		})
		actor.Main(j, start, actor.Idx(0))
		return nil
	}})
	// Output:
	// round sums [6 22 38]
	// exit status 0
}

// Min and max reductions over floats, delivered to every element of a
// collection with a broadcast callback; quiescence detection then tells
// the main task that nothing is left to do.
func ExampleContext_StartQuiescence() {
	runExample(actor.App{Name: "quiescence", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		points := actor.NewCollection(j, "points", actor.Shape{5}, actor.BlockMap, func(actor.Index) *stateless { return &stateless{} })
		var quiet *actor.Proxy[*actor.Quiescence]
		var spread *actor.Proxy[*actor.ReductionResult]
		// Keys order each task's handlers: a point measures (key 0), then
		// takes result n with key n+1; main starts (0), then hears of
		// quiescence (1).
		measure := actor.Handle(points, "measure", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *actor.Start) {
			x := math.Sqrt(float64(ctx.Index()[0]))
			ctx.Expect(1)
			ctx.Contribute(actor.Min, actor.Value{Floats: []float64{x}}, spread.All())
			ctx.Contribute(actor.Max, actor.Value{Floats: []float64{x}}, spread.All())
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		spread = actor.Handle(points, "spread", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Expect(r.Number + 2)
			if ctx.Index()[0] == 4 {
				ctx.Printf("%s %.4f", r.Reducer, r.Floats[0])
			}
		}, actor.KeyBy(func(r *actor.ReductionResult) uint64 { return r.Number + 1 }))
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, s *actor.Start) {
			ctx.Expect(1)
			measure.Broadcast(ctx, s)
			ctx.StartQuiescence(quiet.At(actor.Idx(0)))
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		quiet = actor.Handle(mains, "quiet", actor.AnnotateOrdered(), func(_ *stateless, ctx actor.Context, _ *actor.Quiescence) {
			ctx.Printf("quiescent")
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.Quiescence) uint64 { return 1 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}})
	// Output:
	// min 0.0000
	// max 2.0000
	// quiescent
	// exit status 0
}

// neighbourValue is a plain Go message: no protobuf, no generated code.
type neighbourValue struct {
	From  int
	Value float64
}

// point is a task whose state is its exported fields, packed by the
// runtime: no Marshal methods.
type point struct {
	Left, Right float64
}

// A commutative region sized at run time: on a line of 5 points, each
// point sends its value to the neighbours it has, so the two end points
// wait for one message and the others for two, with no dummy messages.
// Messages and states are plain Go structs, and the reduction's callback
// is typed (a callback to a handler of another message would not compile).
func ExampleAnnotateCommutativeBy() {
	runExample(actor.App{Name: "line", Define: func(j *actor.Job, args []string) error {
		const n = 5
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *struct{} { return &struct{}{} })
		points := actor.NewCollection(j, "points", actor.Shape{n}, actor.BlockMap, func(actor.Index) *point { return &point{} })
		neighbours := func(at actor.Index, _ uint64) int {
			if at[0] == 0 || at[0] == n-1 {
				return 1
			}
			return 2
		}
		var total actor.Callback
		value := actor.Handle(points, "value", actor.AnnotateCommutativeBy(neighbours),
			func(p *point, ctx actor.Context, m neighbourValue) {
				if m.From < int(ctx.Index()[0]) {
					p.Left = m.Value
				} else {
					p.Right = m.Value
				}
			},
			actor.WhenComplete(func(p *point, ctx actor.Context, _ uint64) {
				ctx.Contribute(actor.Sum, actor.Value{Floats: []float64{p.Left + p.Right}}, total)
			}))
		send := actor.Handle(points, "send", actor.AnnotateOrderDependent(), func(_ *point, ctx actor.Context, _ struct{}) {
			me := int(ctx.Index()[0])
			for _, to := range []int{me - 1, me + 1} {
				if to >= 0 && to < n {
					value.Send(ctx, actor.Idx(to), neighbourValue{From: me, Value: float64(me)})
				}
			}
		})
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *struct{}, ctx actor.Context, _ *actor.Start) {
			ctx.Expect(1)
			send.Broadcast(ctx, struct{}{})
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		done := actor.Handle(mains, "done", actor.AnnotateOrdered(), func(_ *struct{}, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Printf("sum of the neighbours' values over %d points: %v", r.Contributors, r.Floats[0])
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
		total = done.At(actor.Idx(0))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}})
	// Output:
	// sum of the neighbours' values over 5 points: 16
	// exit status 0
}
