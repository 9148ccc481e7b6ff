package leanmd

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/apps/leanmd/md"
)

// App is LeanMD: `gochare run leanmd --pes N --cells 5,5,3 --steps 200`.
var App = appkit.Spec[Options]{
	Name:    "leanmd",
	Summary: "Lennard-Jones molecular dynamics with cells, pair computes and atom migration",
	Parse:   ParseOptions,
	Declare: func(j *actor.Job, opts Options) { declare(j, opts, time.Now) },
	// Cells and computes offer steps 1 to steps-1: a sync point at the end
	// of every step but the last (see finishStep).
	LastStep: func(opts Options) (uint64, bool) {
		if opts.Steps < 2 {
			return 0, false
		}
		return uint64(opts.Steps - 1), true
	},
}.App()

// program is what every task of a job shares: the options and the proxies.
// It is rebuilt identically by Define on every PE and never packed.
type program struct {
	opts Options
	geo  md.Geometry

	begin         *actor.Proxy[*Begin]
	forces        *actor.Proxy[*Forces]
	migrants      *actor.Proxy[*Migrants]
	positions     *actor.Proxy[*Positions]
	selfPositions *actor.Proxy[*Positions]
	// results is the driver's callback for the cell reductions.
	results      actor.Callback
	stateReducer actor.Reducer
	// scratch pools the computes' working arrays (*computeScratch).
	scratch sync.Pool
}

// Keys tell apart what a task may handle next (a task expects key 0 when
// created). A cell: its Begin carries key 0, the forces of step s (from
// 1) forceKey(s), its migration lists migrationKey(s). A compute: the
// positions of step s carry positionsKey(s). The driver (appkit.Main)
// takes Start, then the cell reductions in number order. Without keys a
// restored cell could take the forces of step 1, resent by a surviving
// compute, before its Begin.
func forceKey(step uint64) uint64     { return 2*step - 1 }
func migrationKey(step uint64) uint64 { return 2 * step }
func positionsKey(step uint64) uint64 { return step - 1 }

// energyReductions is the number of energy reductions of a run: at the
// first and at the last step, once if they are the same.
func (p *program) energyReductions() int {
	if p.opts.Steps == 1 {
		return 1
	}
	return 2
}

// declare declares the job; clock reads the time on the driver's PE, for
// the time per step only.
func declare(j *actor.Job, opts Options, clock func() time.Time) {
	p := &program{opts: opts, geo: md.NewGeometry(opts.Config)}
	g := &p.geo
	cells := actor.NewCollection(j, "cells", actor.Shape{g.Cells[0], g.Cells[1], g.Cells[2]}, p.cellMap, p.newCell)
	computes := actor.NewCollection(j, "computes",
		actor.Shape{g.Cells[0], g.Cells[1], g.Cells[2], g.ComputesPerCell(), 1, 1}, p.computeMap, p.newCompute)
	// Cells and computes offer a sync point at the end of every step but
	// the last (the driver does not: it only waits for reductions).
	cells.UsesAtSync()
	computes.UsesAtSync()
	// The driver starts the cells, receives the energies of the first
	// (and last) step and the final state, and reports.
	p.results = appkit.Main{Collection: "driver", Results: p.energyReductions() + 1, Clock: clock,
		Begin: p.start, Finish: p.finish}.Declare(j)

	p.begin = actor.Handle(cells, "begin", actor.AnnotateOrdered(), (*cellTask).begin,
		actor.KeyBy(func(*Begin) uint64 { return 0 }))
	p.forces = actor.Handle(cells, "forces", actor.AnnotateCommutative(g.NumNeighbours()), (*cellTask).receiveForces,
		actor.KeyBy(func(m *Forces) uint64 { return forceKey(m.Step) }),
		actor.WhenComplete((*cellTask).forcesComplete))
	p.migrants = actor.Handle(cells, "migrants", actor.AnnotateCommutative(g.NumNeighbours()), (*cellTask).receiveMigrants,
		actor.KeyBy(func(m *Migrants) uint64 { return migrationKey(m.Step) }),
		actor.WhenComplete((*cellTask).migrantsComplete))
	p.positions = actor.Handle(computes, "positions", actor.AnnotateCommutative(2), (*computeTask).receivePositions,
		actor.KeyBy(func(m *Positions) uint64 { return positionsKey(m.Step) }),
		actor.WhenComplete((*computeTask).positionsComplete))
	p.selfPositions = actor.Handle(computes, "self-positions", actor.AnnotateOrdered(), (*computeTask).selfPositions,
		actor.KeyBy(func(m *Positions) uint64 { return positionsKey(m.Step) }))
	p.stateReducer = j.CustomReducer("leanmd-state", combineState)
}

// cellMap places the cells by the chosen map.
func (p *program) cellMap(lin, n, numPEs int) int {
	if p.opts.CellMap == "round-robin" {
		return actor.RoundRobinMap(lin, n, numPEs)
	}
	return actor.BlockMap(lin, n, numPEs)
}

// computeMap places each compute on the PE of its own cell: the row-major
// position of compute (x, y, z, k) is cell id · H + k.
func (p *program) computeMap(lin, n, numPEs int) int {
	return p.cellMap(lin/p.geo.ComputesPerCell(), p.geo.NumCells(), numPEs)
}

func cellOf(i actor.Index) md.Cell { return md.Cell{int(i[0]), int(i[1]), int(i[2])} }

func cellIndex(c md.Cell) actor.Index { return actor.Idx(c[0], c[1], c[2]) }

func computeIndex(home md.Cell, k int) actor.Index { return actor.Idx(home[0], home[1], home[2], k) }

// combineState is the final-state reducer: integers added, digest bytes
// concatenated (a holds the lower indices, so the bytes end in cell order).
func combineState(a, b actor.Value) actor.Value {
	if len(a.Ints) != len(b.Ints) || len(a.Floats)+len(b.Floats) != 0 {
		panic(fmt.Sprintf("leanmd: state reduction of values with %d/%d ints and %d/%d floats",
			len(a.Ints), len(b.Ints), len(a.Floats), len(b.Floats)))
	}
	out := actor.Value{Ints: make([]int64, len(a.Ints))}
	for k := range a.Ints {
		out.Ints[k] = a.Ints[k] + b.Ints[k]
	}
	out.Bytes = append(slices.Clip(a.Bytes), b.Bytes...)
	return out
}

// marshalState and unmarshalState pack task state as protobuf.
func marshalState(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}
