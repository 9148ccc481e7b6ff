// Command jacobi2d is the program docs/tutorial.md builds: heat spreading
// by Jacobi iteration over a periodic square plate, the plate cut into a
// grid of blocks, one task per block. Messages and states are plain Go
// structs: no generated code, no Marshal methods.
//
//	go run ./examples/jacobi2d run jacobi2d --pes 3 --checkpoint-every 5 --kill pe=1,at=step:12
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/launcher"
)

// Begin starts a block's first iteration.
type Begin struct{}

// Ghost carries a block's edge at an iteration to a neighbour, into the
// side From of the neighbour's halo: 0 up, 1 down, 2 left, 3 right.
type Ghost struct {
	Iter   uint64
	From   int
	Values []float64
}

// Block is a task: n x n points of the plate and a halo one point wide
// around them, in rows of n+2. Its exported fields are its whole state.
type Block struct {
	Iter uint64
	T    []float64
	p    *plate `actor:"transient"`
}

// Main is the main task; it has no state.
type Main struct{}

// plate holds what every PE declares alike.
type plate struct {
	n, tasks int
	shape    actor.Shape // of the blocks: tasks x tasks
	iters    uint64
	ghost    *actor.Proxy[Ghost]
	total    actor.Callback
}

// App is the program: the launcher runs it on every PE.
var App = actor.App{
	Name:    "jacobi2d",
	Summary: "2-d Jacobi iteration on a periodic grid of blocks (the tutorial's program)",
	Define: func(j *actor.Job, args []string) error {
		p, err := parse(args)
		if err == nil {
			p.declare(j)
		}
		return err
	},
	LastStep: func(args []string) (uint64, bool) {
		p, err := parse(args)
		return p.iters - 1, err == nil && p.iters > 1
	},
}

func parse(args []string) (*plate, error) {
	fs := flag.NewFlagSet("jacobi2d", flag.ContinueOnError)
	n := fs.Int("n", 16, "points per side of a block")
	tasks := fs.Int("tasks", 4, "blocks per side of the plate")
	iters := fs.Uint64("iters", 30, "iterations")
	if err := fs.Parse(args); err != nil {
		return &plate{}, err
	}
	if *n < 1 || *tasks < 1 || *iters < 1 || fs.NArg() > 0 {
		return &plate{}, fmt.Errorf("--n %d --tasks %d --iters %d, extra arguments %q: want numbers of at least 1, no extra argument",
			*n, *tasks, *iters, fs.Args())
	}
	return &plate{n: *n, tasks: *tasks, shape: actor.Shape{*tasks, *tasks}, iters: *iters}, nil
}

func (p *plate) declare(j *actor.Job) {
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *Main { return &Main{} })
	blocks := actor.NewCollection(j, "blocks", p.shape, actor.BlockMap, func(at actor.Index) *Block {
		return &Block{T: grid(p.n, at[0] == 0), p: p}
	})
	blocks.UsesAtSync()

	begin := actor.Handle(blocks, "begin", actor.AnnotateOrdered(),
		func(b *Block, ctx actor.Context, _ Begin) { b.send(ctx) },
		actor.KeyBy(func(Begin) uint64 { return 0 }))
	// The four ghosts of an iteration commute: each fills its own side.
	p.ghost = actor.Handle(blocks, "ghost", actor.AnnotateCommutative(4),
		func(b *Block, _ actor.Context, g Ghost) {
			for k, v := range g.Values {
				b.T[cell(b.p.n, g.From, 0, k)] = v
			}
		},
		actor.KeyBy(func(g Ghost) uint64 { return g.Iter + 1 }),
		actor.WhenComplete(func(b *Block, ctx actor.Context, _ uint64) {
			b.T = sweep(b.p.n, b.T)
			b.Iter++
			if b.Iter == p.iters {
				ctx.Contribute(actor.Sum, actor.Value{Floats: sums(b.T, p.n+2, 0, 0, p.n)}, p.total)
			} else if !ctx.AtSync(b.Iter) {
				b.send(ctx)
			}
		}))

	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *Main, ctx actor.Context, _ *actor.Start) {
		ctx.Expect(1)
		begin.Broadcast(ctx, Begin{})
	}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	total := actor.Handle(mains, "total", actor.AnnotateOrdered(), func(_ *Main, ctx actor.Context, r *actor.ReductionResult) {
		got, want := r.Floats, reference(p.n, p.tasks, p.iters)
		ctx.Printf("jacobi2d: %d blocks of %dx%d, %d iterations: heat %.17g, squares %.17g (%016x)",
			r.Contributors, p.n, p.n, p.iters, got[0], got[1], math.Float64bits(got[1]))
		verdict := "match"
		if math.Float64bits(got[0]) != math.Float64bits(want[0]) || math.Float64bits(got[1]) != math.Float64bits(want[1]) {
			verdict = fmt.Sprintf("MISMATCH (serial %.17g, %.17g)", want[0], want[1])
		}
		ctx.Printf("reference: %s", verdict)
		ctx.Exit(0)
	}, actor.KeyBy(func(*actor.ReductionResult) uint64 { return 1 }))
	p.total = total.At(actor.Idx(0))
	actor.Main(j, start, actor.Idx(0))
}

// send expects the ghosts of the block's iteration and sends its four
// edges to its neighbours (the plate wraps around).
func (b *Block) send(ctx actor.Context) {
	ctx.Expect(b.Iter + 1)
	at := ctx.Index()
	for s := range 4 {
		to := b.p.shape.Wrap(actor.Idx(int(at[0])+[]int{-1, 1, 0, 0}[s], int(at[1])+[]int{0, 0, -1, 1}[s]))
		edge := make([]float64, b.p.n)
		for k := range edge {
			edge[k] = b.T[cell(b.p.n, s, 1, k)]
		}
		b.p.ghost.Send(ctx, to, Ghost{Iter: b.Iter, From: s ^ 1, Values: edge})
	}
}

// ResumeFromSync sends the next edges after a sync point.
func (b *Block) ResumeFromSync(ctx actor.Context) { b.send(ctx) }

// cell is the position in a block's array of the k-th point on side s, in
// the halo (depth 0) or on the block's own edge (depth 1).
func cell(n, s, depth, k int) int {
	line := []int{depth, n + 1 - depth}[s%2] // a row (up, down) or a column
	if s < 2 {
		return line*(n+2) + k + 1
	}
	return (k+1)*(n+2) + line
}

// grid returns the n x n points of a block and their halo, all cold but
// the first row if the block is on the plate's top edge.
func grid(n int, top bool) []float64 {
	t := make([]float64, (n+2)*(n+2))
	for k := n + 3; k < 2*n+3 && top; k++ {
		t[k] = 1
	}
	return t
}

// sweep returns one Jacobi iteration of the n x n points of t (halo kept).
func sweep(n int, t []float64) []float64 {
	next, w := slices.Clone(t), n+2
	for i := 1; i <= n; i++ {
		for k := i*w + 1; k <= i*w+n; k++ {
			next[k] = 0.25 * (t[k-w] + t[k+w] + t[k-1] + t[k+1])
		}
	}
	return next
}

// sums adds, row by row, the n x n points of t (rows of w) below and
// right of the point (r, c), and their squares.
func sums(t []float64, w, r, c, n int) []float64 {
	s := []float64{0, 0}
	for i := r + 1; i <= r+n; i++ {
		for _, v := range t[i*w+c+1 : i*w+c+n+1] {
			s[0], s[1] = s[0]+v, s[1]+v*v
		}
	}
	return s
}

func main() { os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, App)) }
