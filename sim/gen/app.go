package gen

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
)

// App is the generated program family, run by `gochare run gen --seed N`.
var App = appkit.Spec[Config]{
	Name:    "gen",
	Summary: "a seeded program that mixes ordered, commutative and order-dependent handlers, reductions, broadcasts, multicasts and sync points",
	Parse:   Parse,
	Declare: func(j *actor.Job, cfg Config) { declare(j, cfg) },
	LastStep: func(cfg Config) (uint64, bool) {
		return newPlan(cfg).lastStep()
	},
}.App()

// Exit statuses of a job that detects a fault of the runtime.
const (
	// StatusDuplicate: a task got a message it had already handled, or a
	// message it could not be waiting for (a handler ran twice for one
	// message, or a message came out of its program order).
	StatusDuplicate = 3
	// StatusAudit: the final records are inconsistent (see audit).
	StatusAudit = 4
)

// program holds the declarations of one job: the plan and the proxies.
// It is built identically on every PE and never changed afterwards.
type program struct {
	*plan
	cellShape actor.Shape

	cellBegin, gridBegin *actor.Proxy[*Begin]
	exchange             *actor.Proxy[*Exchange]
	reply                *actor.Proxy[*Reply]
	advance              *actor.Proxy[*Advance]
	ticket               *actor.Proxy[*Ticket]
	bonus                *actor.Proxy[*Bonus]
	gridReduced          *actor.Proxy[*actor.ReductionResult]
	cellResults          *actor.Proxy[*actor.ReductionResult]
	gridFinal            *actor.Proxy[*actor.ReductionResult]
	records              actor.Reducer
}

func declare(j *actor.Job, cfg Config) *program {
	p := &program{plan: newPlan(cfg), cellShape: actor.Shape{cfg.Cells}}
	steps := uint64(cfg.Steps)
	p.records = j.CustomReducer("gen.records", appkit.ConcatBytes)

	// The main element: Start (key 0), the cells' reductions by number
	// (key number+1: the step sums, then the final records), then the
	// grid's final records (key steps+2). One admissible at a time.
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), p.onStart,
		actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	p.cellResults = actor.Handle(mains, "cell-results", actor.AnnotateOrdered(), p.onCellResult,
		actor.KeyBy(func(r *actor.ReductionResult) uint64 { return r.GetNumber() + 1 }))
	p.gridFinal = actor.Handle(mains, "grid-records", actor.AnnotateOrdered(), p.onGridRecords,
		actor.KeyBy(func(*actor.ReductionResult) uint64 { return steps + 2 }))
	actor.Main(j, start, actor.Idx(0))

	// The cells: Begin (key 0), then per step an exchange region, a reply
	// region and the Advance, each with its own key (keyOf).
	cells := actor.NewCollection(j, "cells", p.cellShape, p.cellMap, func(actor.Index) *cell {
		return &cell{prog: p, slots: make([]uint64, cfg.Neighbours), filled: make([]bool, cfg.Neighbours), seen: make([]bool, cfg.Tickets)}
	})
	cells.UsesAtSync()
	p.cellBegin = actor.Handle(cells, "begin", actor.AnnotateOrdered(), p.onCellBegin,
		actor.KeyBy(func(*Begin) uint64 { return 0 }))
	p.exchange = actor.Handle(cells, "exchange", actor.AnnotateCommutative(cfg.Neighbours), p.onExchange,
		actor.KeyBy(func(m *Exchange) uint64 { return keyOf(m.GetStep(), phaseExchange) }),
		actor.WhenComplete(p.onExchangeComplete))
	p.reply = actor.Handle(cells, "reply", actor.AnnotateCommutative(cfg.Tickets), p.onReply,
		actor.KeyBy(func(m *Reply) uint64 { return keyOf(m.GetStep(), phaseReplies) }),
		actor.WhenComplete(p.onRepliesComplete))
	p.advance = actor.Handle(cells, "advance", actor.AnnotateOrdered(), p.onAdvance,
		actor.KeyBy(func(m *Advance) uint64 { return keyOf(m.GetStep(), phaseAdvance) }))

	// The grid: Begin (key 0), then per step its tickets (order-dependent:
	// a determinant each), its Bonus if in the step's section, and the
	// result of the grid's maximum, broadcast to every grid task.
	grid := actor.NewCollection(j, "grid", p.gridShape, p.gridMap, func(at actor.Index) *gridTask {
		return &gridTask{prog: p, trace: initialTrace(cfg.Seed, p.gridShape.Linear(at))}
	})
	grid.UsesAtSync()
	p.gridBegin = actor.Handle(grid, "begin", actor.AnnotateOrdered(), p.onGridBegin,
		actor.KeyBy(func(*Begin) uint64 { return 0 }))
	p.ticket = actor.Handle(grid, "ticket", actor.AnnotateOrderDependent(), p.onTicket,
		actor.KeyBy(func(m *Ticket) uint64 { return keyOf(m.GetStep(), phaseTickets) }))
	p.bonus = actor.Handle(grid, "bonus", actor.AnnotateOrdered(), p.onBonus,
		actor.KeyBy(func(m *Bonus) uint64 { return keyOf(m.GetStep(), phaseBonus) }))
	p.gridReduced = actor.Handle(grid, "reduced", actor.AnnotateOrdered(), p.onGridReduced,
		actor.KeyBy(func(r *actor.ReductionResult) uint64 { return keyOf(r.GetNumber(), phaseReduced) }))
	return p
}

