// Command hello is a complete gochare program: a 2-d collection of
// greeters, an ordered handler, a broadcast and a sum reduction.
//
//	go run ./examples/hello run hello --pes 3
package main

import (
	"encoding/binary"
	"errors"
	"os"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/launcher"
)

// Greeter is a task. Its whole state is how often it was greeted.
type Greeter struct{ greeted int64 }

func (g *Greeter) MarshalBinary() ([]byte, error) { return binary.AppendVarint(nil, g.greeted), nil }
func (g *Greeter) UnmarshalBinary(b []byte) error {
	v, n := binary.Varint(b)
	if n <= 0 {
		return errors.New("hello: bad greeter state")
	}
	g.greeted = v
	return nil
}

// Main is the task that starts the job and receives the reduction.
type Main struct{}

func (*Main) MarshalBinary() ([]byte, error) { return nil, nil }
func (*Main) UnmarshalBinary([]byte) error   { return nil }

// App declares the program; every PE runs the same declaration.
var App = actor.App{Name: "hello", Summary: "greet 12 tasks and sum their answers", Define: func(j *actor.Job, args []string) error {
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *Main { return &Main{} })
	greeters := actor.NewCollection(j, "greeters", actor.Shape{4, 3}, actor.RoundRobinMap, func(actor.Index) *Greeter { return &Greeter{} })

	var done *actor.Proxy[*actor.ReductionResult]
	// An ordered handler: each greeter gets one greeting, so the order of
	// receptions cannot matter and no determinant is ever logged for it.
	greet := actor.Handle(greeters, "greet", actor.AnnotateOrdered(), func(g *Greeter, ctx actor.Context, m *wrapperspb.StringValue) {
		g.greeted++
		at := ctx.Index()
		ctx.Logf("%s, from PE %d", m.Value, ctx.PE())
		ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(10*at[0] + at[1])}}, done.At(actor.Idx(0)))
	})
	// Main has two ordered handlers, so keys say which comes first: Start
	// (key 0), then the result (key 1). After a failure the runtime
	// replays a task's messages in the order its keys allow.
	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *Main, ctx actor.Context, s *actor.Start) {
		ctx.Expect(1)
		greet.Broadcast(ctx, wrapperspb.String("hello"))
	}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	done = actor.Handle(mains, "done", actor.AnnotateOrdered(), func(_ *Main, ctx actor.Context, r *actor.ReductionResult) {
		ctx.Printf("%d greeters answered; their ids add up to %d", r.Contributors, r.Ints[0])
		ctx.Exit(0)
	}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
	actor.Main(j, start, actor.Idx(0))
	return nil
}}

func main() { os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, App)) }
