package gen

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit/apptest"
)

// smallArgs is the command line of a small program of seed: the seed's
// own shapes, few steps, so that tests can run many seeds.
func smallArgs(seed uint64) []string {
	return []string{"--seed", fmt.Sprint(seed), "--steps", fmt.Sprint(2 + seed%3)}
}

func mustParse(t testing.TB, args []string) Config {
	t.Helper()
	cfg, err := Parse(args)
	require.NoError(t, err, "%q", args)
	return cfg
}

func reference(t testing.TB, args []string) string {
	t.Helper()
	line, err := Reference(mustParse(t, args))
	require.NoError(t, err)
	return line
}

// The seed picks every size not given, the same way every time; flags
// override it; the sizes it picks are never a multiple of 2, 3 or 4.
func TestParse(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(200) {
		cfg := mustParse(t, []string{"--seed", fmt.Sprint(seed)})
		require.Equal(t, cfg, mustParse(t, cfg.Args()), "Args reads back")
		require.Equal(t, cfg, mustParse(t, []string{"--seed", fmt.Sprint(seed)}))
		size := 1
		for _, e := range cfg.Grid {
			size *= e
		}
		for _, n := range []int{cfg.Cells, size} {
			for _, pes := range []int{2, 3, 4} {
				require.NotZero(t, n%pes, "seed %d: %d tasks on %d PEs", seed, n, pes)
			}
		}
		seen[fmt.Sprintf("%d-d", len(cfg.Grid))] = true
		seen[fmt.Sprintf("K=%d", cfg.Neighbours)] = true
		seen[fmt.Sprintf("T=%d", cfg.Tickets)] = true
		seen[fmt.Sprintf("min=%v", newPlan(cfg).gridMin)] = true
	}
	for _, want := range []string{"1-d", "2-d", "3-d", "K=1", "K=3", "T=1", "T=3", "min=true", "min=false"} {
		require.True(t, seen[want], "no seed gives %s", want)
	}
	cfg := mustParse(t, []string{"--seed", "7", "--steps", "9", "--cells", "4", "--grid", "2,3", "--neighbours", "4", "--tickets", "5", "--work", "10"})
	require.Equal(t, Config{Seed: 7, Steps: 9, Cells: 4, Grid: []int{2, 3}, Neighbours: 4, Tickets: 5, Work: 10}, cfg)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "0"}, "--steps 0, want 1"},
		{[]string{"--cells", "-2"}, "--cells -2"},
		{[]string{"--cells", "3", "--neighbours", "4"}, "--neighbours 4, want 1 to 3"},
		{[]string{"--tickets", "0"}, "--tickets 0"},
		{[]string{"--work", "-1"}, "--work -1"},
		{[]string{"--grid", "2,0"}, `invalid value "2,0" for flag -grid: extent 0`},
		{[]string{"--grid", "1,2,3,4"}, "want 1 to 3 comma-separated extents"},
		{[]string{"--grid", "x"}, `"x" is not an integer`},
		{[]string{"--seed", "-1"}, "invalid value"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--grid", "300,300"}, "--grid of 90000 tasks"},
	} {
		_, err := Parse(c.args)
		require.ErrorIs(t, err, ErrConfig, "%q", c.args)
		require.ErrorContains(t, err, c.want, "%q", c.args)
		require.ErrorContains(t, App.Define(actor.NewJob(), c.args), c.want, "Define refuses %q", c.args)
	}
	_, err := Parse([]string{"-h"})
	require.ErrorContains(t, err, "usage: gen [--seed N]")

	step, ok := App.LastStep([]string{"--steps", "5"})
	require.True(t, ok)
	require.Equal(t, uint64(3), step, "sync points after every step but the last")
	_, ok = App.LastStep([]string{"--steps", "1"})
	require.False(t, ok, "one step offers no sync point")
	_, ok = App.LastStep([]string{"--steps", "0"})
	require.False(t, ok)
	require.NoError(t, App.Define(actor.NewJob(), nil), "the declaration passes the runtime's order checks")
}

