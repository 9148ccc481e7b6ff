// Command pingpong measures the round trip of one message between two
// tasks on two PEs, through the whole runtime: proxies, the scheduler,
// the logging protocol chosen with --ft, and the transport between the
// PE processes. It is a benchmark: the times it reports are read from the
// clock inside handlers, so a run with a failure reports the time of the
// replayed rounds too.
//
//	go run ./examples/pingpong run pingpong --pes 2 --ft none --size 64 --iterations 20000
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/launcher"
)

// Player is one of the two tasks. Player 0 serves and times the rounds
// after the warm-up; player 1 sends back what it gets.
type Player struct {
	rounds       int64
	start, spent int64 // ns
}

func (p *Player) MarshalBinary() ([]byte, error) {
	b := binary.AppendVarint(nil, p.rounds)
	b = binary.AppendVarint(b, p.start)
	return binary.AppendVarint(b, p.spent), nil
}

func (p *Player) UnmarshalBinary(b []byte) error {
	for _, v := range []*int64{&p.rounds, &p.start, &p.spent} {
		x, n := binary.Varint(b)
		if n <= 0 {
			return errors.New("pingpong: bad player state")
		}
		*v, b = x, b[n:]
	}
	return nil
}

// App declares the program.
var App = actor.App{Name: "pingpong", Summary: "time the round trip of a message between tasks on two PEs", Define: func(j *actor.Job, args []string) error {
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	size := fs.Int("size", 64, "payload bytes")
	iterations := fs.Int64("iterations", 10000, "timed round trips")
	warmup := fs.Int64("warmup", 1000, "round trips before the timed ones")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *size < 0 || *iterations < 1 || *warmup < 0 {
		return fmt.Errorf("pingpong: --size %d, --iterations %d, --warmup %d: need size ≥ 0, iterations ≥ 1, warmup ≥ 0", *size, *iterations, *warmup)
	}

	var ball *actor.Proxy[*wrapperspb.BytesValue]
	rounds := *warmup + *iterations
	done := appkit.Main{
		Begin: func(ctx actor.Context) {
			if ctx.NumPEs() != 2 {
				ctx.Logf("pingpong: %d PEs; the round trip is between PEs only with --pes 2", ctx.NumPEs())
			}
			ball.Send(ctx, actor.Index{0}, wrapperspb.Bytes(make([]byte, *size)))
		},
		Finish: func(_ actor.Context, run appkit.Run) ([]string, int, error) {
			ns := float64(run.Results[0].Ints[0]) / float64(*iterations)
			return []string{
				fmt.Sprintf("round trip: %.2f µs (%d round trips of %d bytes between PE 0 and PE %d)", ns/1e3, *iterations, *size, 1%run.PEs),
				fmt.Sprintf("one-way bandwidth: %.1f MB/s", 2*float64(*size)/ns*1e3),
			}, 0, nil
		},
	}.Declare(j)

	players := actor.NewCollection(j, "players", actor.Shape{2}, actor.RoundRobinMap, func(actor.Index) *Player { return &Player{} })
	// A player has one message in flight to it at a time (the first ball
	// of player 0 comes from the main task, every other from the other
	// player), so the order of its receptions is the order of the rounds.
	ball = actor.Handle(players, "ball", actor.AnnotateOrdered(), func(p *Player, ctx actor.Context, m *wrapperspb.BytesValue) {
		if ctx.Index()[0] == 1 {
			p.rounds++
			ball.Send(ctx, actor.Index{0}, m)
			if p.rounds == rounds {
				ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{0}}, done)
			}
			return
		}
		// p.rounds balls came back so far.
		if p.rounds == *warmup {
			p.start = time.Now().UnixNano()
		}
		if p.rounds == rounds {
			p.spent = time.Now().UnixNano() - p.start
			ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{p.spent}}, done)
			return
		}
		p.rounds++
		ball.Send(ctx, actor.Index{1}, m)
	})
	return nil
}}

func main() { os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, App)) }
