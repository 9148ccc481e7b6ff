package gen

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
)

// Limits on a configuration, so that a typo cannot ask for a job the
// machine cannot hold.
const (
	maxSteps      = 1 << 16
	maxTasks      = 1 << 16 // tasks in one collection
	maxNeighbours = 64
	maxTickets    = 64
	maxWork       = 1 << 24
	maxGridDims   = 3
)

// ErrConfig wraps every error of Parse.
var ErrConfig = errors.New("gen: bad arguments")

// Config selects one program of the family. Seed alone picks every other
// field; a flag given on the command line overrides the seed's choice.
type Config struct {
	// Seed selects the program: the sizes below when not given, the
	// neighbour offsets, the ticket targets, the multicast sections, the
	// maps and the initial values.
	Seed uint64
	// Steps is the number of steps; the tasks offer a sync point after
	// every step but the last.
	Steps int
	// Cells is the number of tasks of the 1-d collection "cells".
	Cells int
	// Grid is the shape (1 to 3 extents) of the collection "grid".
	Grid []int
	// Neighbours is the number of cells each cell exchanges values with
	// per step (the size of its commutative region).
	Neighbours int
	// Tickets is the number of tickets each cell sends to grid tasks per
	// step (the size of its reply region).
	Tickets int
	// Work is the number of hash rounds the tasks of the first third of
	// each collection burn per step, so that the load is uneven and a
	// balancer has tasks to move; 0 for none.
	Work int
}

const synopsis = "usage: gen [--seed N] [--steps N] [--cells N] [--grid X[,Y[,Z]]] [--neighbours K] [--tickets T] [--work N]"

// Parse reads the arguments of a gen job.
func Parse(args []string) (Config, error) {
	var cfg Config
	var grid gridFlag
	fs := appkit.NewFlags("gen", synopsis)
	fs.Uint64Var(&cfg.Seed, "seed", 1, "program `seed`: chooses every size not given and the program's communication pattern")
	fs.IntVar(&cfg.Steps, "steps", 0, "number of steps `N` (default: from the seed, 3 to 6)")
	fs.IntVar(&cfg.Cells, "cells", 0, "tasks `N` of the 1-d collection (default: from the seed, 5 to 13)")
	fs.Var(&grid, "grid", "shape `X[,Y[,Z]]` of the grid collection (default: from the seed)")
	fs.IntVar(&cfg.Neighbours, "neighbours", 0, "neighbours `K` per cell and step (default: from the seed, 1 to 3)")
	fs.IntVar(&cfg.Tickets, "tickets", 0, "tickets `T` per cell and step (default: from the seed, 1 to 3)")
	fs.IntVar(&cfg.Work, "work", 0, "hash rounds `N` per step burnt by a third of the tasks, for uneven load")
	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	cfg.Grid = grid
	fill := seedDefaults(cfg.Seed)
	if !given["steps"] {
		cfg.Steps = fill.Steps
	}
	if !given["cells"] {
		cfg.Cells = fill.Cells
	}
	if !given["grid"] {
		cfg.Grid = fill.Grid
	}
	if !given["neighbours"] {
		cfg.Neighbours = min(fill.Neighbours, cfg.Cells)
	}
	if !given["tickets"] {
		cfg.Tickets = fill.Tickets
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate reports a configuration no job can run.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.Steps < 1 || c.Steps > maxSteps:
		return bad("--steps %d, want 1 to %d", c.Steps, maxSteps)
	case c.Cells < 1 || c.Cells > maxTasks:
		return bad("--cells %d, want 1 to %d", c.Cells, maxTasks)
	case c.Neighbours < 1 || c.Neighbours > min(c.Cells, maxNeighbours):
		return bad("--neighbours %d, want 1 to %d (at most --cells, each neighbour is a distinct cell)", c.Neighbours, min(c.Cells, maxNeighbours))
	case c.Tickets < 1 || c.Tickets > maxTickets:
		return bad("--tickets %d, want 1 to %d", c.Tickets, maxTickets)
	case c.Work < 0 || c.Work > maxWork:
		return bad("--work %d, want 0 to %d", c.Work, maxWork)
	case len(c.Grid) < 1 || len(c.Grid) > maxGridDims:
		return bad("--grid with %d extents, want 1 to %d", len(c.Grid), maxGridDims)
	}
	size := 1
	for _, e := range c.Grid {
		if e < 1 || e > maxTasks {
			return bad("--grid extent %d, want 1 to %d", e, maxTasks)
		}
		size *= e
	}
	if size > maxTasks {
		return bad("--grid of %d tasks, want at most %d", size, maxTasks)
	}
	return nil
}

// Args returns the command line that selects c.
func (c Config) Args() []string {
	grid := make([]string, len(c.Grid))
	for d, e := range c.Grid {
		grid[d] = strconv.Itoa(e)
	}
	return []string{
		"--seed", strconv.FormatUint(c.Seed, 10), "--steps", strconv.Itoa(c.Steps), "--cells", strconv.Itoa(c.Cells),
		"--grid", strings.Join(grid, ","), "--neighbours", strconv.Itoa(c.Neighbours), "--tickets", strconv.Itoa(c.Tickets),
		"--work", strconv.Itoa(c.Work),
	}
}