// The program's result does not depend on the delivery order, on the PE
// count, or on its tasks being packed and unpacked at any moment: in the
// runtime's one-goroutine double with random delivery orders, every seed
// prints the serial reference's line.
func TestDeliveryOrderDoesNotChangeTheDigest(t *testing.T) {
	for seed := range uint64(60) {
		args := smallArgs(seed)
		want := reference(t, args)
		for order := range uint64(3) {
			d := apptest.NewDouble(t, apptest.Define(t, App, args), 1+int(order), seed*7+order)
			d.PackProbability = 0.2 * float64(order)
			d.Run(args)
			require.Equal(t, 0, d.ExitStatus, "seed %d order %d: %v", seed, order, d.Output)
			require.Equal(t, []string{want}, d.Output, "seed %d order %d", seed, order)
			cfg := mustParse(t, args)
			require.Equal(t, cfg.Cells*cfg.Tickets*cfg.Steps, d.Deliveries["grid.ticket"], "one order-dependent reception per ticket")
		}
	}
}

// Different seeds give different programs (a digest that ignored the
// tasks' state would pass the equality tests).
func TestSeedsGiveDifferentDigests(t *testing.T) {
	lines := map[string]uint64{}
	for seed := range uint64(40) {
		line := reference(t, []string{"--seed", fmt.Sprint(seed), "--steps", "3", "--cells", "5", "--grid", "5", "--neighbours", "2", "--tickets", "2"})
		digest := strings.Fields(line)[2]
		if other, dup := lines[digest]; dup {
			t.Fatalf("seeds %d and %d give digest %s", other, seed, digest)
		}
		lines[digest] = seed
	}
	a := reference(t, []string{"--seed", "3", "--steps", "3"})
	b := reference(t, []string{"--seed", "3", "--steps", "4"})
	require.NotEqual(t, strings.Fields(a)[2], strings.Fields(b)[2], "one more step changes the digest")
}

// contextDouble is the actor.Context of a direct handler call.
type contextDouble struct {
	actor.Context
	index  actor.Index
	output []string
	exits  []int
	posted int
	expect uint64
}

func (c *contextDouble) Index() actor.Index                                    { return c.index }
func (c *contextDouble) Post(actor.Target, uint64, any)                        { c.posted++ }
func (c *contextDouble) Expect(key uint64)                                     { c.expect = key }
func (c *contextDouble) Contribute(actor.Reducer, actor.Value, actor.Callback) {}
func (c *contextDouble) Printf(format string, args ...any) {
	c.output = append(c.output, fmt.Sprintf(format, args...))
}
func (c *contextDouble) Exit(status int) { c.exits = append(c.exits, status) }

