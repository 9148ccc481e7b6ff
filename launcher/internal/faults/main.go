// Command faults is a gochare binary for the launcher's tests: beside the
// mini-apps and "sums" (internal/sums, for --check-annotations) it
// bundles "faults", a small ring whose tasks can be told to panic, to run
// a handler that never returns, or to end without calling Exit, so that
// the tests see how real PE processes report each.
//
//	faults run faults --pes 3 [--steps N] [--panic-at S] [--hang-at S] [--no-exit] [--nondet]
//
// FAULTS_VARIANT, read by each process, stands for a binary built from
// other sources: "reordered" declares the same handlers in another order,
// "renamed" names the ring's handler differently (tests of the check at
// join that every PE declares the same handlers).
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/apps/lulesh"
	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/internal/sums"
	"github.com/gochare/gochare/launcher"
)

func main() {
	os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, App, stencil3d.App, leanmd.App, lulesh.App, sums.App))
}

// worker is a task of the ring: the step it is at.
type worker struct{ step uint64 }

func (w *worker) MarshalBinary() ([]byte, error) { return binary.AppendUvarint(nil, w.step), nil }
func (w *worker) UnmarshalBinary(b []byte) error {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return errors.New("faults: bad worker state")
	}
	w.step = v
	return nil
}

type mainTask struct{}

func (*mainTask) MarshalBinary() ([]byte, error) { return nil, nil }
func (*mainTask) UnmarshalBinary([]byte) error   { return nil }

// App is the ring: 8 workers pass a token to their right-hand neighbour
// for --steps steps, then main sums their steps and exits. Worker 5 is the
// one that misbehaves at the given step.
var App = actor.App{Name: "faults", Summary: "a ring whose tasks panic, hang or never finish (launcher tests)", Define: func(j *actor.Job, args []string) error {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	steps := fs.Uint64("steps", 20, "steps of the ring")
	panicAt := fs.Uint64("panic-at", 0, "worker 5 panics at this step (0: never)")
	hangAt := fs.Uint64("hang-at", 0, "worker 5's handler never returns at this step (0: never)")
	noExit := fs.Bool("no-exit", false, "main never calls Exit")
	nondet := fs.Bool("nondet", false, "worker 5's tokens carry its process id, in a field no receiver reads: the run's result is the same, the bytes sent are not (replay tests)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	const n = 8
	variant := os.Getenv("FAULTS_VARIANT")
	tokenName := "token"
	if variant == "renamed" {
		tokenName = "pass"
	}
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
	workers := actor.NewCollection(j, "workers", actor.Shape{n}, actor.RoundRobinMap, func(actor.Index) *worker { return &worker{} })
	var done *actor.Proxy[*actor.ReductionResult]
	var token *actor.Proxy[*wrapperspb.UInt64Value]
	declareDone := func() {
		done = actor.Handle(mains, "done", actor.AnnotateOrdered(), func(_ *mainTask, ctx actor.Context, r *actor.ReductionResult) {
			ctx.Printf("steps %d", r.Ints[0])
			if !*noExit {
				ctx.Exit(0)
			}
		}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
	}
	if variant == "reordered" {
		declareDone()
	}
	token = actor.Handle(workers, tokenName, actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *wrapperspb.UInt64Value) {
		w.step++
		me := int(ctx.Index()[0])
		if me == 5 && w.step == *panicAt {
			panic(fmt.Sprintf("worker %d was told to panic at step %d", me, w.step))
		}
		if me == 5 && w.step == *hangAt {
			select {} // a handler that never returns
		}
		if w.step == *steps {
			ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(w.step)}}, done.At(actor.Idx(0)))
			return
		}
		ctx.Expect(w.step)
		next := wrapperspb.UInt64(w.step + 1)
		if me == 5 && *nondet {
			pid := protowire.AppendTag(nil, 99, protowire.VarintType)
			next.ProtoReflect().SetUnknown(protowire.AppendVarint(pid, uint64(os.Getpid())))
		}
		token.Send(ctx, actor.Idx((me+1)%n), next)
	}, actor.KeyBy(func(m *wrapperspb.UInt64Value) uint64 { return m.Value - 1 }))
	// A token of value s makes its worker do step s (key s-1: a worker
	// expects key 0 when created).
	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *mainTask, ctx actor.Context, _ *actor.Start) {
		ctx.Expect(1)
		for i := range n {
			token.Send(ctx, actor.Idx((i+1)%n), wrapperspb.UInt64(1))
		}
	}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	if variant != "reordered" {
		declareDone()
	}
	actor.Main(j, start, actor.Idx(0))
	return nil
}}