// fault reports a message the task cannot take (a second delivery of one
// message, or one out of the program's order): one output line, and the
// job ends with StatusDuplicate. The task takes nothing afterwards.
func fault(ctx actor.Context, broken *bool, who string, format string, args ...any) {
	*broken = true
	ctx.Printf("gen: error: %s%v: %s", who, ctx.Index(), fmt.Sprintf(format, args...))
	ctx.Exit(StatusDuplicate)
}

// Main element.

func (p *program) onStart(m *mainTask, ctx actor.Context, s *actor.Start) {
	if m.started {
		ctx.Printf("gen: error: main started twice (a handler ran twice for one message)")
		ctx.Exit(StatusDuplicate)
		return
	}
	m.started, m.numPEs = true, s.GetNumPes()
	ctx.Expect(1)
	p.cellBegin.Broadcast(ctx, &Begin{})
	p.gridBegin.Broadcast(ctx, &Begin{})
}

func (p *program) onCellResult(m *mainTask, ctx actor.Context, r *actor.ReductionResult) {
	n := r.GetNumber()
	steps := uint64(p.cfg.Steps)
	switch {
	case m.finished || n > steps || n < uint64(len(m.totals)) || n == steps && m.haveCells:
		ctx.Printf("gen: error: main got cell reduction %d again (a handler ran twice for one message)", n)
		ctx.Exit(StatusDuplicate)
		return
	case r.GetContributors() != int64(p.cfg.Cells):
		ctx.Printf("gen: error: cell reduction %d has %d contributors, want %d", n, r.GetContributors(), p.cfg.Cells)
		ctx.Exit(StatusAudit)
		return
	}
	if n == steps {
		m.cellRecords, m.haveCells = append([]byte(nil), r.GetBytes()...), true
		ctx.Expect(steps + 2)
		return
	}
	if len(r.GetInts()) != 1 {
		ctx.Printf("gen: error: cell reduction %d has %d ints, want 1", n, len(r.GetInts()))
		ctx.Exit(StatusAudit)
		return
	}
	total := r.GetInts()[0]
	m.totals = append(m.totals, total)
	ctx.Expect(n + 2)
	p.advance.Broadcast(ctx, &Advance{Step: n, Total: total})
	p.bonus.Multicast(ctx, p.section(n), &Bonus{Step: n, Total: total})
}

func (p *program) onGridRecords(m *mainTask, ctx actor.Context, r *actor.ReductionResult) {
	if m.finished {
		ctx.Printf("gen: error: main got the grid records again (a handler ran twice for one message)")
		ctx.Exit(StatusDuplicate)
		return
	}
	m.finished = true
	line, err := p.finish(m, r)
	if err != nil {
		ctx.Printf("gen: error: %v", err)
		ctx.Exit(StatusAudit)
		return
	}
	ctx.Printf("%s", line)
	ctx.Exit(0)
}