// A handler run twice for one message is caught by the receiver, which
// prints one line that says so and ends the job with StatusDuplicate:
// an exchange value, a ticket, a reply, a Begin, a step's sum at main.
func TestSecondDeliveryIsDetected(t *testing.T) {
	cfg := Config{Seed: 5, Steps: 2, Cells: 3, Grid: []int{2}, Neighbours: 2, Tickets: 2}
	p := declare(actor.NewJob(), cfg)
	newCell := func() *cell {
		return &cell{prog: p, slots: make([]uint64, 2), filled: make([]bool, 2), seen: make([]bool, 2)}
	}
	twice := func(name string, first, second func(ctx *contextDouble)) {
		t.Run(name, func(t *testing.T) {
			ctx := &contextDouble{}
			first(ctx)
			require.Empty(t, ctx.output, "the first delivery is fine")
			second(ctx)
			require.Equal(t, []int{StatusDuplicate}, ctx.exits)
			require.Len(t, ctx.output, 1)
			require.Contains(t, ctx.output[0], "a handler ran twice for one message")
		})
	}
	// Cell 1 gets slot j from cell (1 - offset_j) mod 3.
	from := (1 - p.offsets[0] + 3) % 3
	exchange := &Exchange{Step: 0, Slot: 0, Sender: uint32(from), Value: 9}
	c := newCell()
	twice("exchange", func(ctx *contextDouble) {
		ctx.index = actor.Idx(1)
		p.onCellBegin(c, ctx, &Begin{})
		p.onExchange(c, ctx, exchange)
	}, func(ctx *contextDouble) { p.onExchange(c, ctx, exchange) })

	// Grid task g's first expected ticket, delivered twice.
	var g, target int
	for g = range p.gridSize {
		if len(p.expected[0][g]) > 0 {
			target = g
			break
		}
	}
	id := p.expected[0][target][0]
	ticket := &Ticket{Step: 0, Sender: uint32(id.Cell), Ticket: uint32(id.Ticket), Value: 11}
	gt := &gridTask{prog: p}
	twice("ticket", func(ctx *contextDouble) {
		ctx.index = p.gridShape.At(target)
		p.onGridBegin(gt, ctx, &Begin{})
		p.onTicket(gt, ctx, ticket)
	}, func(ctx *contextDouble) {
		if len(p.expected[0][target]) == 1 {
			// The task's only ticket moved it on: the same one is now out
			// of phase, which is reported too.
			gt.phase = phaseTickets
		}
		p.onTicket(gt, ctx, ticket)
	})

	c2 := newCell()
	reply := &Reply{Step: 0, Grid: uint32(p.ticketTarget(0, 0, 1)), Ticket: 1, Position: 0, Trace: 3}
	twice("reply", func(ctx *contextDouble) {
		ctx.index = actor.Idx(0)
		p.onCellBegin(c2, ctx, &Begin{})
		c2.phase = phaseReplies
		p.onReply(c2, ctx, reply)
	}, func(ctx *contextDouble) { p.onReply(c2, ctx, reply) })

	c3 := newCell()
	twice("begin", func(ctx *contextDouble) { p.onCellBegin(c3, ctx, &Begin{}) }, func(ctx *contextDouble) { p.onCellBegin(c3, ctx, &Begin{}) })

	m := &mainTask{}
	sum := &actor.ReductionResult{Number: 0, Contributors: 3, Ints: []int64{5}}
	twice("step sum", func(ctx *contextDouble) {
		p.onStart(m, ctx, &actor.Start{NumPes: 2})
		p.onCellResult(m, ctx, sum)
	}, func(ctx *contextDouble) { p.onCellResult(m, ctx, sum) })
}

// The audit finds replies that do not chain: positions repeated, or a
// reply whose trace comes from another order than its neighbours'.
func TestAuditDetectsInconsistentOrder(t *testing.T) {
	cfg := Config{Seed: 1, Steps: 1, Cells: 1, Grid: []int{1}, Neighbours: 1, Tickets: 3}
	p := newPlan(cfg)
	x := []uint64{10, 20, 30}
	// The grid task took tickets 2, 0, 1 in that order.
	order := []int{2, 0, 1}
	trace := initialTrace(cfg.Seed, 0)
	replies := make([]replyRecord, 3)
	for pos, tk := range order {
		trace = traceStep(trace, x[tk])
		replies[tk] = replyRecord{Grid: 0, Step: 0, Position: uint32(pos), Ticket: uint32(tk), Value: x[tk], Trace: trace}
	}
	good := func() ([]cellRecord, []gridRecord) {
		return []cellRecord{{Exchanged: 1, Replies: append([]replyRecord(nil), replies...)}},
			[]gridRecord{{Count: 3, Traces: []uint64{trace}}}
	}
	cells, grids := good()
	require.NoError(t, audit(p, cells, grids))

	cells, grids = good()
	cells[0].Replies[1].Position = 0
	require.ErrorContains(t, audit(p, cells, grids), "reply positions [0 0 1] are not 0 to 2 once each")

	// Ticket 0's reply from an execution that took it first: its own
	// trace is right for that order, but the chain breaks.
	cells, grids = good()
	cells[0].Replies[0].Position, cells[0].Replies[2].Position = 0, 1
	cells[0].Replies[0].Trace = traceStep(initialTrace(cfg.Seed, 0), x[0])
	err := audit(p, cells, grids)
	require.ErrorIs(t, err, ErrAudit)
	require.ErrorContains(t, err, "the chain gives")

	cells, grids = good()
	grids[0].Traces[0]++
	require.ErrorContains(t, audit(p, cells, grids), "ended step 0 with trace")
	cells, grids = good()
	cells[0].Replies = cells[0].Replies[:2]
	require.ErrorContains(t, audit(p, cells, grids), "kept 2 replies, want 3")
}

