// Package sums is a small application for the tests of the annotation
// check (--check-annotations, actor/regioncheck): four parts send a value
// each to every accumulator, whose handler, annotated commutative, adds
// it to a sum; the accumulators' sums are reduced and printed, round after
// round. With --float the values are float64s added in arrival order,
// which does not commute (1 + 2/3 + 0.001 + 0.001 gives another sum in
// every order than in its reverse); without, they are integers, which do.
package sums

import (
	"flag"

	"github.com/gochare/gochare/actor"
)

// Parts and Accumulators are the sizes of the two collections.
const (
	Parts        = 4
	Accumulators = 2
)

// FloatValues are the parts' values with --float, IntValues without.
var (
	FloatValues = [Parts]float64{1, 2.0 / 3, 0.001, 0.001}
	IntValues   = [Parts]int64{1, 2, 3, 4}
)

// Add is a part's value for one round.
type Add struct {
	Round uint64
	F     float64
	I     int64
}

// Emit asks a part for its value of a round.
type Emit struct{ Round uint64 }

// Accumulator is an element of "acc": its sums so far.
type Accumulator struct {
	F float64
	I int64
}

type part struct{}

type mainTask struct{ Round uint64 }

// App is the application, named "sums".
var App = actor.App{Name: "sums", Summary: "accumulators that add values in arrival order (annotation check tests)", Define: Define}

// Define declares the job: flags --float and --rounds N.
func Define(j *actor.Job, args []string) error {
	fs := flag.NewFlagSet("sums", flag.ContinueOnError)
	float := fs.Bool("float", false, "add float64s (not commutative) instead of integers")
	rounds := fs.Uint64("rounds", 2, "rounds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
	parts := actor.NewCollection(j, "parts", actor.Shape{Parts}, actor.RoundRobinMap, func(actor.Index) *part { return &part{} })
	accs := actor.NewCollection(j, "acc", actor.Shape{Accumulators}, actor.RoundRobinMap, func(actor.Index) *Accumulator { return &Accumulator{} })
	var total *actor.Proxy[*actor.ReductionResult]
	add := actor.Handle(accs, "add", actor.AnnotateCommutative(Parts), func(a *Accumulator, _ actor.Context, m Add) {
		if *float {
			a.F += m.F
		} else {
			a.I += m.I
		}
	}, actor.KeyBy(func(m Add) uint64 { return m.Round }),
		actor.WhenComplete(func(a *Accumulator, ctx actor.Context, round uint64) {
			ctx.Expect(round + 1)
			ctx.Contribute(actor.Sum, actor.Value{Floats: []float64{a.F}, Ints: []int64{a.I}}, total.At(actor.Idx(0)))
		}))
	emit := actor.Handle(parts, "emit", actor.AnnotateOrdered(), func(_ *part, ctx actor.Context, m Emit) {
		i := ctx.Index()[0]
		add.Broadcast(ctx, Add{Round: m.Round, F: FloatValues[i], I: IntValues[i]})
	})
	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, _ *actor.Start) {
		ctx.Expect(1)
		emit.Broadcast(ctx, Emit{Round: 0})
	}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	total = actor.Handle(mains, "total", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, r *actor.ReductionResult) {
		ctx.Printf("round %d: float sum %v, integer sum %d", t.Round, r.Floats[0], r.Ints[0])
		t.Round++
		if t.Round == *rounds {
			ctx.Exit(0)
			return
		}
		ctx.Expect(t.Round + 1)
		emit.Broadcast(ctx, Emit{Round: t.Round})
	}, actor.KeyBy(func(r *actor.ReductionResult) uint64 { return r.Number + 1 }))
	actor.Main(j, start, actor.Idx(0))
	return nil
}