// finish decodes and audits the final records and returns the output line.
func (p *program) finish(m *mainTask, r *actor.ReductionResult) (string, error) {
	if !m.haveCells || len(m.totals) != p.cfg.Steps {
		return "", fmt.Errorf("grid records before the cells' (%d step sums, cell records %v)", len(m.totals), m.haveCells)
	}
	if r.GetContributors() != int64(p.gridSize) {
		return "", fmt.Errorf("grid records from %d contributors, want %d", r.GetContributors(), p.gridSize)
	}
	cells, err := decodeCellRecords(m.cellRecords, p.plan)
	if err != nil {
		return "", err
	}
	grids, err := decodeGridRecords(r.GetBytes(), p.plan)
	if err != nil {
		return "", err
	}
	if err := audit(p.plan, cells, grids); err != nil {
		return "", err
	}
	return outputLine(p.cfg, digest(p.cfg, m.totals, cells, grids)), nil
}

// outputLine is the job's one line of output.
func outputLine(cfg Config, d uint64) string {
	return fmt.Sprintf("gen digest %016x (%s)", d, cfg)
}

// Cells.

func (p *program) onCellBegin(c *cell, ctx actor.Context, _ *Begin) {
	if c.broken {
		return
	}
	if c.begun {
		fault(ctx, &c.broken, "cells", "Begin again (a handler ran twice for one message)")
		return
	}
	c.begun = true
	c.acc = initialAcc(p.cfg.Seed, p.cellShape.Linear(ctx.Index()))
	p.startCellStep(c, ctx)
}

// startCellStep sends the cell's exchange values and tickets of its
// current step and expects the exchange region.
func (p *program) startCellStep(c *cell, ctx actor.Context) {
	s, me, n := c.step, p.cellShape.Linear(ctx.Index()), p.cfg.Cells
	c.phase, c.startAcc = phaseExchange, c.acc
	clear(c.slots)
	clear(c.filled)
	clear(c.seen)
	ctx.Expect(keyOf(s, phaseExchange))
	for j, off := range p.offsets {
		p.exchange.Send(ctx, actor.Idx((me+off)%n), &Exchange{Step: s, Slot: uint32(j), Sender: uint32(me), Value: exchangeValue(c.acc, s, j)})
	}
	for t := range p.cfg.Tickets {
		g := p.ticketTarget(s, me, t)
		p.ticket.Send(ctx, p.gridShape.At(g), &Ticket{Step: s, Sender: uint32(me), Ticket: uint32(t), Value: ticketValue(c.acc, s, t)})
	}
}

// onExchange stores one value in its slot; the values of a step commute.
func (p *program) onExchange(c *cell, ctx actor.Context, m *Exchange) {
	if c.broken {
		return
	}
	me, n := p.cellShape.Linear(ctx.Index()), p.cfg.Cells
	j := int(m.GetSlot())
	switch {
	case m.GetStep() != c.step || c.phase != phaseExchange:
		fault(ctx, &c.broken, "cells", "exchange of step %d from cell %d in step %d phase %d", m.GetStep(), m.GetSender(), c.step, c.phase)
	case j >= len(p.offsets) || int(m.GetSender()) != (me-p.offsets[j]%n+n)%n:
		fault(ctx, &c.broken, "cells", "exchange slot %d from cell %d, not one of its neighbours", j, m.GetSender())
	case c.filled[j]:
		fault(ctx, &c.broken, "cells", "exchange of step %d slot %d from cell %d twice (a handler ran twice for one message)", m.GetStep(), j, m.GetSender())
	default:
		c.slots[j], c.filled[j] = m.GetValue(), true
	}
}

func (p *program) onExchangeComplete(c *cell, ctx actor.Context, key uint64) {
	if c.broken {
		return
	}
	for j, ok := range c.filled {
		if !ok || key != keyOf(c.step, phaseExchange) {
			fault(ctx, &c.broken, "cells", "exchange region (key %d) of step %d complete without slot %d", key, c.step, j)
			return
		}
	}
	c.acc = foldExchange(c.acc, c.step, c.slots)
	c.exchanged += uint64(len(c.slots))
	c.work ^= p.burnFor(p.cellShape.Linear(ctx.Index()), p.cfg.Cells)
	c.phase = phaseReplies
	ctx.Expect(keyOf(c.step, phaseReplies))
}