func TestPackRoundTrip(t *testing.T) {
	cfg := Config{Seed: 5, Steps: 2, Cells: 3, Grid: []int{2}, Neighbours: 2, Tickets: 2}
	p := declare(actor.NewJob(), cfg)
	c := &cell{prog: p, begun: true, step: 1, phase: phaseReplies, acc: 4, startAcc: 5, slots: []uint64{1, 2}, filled: []bool{true, false},
		seen: []bool{false, true}, replies: []replyRecord{{1, 2, 3, 4, 5, 6}}, exchanged: 7}
	packed, err := c.MarshalBinary()
	require.NoError(t, err)
	back := &cell{prog: p, slots: make([]uint64, 2), filled: make([]bool, 2), seen: make([]bool, 2)}
	require.NoError(t, back.UnmarshalBinary(packed))
	require.Equal(t, c, back)
	wrong := &cell{prog: p, slots: make([]uint64, 3), filled: make([]bool, 3), seen: make([]bool, 2)}
	require.ErrorIs(t, wrong.UnmarshalBinary(packed), errBadState)
	require.ErrorIs(t, back.UnmarshalBinary(packed[:len(packed)-1]), errBadState)
	require.Equal(t, c, back, "a refused state leaves the task as it was")

	g := &gridTask{prog: p, begun: true, step: 1, phase: phaseBonus, received: 1, seen: []bool{true, false}, trace: 9, traces: []uint64{8}, sum: 1, count: 2, bonus: 3, reduced: 4}
	packed, err = g.MarshalBinary()
	require.NoError(t, err)
	gback := &gridTask{prog: p}
	require.NoError(t, gback.UnmarshalBinary(packed))
	require.Equal(t, g, gback)
	require.ErrorIs(t, gback.UnmarshalBinary(append(packed, 0)), errBadState)
	require.ErrorIs(t, gback.UnmarshalBinary([]byte("GENC\x01")), errBadState, "a cell's header")

	m := &mainTask{started: true, numPEs: 3, totals: []int64{-1, 2}, cellRecords: []byte{1, 2}, haveCells: true}
	packed, err = m.MarshalBinary()
	require.NoError(t, err)
	mback := &mainTask{}
	require.NoError(t, mback.UnmarshalBinary(packed))
	require.Equal(t, m, mback)
	require.True(t, errors.Is(mback.UnmarshalBinary(nil), errBadState))
}

// Any seed and delivery order: the double's run prints the reference line.
func FuzzDeliveryOrder(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(1))
	f.Add(uint64(77), uint64(5), uint8(4))
	f.Fuzz(func(t *testing.T, seed, order uint64, pes uint8) {
		args := smallArgs(seed)
		want := reference(t, args)
		d := apptest.NewDouble(t, apptest.Define(t, App, args), 1+int(pes%4), order)
		d.PackProbability = 0.3
		d.Run(args)
		require.Equal(t, []string{want}, d.Output)
	})
}

// Records the audit refuses end the job with StatusAudit and one line
// that says why.
func TestAuditFailureEndsTheJob(t *testing.T) {
	cfg := Config{Seed: 2, Steps: 1, Cells: 2, Grid: []int{1}, Neighbours: 1, Tickets: 1}
	p := declare(actor.NewJob(), cfg)
	for name, c := range map[string]struct {
		m    *mainTask
		r    *actor.ReductionResult
		want string
	}{
		"grid before cells": {&mainTask{started: true}, &actor.ReductionResult{Contributors: 1}, "grid records before the cells'"},
		"missing cell": {&mainTask{started: true, totals: []int64{1}, haveCells: true, cellRecords: encodeCellRecord(0, &cell{})},
			&actor.ReductionResult{Contributors: 1}, "no record of cell 1"},
		"contributors": {&mainTask{started: true, totals: []int64{1}, haveCells: true}, &actor.ReductionResult{Contributors: 3}, "from 3 contributors, want 1"},
	} {
		ctx := &contextDouble{}
		p.onGridRecords(c.m, ctx, c.r)
		require.Equal(t, []int{StatusAudit}, ctx.exits, name)
		require.Len(t, ctx.output, 1, name)
		require.Contains(t, ctx.output[0], "gen: error: ", name)
		require.Contains(t, ctx.output[0], c.want, name)
	}
}
