// Command hello is a complete gochare program: a 2-d collection of
// greeters, an ordered handler, a broadcast and a sum reduction.
//
//	go run ./examples/hello run hello --pes 3
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
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

// App declares the program; every PE runs the same declaration.
var App = actor.App{Name: "hello", Summary: "greet 12 tasks and sum their answers", Define: func(j *actor.Job, args []string) error {
	var greet *actor.Proxy[*wrapperspb.StringValue]
	// The main element (appkit.Main) greets everyone when the job starts,
	// then waits for one reduction result, prints it and ends the job.
	done := appkit.Main{
		Begin: func(ctx actor.Context) { greet.Broadcast(ctx, wrapperspb.String("hello")) },
		Finish: func(_ actor.Context, run appkit.Run) ([]string, int, error) {
			r := run.Results[0]
			return []string{fmt.Sprintf("%d greeters answered; their ids add up to %d", r.Contributors, r.Ints[0])}, 0, nil
		},
	}.Declare(j)

	greeters := actor.NewCollection(j, "greeters", actor.Shape{4, 3}, actor.RoundRobinMap, func(actor.Index) *Greeter { return &Greeter{} })
	// An ordered handler: each greeter gets one greeting, so the order of
	// receptions cannot matter and no determinant is ever logged for it.
	greet = actor.Handle(greeters, "greet", actor.AnnotateOrdered(), func(g *Greeter, ctx actor.Context, m *wrapperspb.StringValue) {
		g.greeted++
		at := ctx.Index()
		ctx.Logf("%s, from PE %d", m.Value, ctx.PE())
		ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(10*at[0] + at[1])}}, done)
	})
	return nil
}}

func main() { os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, App)) }