// onReply keeps the grid's answer to one ticket; the replies of a step
// commute (each goes to its ticket's record).
func (p *program) onReply(c *cell, ctx actor.Context, m *Reply) {
	if c.broken {
		return
	}
	me, t := p.cellShape.Linear(ctx.Index()), int(m.GetTicket())
	switch {
	case m.GetStep() != c.step || c.phase != phaseReplies:
		fault(ctx, &c.broken, "cells", "reply of step %d in step %d phase %d", m.GetStep(), c.step, c.phase)
	case t >= len(c.seen) || int(m.GetGrid()) != p.ticketTarget(c.step, me, t):
		fault(ctx, &c.broken, "cells", "reply to ticket %d from grid task %d, which did not get it", t, m.GetGrid())
	case c.seen[t]:
		fault(ctx, &c.broken, "cells", "second reply to ticket %d of step %d (a handler ran twice for one message)", t, c.step)
	default:
		c.seen[t] = true
		// In step and ticket order, not in the order they came: the
		// region commutes, so the cell's state (and the record it sends
		// at the end) must not depend on that order, which a replay
		// under PartialDet may change.
		r := replyRecord{
			Grid: m.GetGrid(), Step: uint32(c.step), Position: m.GetPosition(), Ticket: uint32(t),
			Value: ticketValue(c.startAcc, c.step, t), Trace: m.GetTrace(),
		}
		i, _ := slices.BinarySearchFunc(c.replies, r, func(a, b replyRecord) int {
			return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Ticket, b.Ticket))
		})
		c.replies = slices.Insert(c.replies, i, r)
	}
}

func (p *program) onRepliesComplete(c *cell, ctx actor.Context, key uint64) {
	if c.broken {
		return
	}
	for t, ok := range c.seen {
		if !ok || key != keyOf(c.step, phaseReplies) {
			fault(ctx, &c.broken, "cells", "reply region (key %d) of step %d complete without ticket %d", key, c.step, t)
			return
		}
	}
	c.phase = phaseAdvance
	ctx.Expect(keyOf(c.step, phaseAdvance))
	ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{stepContribution(c.acc, c.step)}}, p.cellResults.At(actor.Idx(0)))
}

func (p *program) onAdvance(c *cell, ctx actor.Context, m *Advance) {
	if c.broken {
		return
	}
	if m.GetStep() != c.step || c.phase != phaseAdvance {
		fault(ctx, &c.broken, "cells", "Advance of step %d in step %d phase %d (a handler ran twice for one message?)", m.GetStep(), c.step, c.phase)
		return
	}
	s := c.step
	c.acc = foldTotal(c.acc, s, m.GetTotal())
	if s+1 == uint64(p.cfg.Steps) {
		c.phase = phaseDone
		ctx.Expect(keyOf(s+1, phaseExchange))
		ctx.Contribute(p.records, actor.Value{Bytes: encodeCellRecord(p.cellShape.Linear(ctx.Index()), c)}, p.cellResults.At(actor.Idx(0)))
		return
	}
	c.step++
	if ctx.AtSync(s) {
		return // ResumeFromSync starts the next step
	}
	p.startCellStep(c, ctx)
}

// Grid.

func (p *program) onGridBegin(g *gridTask, ctx actor.Context, _ *Begin) {
	if g.broken {
		return
	}
	if g.begun {
		fault(ctx, &g.broken, "grid", "Begin again (a handler ran twice for one message)")
		return
	}
	g.begun = true
	p.startGridStep(g, ctx)
}

// startGridStep expects the tickets of the grid task's current step.
func (p *program) startGridStep(g *gridTask, ctx actor.Context) {
	me := p.gridShape.Linear(ctx.Index())
	g.phase, g.received = phaseTickets, 0
	g.seen = make([]bool, len(p.expected[g.step][me]))
	ctx.Expect(keyOf(g.step, phaseTickets))
	if len(g.seen) == 0 {
		p.afterTickets(g, ctx)
	}
}