func (c Config) String() string { return strings.Join(c.Args(), " ") }

// seedDefaults is the seed's choice of sizes. Collection sizes are
// products of 1, 5, 7, 11 and 13: never a multiple of 2, 3 or 4, so that
// no PE count up to 4 divides them.
func seedDefaults(seed uint64) Config {
	r := newStream(seed, streamDefaults)
	pick := func(from ...int) int { return from[r.next()%uint64(len(from))] }
	c := Config{
		Steps:      3 + int(r.next()%4),
		Cells:      pick(5, 7, 11, 13),
		Neighbours: 1 + int(r.next()%3),
		Tickets:    1 + int(r.next()%3),
	}
	switch r.next() % 3 {
	case 0:
		c.Grid = []int{pick(5, 7, 11)}
	case 1:
		c.Grid = []int{pick(5, 7), pick(1, 5)}
	default:
		c.Grid = []int{pick(1, 5), 1, pick(5, 7)}
	}
	return c
}

// gridFlag is the value of --grid: 1 to 3 positive extents.
type gridFlag []int

func (g *gridFlag) String() string {
	if g == nil {
		return ""
	}
	parts := make([]string, len(*g))
	for d, e := range *g {
		parts[d] = strconv.Itoa(e)
	}
	return strings.Join(parts, ",")
}

func (g *gridFlag) Set(s string) error {
	parts := strings.Split(s, ",")
	if len(parts) > maxGridDims {
		return fmt.Errorf("want 1 to %d comma-separated extents, got %d", maxGridDims, len(parts))
	}
	out := make([]int, len(parts))
	for d, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%q is not an integer", p)
		}
		if n < 1 {
			return fmt.Errorf("extent %d, want at least 1", n)
		}
		out[d] = n
	}
	*g = out
	return nil
}

// plan is what a Config decides beyond its sizes: offsets, targets,
// sections, maps and initial values. Every PE builds the same plan.
type plan struct {
	cfg       Config
	gridShape actor.Shape
	gridSize  int
	// offsets are the Neighbours distinct offsets (mod Cells) along which
	// a cell sends its exchange values; slot j is offsets[j].
	offsets []int
	// cellMap and gridMap are the collections' initial maps.
	cellMap, gridMap actor.Map
	// gridMin makes the grid's step reduction a minimum, not a maximum.
	gridMin bool
	// expected[s][g] lists the tickets grid task g receives in step s, in
	// (cell, ticket) order.
	expected [][][]ticketID
}

// ticketID names ticket Ticket of cell Cell (in some step).
type ticketID struct{ Cell, Ticket int }

func newPlan(cfg Config) *plan {
	p := &plan{cfg: cfg, gridShape: actor.Shape(append([]int(nil), cfg.Grid...))}
	p.gridSize = p.gridShape.Size()
	r := newStream(cfg.Seed, streamOffsets)
	// A random choice of Neighbours distinct offsets among 0..Cells-1
	// (offset 0 is a cell sending to itself).
	perm := make([]int, cfg.Cells)
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := int(r.next() % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	p.offsets = perm[:cfg.Neighbours]
	maps := []actor.Map{actor.BlockMap, actor.RoundRobinMap}
	p.cellMap = maps[r.next()%2]
	p.gridMap = maps[r.next()%2]
	p.gridMin = r.next()%2 == 0
	p.expected = make([][][]ticketID, cfg.Steps)
	for s := range p.expected {
		p.expected[s] = make([][]ticketID, p.gridSize)
		for c := 0; c < cfg.Cells; c++ {
			for t := 0; t < cfg.Tickets; t++ {
				g := p.ticketTarget(uint64(s), c, t)
				p.expected[s][g] = append(p.expected[s][g], ticketID{c, t})
			}
		}
	}
	return p
}

// ticketTarget is the grid task (linear index) ticket t of cell c goes to
// in step s.
func (p *plan) ticketTarget(s uint64, c, t int) int {
	return int(mix(p.cfg.Seed, streamTargets, s, uint64(c), uint64(t)) % uint64(p.gridSize))
}

// inSection reports whether grid task g is in the section the main task
// multicasts the Bonus of step s to: about a third of the grid, and never
// nobody (task s mod size is always in).
func (p *plan) inSection(s uint64, g int) bool {
	return g == int(s%uint64(p.gridSize)) || mix(p.cfg.Seed, streamSections, s, uint64(g))%3 == 0
}

// section returns the Bonus section of step s.
func (p *plan) section(s uint64) actor.Section {
	var sec actor.Section
	for g := 0; g < p.gridSize; g++ {
		if p.inSection(s, g) {
			sec = append(sec, p.gridShape.At(g))
		}
	}
	return sec
}

// ticketIndex returns the position of (c, t) in the tickets grid task g
// expects in step s, or -1.
func (p *plan) ticketIndex(s uint64, g, c, t int) int {
	for i, id := range p.expected[s][g] {
		if id == (ticketID{c, t}) {
			return i
		}
	}
	return -1
}

// lastStep is the last step at which the tasks offer a sync point.
func (p *plan) lastStep() (uint64, bool) {
	if p.cfg.Steps < 2 {
		return 0, false
	}
	return uint64(p.cfg.Steps - 2), true
}
