// Command ring is a gochare program written with plain Go structs only:
// its messages and its tasks' states are ordinary structs, encoded and
// checkpointed by the runtime, with no generated code and no Marshal
// methods.
//
// N tasks sit on a ring. At step s every task sends its value to the
// tasks 1 to hops(s) places ahead of it (hops(s) = 1 + s mod 3), so the
// number of messages a task receives changes from step to step: a
// commutative region whose size the program tells at run time. Each
// message fills its own slot; once all have come, the task mixes them into
// its value in slot order, so the result does not depend on the order they
// arrived in. After the last step a typed sum reduction brings every
// value to the main task, which prints the total and checks it against a
// serial computation of the same steps.
//
//	go run ./examples/ring run ring --pes 3 --checkpoint-every 4 --kill pe=1,at=step:9
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/launcher"
)

// Part is a message: a value sent hop places along the ring at a step.
type Part struct {
	Step  uint64
	Hop   int
	Value float64
}

// Begin starts a task's first step.
type Begin struct{}

// Worker is a task of the ring. Its exported fields are its whole state;
// ring is set by the constructor and is no part of it.
type Worker struct {
	Value float64
	// Step is the step the task is at, from 1.
	Step uint64
	// Parts holds the values of the current step, by hop.
	Parts []float64

	ring *ring `actor:"transient"`
}

// Main is the main task: it has no state.
type Main struct{}

// ring holds the declarations every PE makes alike.
type ring struct {
	tasks int
	steps uint64
	begin *actor.Proxy[Begin]
	part  *actor.Proxy[Part]
	total actor.Callback
}

// hops is the number of tasks a task sends to at step s, and so the
// number of parts it receives.
func hops(s uint64) int { return 1 + int(s%3) }

// App is the ring program.
var App = actor.App{
	Name:    "ring",
	Summary: "values mixed along a ring: plain Go messages and state, a commutative region sized at run time, a typed reduction",
	Define: func(j *actor.Job, args []string) error {
		r, err := parse(args)
		if err != nil {
			return err
		}
		r.declare(j)
		return nil
	},
	LastStep: func(args []string) (uint64, bool) {
		r, err := parse(args)
		if err != nil || r.steps < 2 {
			return 0, false
		}
		return r.steps - 1, true
	},
}

func parse(args []string) (*ring, error) {
	fs := flag.NewFlagSet("ring", flag.ContinueOnError)
	tasks := fs.Int("tasks", 8, "tasks on the ring")
	steps := fs.Uint64("steps", 20, "steps")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *tasks < 1 || *steps < 1 {
		return nil, fmt.Errorf("ring: --tasks %d --steps %d: need at least one of each", *tasks, *steps)
	}
	return &ring{tasks: *tasks, steps: *steps}, nil
}

func (r *ring) declare(j *actor.Job) {
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *Main { return &Main{} })
	workers := actor.NewCollection(j, "workers", actor.Shape{r.tasks}, actor.RoundRobinMap, func(at actor.Index) *Worker {
		return &Worker{Value: float64(at[0] + 1), ring: r}
	})
	workers.UsesAtSync()

	// Keys: Begin is 0, the parts of step s are s.
	r.begin = actor.Handle(workers, "begin", actor.AnnotateOrdered(), func(w *Worker, ctx actor.Context, _ Begin) {
		w.Step = 1
		w.send(ctx)
	}, actor.KeyBy(func(Begin) uint64 { return 0 }))
	r.part = actor.Handle(workers, "part",
		actor.AnnotateCommutativeBy(func(_ actor.Index, step uint64) int { return hops(step) }),
		func(w *Worker, _ actor.Context, p Part) { w.Parts[p.Hop-1] = p.Value },
		actor.KeyBy(func(p Part) uint64 { return p.Step }),
		actor.WhenComplete(func(w *Worker, ctx actor.Context, step uint64) {
			w.Value = mix(w.Value, w.Parts)
			if step == r.steps {
				ctx.Contribute(actor.Sum, actor.Value{Floats: []float64{w.Value}}, r.total)
				return
			}
			w.Step = step + 1
			if ctx.AtSync(step) {
				return // the next parts go out from ResumeFromSync
			}
			w.send(ctx)
		}))

	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *Main, ctx actor.Context, _ *actor.Start) {
		ctx.Expect(1)
		r.begin.Broadcast(ctx, Begin{})
	}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	// The reduction's callback is typed: a handler of any other message
	// would not compile as r.total.
	total := actor.Handle(mains, "total", actor.AnnotateOrdered(), func(_ *Main, ctx actor.Context, res *actor.ReductionResult) {
		got := res.Floats[0]
		want := reference(r.tasks, r.steps)
		verdict := "match"
		if math.Float64bits(got) != math.Float64bits(want) {
			verdict = fmt.Sprintf("MISMATCH (serial %v)", want)
		}
		ctx.Printf("ring: %d tasks, %d steps: total %.17g (%016x)", res.Contributors, r.steps, got, math.Float64bits(got))
		ctx.Printf("reference: %s", verdict)
		ctx.Exit(0)
	}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
	r.total = total.At(actor.Idx(0))
	actor.Main(j, start, actor.Idx(0))
}

// send expects the parts of the task's step and sends its value to the
// tasks hops(step) places ahead.
func (w *Worker) send(ctx actor.Context) {
	ctx.Expect(w.Step)
	n := hops(w.Step)
	w.Parts = make([]float64, n)
	me := int(ctx.Index()[0])
	for hop := 1; hop <= n; hop++ {
		w.ring.part.Send(ctx, actor.Idx((me+hop)%w.ring.tasks), Part{Step: w.Step, Hop: hop, Value: w.Value})
	}
}

// ResumeFromSync sends the parts of the step after a sync point.
func (w *Worker) ResumeFromSync(ctx actor.Context) { w.send(ctx) }

// mix is a task's new value from its value and its parts, in hop order.
func mix(v float64, parts []float64) float64 {
	for h, p := range parts {
		v += p / float64(h+2)
	}
	return math.Sin(v) + 1
}

// reference computes the total serially: the same steps, and the sum
// combined over the same tree of indices as the runtime's reductions
// (lower half first).
func reference(tasks int, steps uint64) float64 {
	v := make([]float64, tasks)
	for i := range v {
		v[i] = float64(i + 1)
	}
	for s := uint64(1); s <= steps; s++ {
		next := make([]float64, tasks)
		for i := range v {
			parts := make([]float64, hops(s))
			for h := range parts {
				parts[h] = v[((i-h-1)%tasks+tasks)%tasks]
			}
			next[i] = mix(v[i], parts)
		}
		v = next
	}
	var sum func(lo, hi int) float64
	sum = func(lo, hi int) float64 {
		if hi-lo == 1 {
			return v[lo]
		}
		mid := (lo + hi) / 2
		return sum(lo, mid) + sum(mid, hi)
	}
	return sum(0, tasks)
}

func main() { os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, App)) }