// onTicket is order-dependent: the trace and the reply's position and
// trace depend on the order the tickets of a step come in.
func (p *program) onTicket(g *gridTask, ctx actor.Context, m *Ticket) {
	if g.broken {
		return
	}
	me := p.gridShape.Linear(ctx.Index())
	if m.GetStep() != g.step || g.phase != phaseTickets {
		fault(ctx, &g.broken, "grid", "ticket %d of cell %d of step %d in step %d phase %d", m.GetTicket(), m.GetSender(), m.GetStep(), g.step, g.phase)
		return
	}
	i := p.ticketIndex(g.step, me, int(m.GetSender()), int(m.GetTicket()))
	switch {
	case i < 0:
		fault(ctx, &g.broken, "grid", "ticket %d of cell %d, step %d, was not sent here", m.GetTicket(), m.GetSender(), g.step)
		return
	case g.seen[i]:
		fault(ctx, &g.broken, "grid", "ticket %d of cell %d, step %d, twice (a handler ran twice for one message)", m.GetTicket(), m.GetSender(), g.step)
		return
	}
	g.seen[i] = true
	x := m.GetValue()
	g.trace = traceStep(g.trace, x)
	g.sum += ticketWeight(x)
	g.count++
	position := g.received
	g.received++
	p.reply.Send(ctx, p.cellShape.At(int(m.GetSender())), &Reply{
		Step: g.step, Grid: uint32(me), Ticket: m.GetTicket(), Position: uint32(position), Trace: g.trace,
	})
	if g.received == len(g.seen) {
		p.afterTickets(g, ctx)
	}
}

func (p *program) afterTickets(g *gridTask, ctx actor.Context) {
	me := p.gridShape.Linear(ctx.Index())
	g.traces = append(g.traces, g.trace)
	g.work ^= p.burnFor(me, p.gridSize)
	if p.inSection(g.step, me) {
		g.phase = phaseBonus
		ctx.Expect(keyOf(g.step, phaseBonus))
		return
	}
	p.contributeGrid(g, ctx)
}

func (p *program) onBonus(g *gridTask, ctx actor.Context, m *Bonus) {
	if g.broken {
		return
	}
	if m.GetStep() != g.step || g.phase != phaseBonus {
		fault(ctx, &g.broken, "grid", "Bonus of step %d in step %d phase %d (a handler ran twice for one message?)", m.GetStep(), g.step, g.phase)
		return
	}
	g.bonus = foldTotal(g.bonus, g.step, m.GetTotal())
	p.contributeGrid(g, ctx)
}

func (p *program) contributeGrid(g *gridTask, ctx actor.Context) {
	g.phase = phaseReduced
	ctx.Expect(keyOf(g.step, phaseReduced))
	ctx.Contribute(p.gridReducer(), actor.Value{Ints: []int64{gridContribution(g.sum, g.count, g.bonus, g.step)}}, p.gridReduced.All())
}

func (p *program) onGridReduced(g *gridTask, ctx actor.Context, r *actor.ReductionResult) {
	if g.broken {
		return
	}
	switch {
	case r.GetNumber() != g.step || g.phase != phaseReduced:
		fault(ctx, &g.broken, "grid", "grid reduction %d in step %d phase %d (a handler ran twice for one message?)", r.GetNumber(), g.step, g.phase)
		return
	case r.GetContributors() != int64(p.gridSize) || len(r.GetInts()) != 1:
		fault(ctx, &g.broken, "grid", "grid reduction %d of %d contributors and %d ints, want %d and 1", r.GetNumber(), r.GetContributors(), len(r.GetInts()), p.gridSize)
		return
	}
	s := g.step
	g.reduced = foldTotal(g.reduced, s, r.GetInts()[0])
	if s+1 == uint64(p.cfg.Steps) {
		g.phase = phaseDone
		ctx.Expect(keyOf(s+1, phaseTickets))
		ctx.Contribute(p.records, actor.Value{Bytes: encodeGridRecord(p.gridShape.Linear(ctx.Index()), g)}, p.gridFinal.At(actor.Idx(0)))
		return
	}
	g.step++
	if ctx.AtSync(s) {
		return
	}
	p.startGridStep(g, ctx)
}

// gridReducer is the reducer of the grid's step reductions, the seed's
// choice: maximum or minimum.
func (p *program) gridReducer() actor.Reducer {
	if p.gridMin {
		return actor.Min
	}
	return actor.Max
}

// burnFor burns --work hash rounds for the tasks of the first third of a
// collection of n tasks, so that the PEs holding them are busier.
func (p *program) burnFor(lin, n int) uint64 {
	if p.cfg.Work == 0 || lin >= (n+2)/3 {
		return 0
	}
	return burn(p.cfg.Seed^uint64(lin), p.cfg.Work)
}
