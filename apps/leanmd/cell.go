package leanmd

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd/md"
)

// cellTask owns the atoms of one cell.
type cellTask struct {
	prog *program
	cell md.Cell
	id   int

	started  bool
	step     uint64 // the step in progress, from 1
	pos, vel []float64
	migrated int64
	// The open regions: one message per slot.
	forceSlots   []*Forces
	migrantSlots []*Migrants

	// Derived, not packed.
	pairComputes actor.Section // the pair computes touching the cell
	force        []float64
	contribution [][]byte
	// encoded holds the positions as sent; Send encodes the message before
	// it returns, so the buffer serves every step.
	encoded []byte
}

func (p *program) newCell(i actor.Index) *cellTask {
	g := &p.geo
	c := &cellTask{prog: p, cell: cellOf(i), id: g.CellID(cellOf(i)),
		forceSlots:   make([]*Forces, g.NumNeighbours()),
		migrantSlots: make([]*Migrants, g.NumNeighbours()),
		contribution: make([][]byte, g.NumNeighbours()),
	}
	for s := range g.NumNeighbours() {
		if s == g.SelfSlot() {
			continue
		}
		home, k := g.ComputeAtSlot(c.cell, s)
		c.pairComputes = append(c.pairComputes, computeIndex(home, k))
	}
	return c
}

// begin places the atoms and starts step 1.
func (c *cellTask) begin(ctx actor.Context, _ *Begin) {
	if c.started {
		panic(fmt.Sprintf("leanmd: cell %v started twice", c.cell))
	}
	c.started, c.step = true, 1
	c.pos, c.vel = md.InitialAtoms(c.prog.opts.Config, &c.prog.geo, c.cell)
	ctx.Expect(forceKey(c.step))
	c.sendPositions(ctx)
}

// sendPositions sends the positions of the current step to every compute
// that touches the cell.
func (c *cellTask) sendPositions(ctx actor.Context) {
	c.encoded = md.AppendFloats(c.encoded[:0], c.pos)
	m := &Positions{Step: c.step, Cell: int32(c.id), Coordinates: c.encoded}
	c.prog.positions.Multicast(ctx, c.pairComputes, m)
	c.prog.selfPositions.Send(ctx, computeIndex(c.cell, 0), m)
}

// receiveForces keeps one compute's contribution in its slot.
func (c *cellTask) receiveForces(ctx actor.Context, m *Forces) {
	if m.Step != c.step || m.Slot < 0 || int(m.Slot) >= len(c.forceSlots) || c.forceSlots[m.Slot] != nil {
		panic(fmt.Sprintf("leanmd: cell %v at step %d: unexpected forces of step %d for slot %d", c.cell, c.step, m.Step, m.Slot))
	}
	if len(m.Forces) != 8*len(c.pos) {
		panic(fmt.Sprintf("leanmd: cell %v: %d bytes of forces for %d atoms", c.cell, len(m.Forces), len(c.pos)/3))
	}
	c.forceSlots[m.Slot] = m
}

// forcesComplete sums the contributions in slot order, reports energies,
// advances the atoms and goes on to migration or the next step.
func (c *cellTask) forcesComplete(ctx actor.Context, key uint64) {
	g := &c.prog.geo
	for s, m := range c.forceSlots {
		c.contribution[s] = m.Forces
	}
	c.force = append(c.force[:0], make([]float64, len(c.pos))...)
	md.SumEncodedForces(c.force, c.contribution)
	if c.prog.opts.IsEnergyStep(int(c.step)) {
		// The cell's share of the potential energy: its own computes, in
		// compute order.
		potential := 0.0
		for k := range g.ComputesPerCell() {
			potential += c.forceSlots[g.HomeSlot(k)].PotentialEnergy
		}
		kinetic := md.KineticEnergy(c.vel)
		ctx.Contribute(actor.Sum, actor.Value{Floats: []float64{kinetic, potential}}, c.prog.results)
	}
	md.Advance(c.pos, c.vel, c.force)
	clear(c.forceSlots)
	clear(c.contribution)
	if !c.prog.opts.IsMigrationStep(int(c.step)) {
		c.finishStep(ctx)
		return
	}
	outgoing := make([][]float64, g.NumNeighbours())
	var left int
	c.pos, c.vel, left = g.Emigrate(c.cell, c.pos, c.vel, outgoing)
	c.migrated += int64(left)
	for s, atoms := range outgoing {
		c.prog.migrants.Send(ctx, cellIndex(g.Neighbour(c.cell, s)),
			&Migrants{Step: c.step, Slot: int32(g.MigrationSlot(s)), Atoms: atoms})
	}
	ctx.Expect(migrationKey(c.step))
}

// receiveMigrants keeps one neighbour's migration list in its slot.
func (c *cellTask) receiveMigrants(ctx actor.Context, m *Migrants) {
	if m.Step != c.step || m.Slot < 0 || int(m.Slot) >= len(c.migrantSlots) || c.migrantSlots[m.Slot] != nil {
		panic(fmt.Sprintf("leanmd: cell %v at step %d: unexpected migrants of step %d for slot %d", c.cell, c.step, m.Step, m.Slot))
	}
	if len(m.Atoms)%md.MigrantStride != 0 {
		panic(fmt.Sprintf("leanmd: cell %v: migration list of %d values", c.cell, len(m.Atoms)))
	}
	c.migrantSlots[m.Slot] = m
}

// migrantsComplete appends the arrivals in slot order.
func (c *cellTask) migrantsComplete(ctx actor.Context, key uint64) {
	lists := make([][]float64, len(c.migrantSlots))
	for s, m := range c.migrantSlots {
		lists[s] = m.Atoms
	}
	c.pos, c.vel = md.Immigrate(c.pos, c.vel, lists)
	clear(c.migrantSlots)
	c.finishStep(ctx)
}

// finishStep starts the next step, or contributes the final state.
func (c *cellTask) finishStep(ctx actor.Context) {
	if c.step == uint64(c.prog.opts.Steps) {
		ctx.Contribute(c.prog.stateReducer, actor.Value{
			Ints:  []int64{c.migrated},
			Bytes: md.AppendState(nil, c.pos, c.vel),
		}, c.prog.results)
		return
	}
	// The sync point of the step: when the runtime takes it (a checkpoint
	// period), the next step starts in ResumeFromSync. Nothing of the cell
	// is in flight here: its forces and migrants of the step are summed.
	if ctx.AtSync(c.step) {
		return
	}
	c.nextStep(ctx)
}

// nextStep starts the step after the one just finished.
func (c *cellTask) nextStep(ctx actor.Context) {
	c.step++
	ctx.Expect(forceKey(c.step))
	c.sendPositions(ctx)
}

// ResumeFromSync continues after a sync point the runtime took, or after
// the cell was restored from a checkpoint taken there: the step packed is
// the one finished, so the next one starts, exactly as finishStep would.
func (c *cellTask) ResumeFromSync(ctx actor.Context) {
	if !c.started || c.step >= uint64(c.prog.opts.Steps) {
		panic(fmt.Sprintf("leanmd: cell %v resumed at step %d (started %v)", c.cell, c.step, c.started))
	}
	c.nextStep(ctx)
}

// MarshalBinary packs the cell.
func (c *cellTask) MarshalBinary() ([]byte, error) {
	s := &CellState{Started: c.started, Step: c.step, Positions: c.pos, Velocities: c.vel, AtomsMigrated: c.migrated}
	for _, m := range c.forceSlots {
		if m != nil {
			s.PendingForces = append(s.PendingForces, m)
		}
	}
	for _, m := range c.migrantSlots {
		if m != nil {
			s.PendingMigrants = append(s.PendingMigrants, m)
		}
	}
	return marshalState(s)
}

// UnmarshalBinary restores a cell packed by MarshalBinary into a task made
// by the collection's constructor.
func (c *cellTask) UnmarshalBinary(data []byte) error {
	var s CellState
	if err := proto.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("leanmd: unpack cell %v: %w", c.cell, err)
	}
	if len(s.Positions) != len(s.Velocities) || len(s.Positions)%3 != 0 {
		return fmt.Errorf("leanmd: unpack cell %v: %d positions and %d velocities", c.cell, len(s.Positions), len(s.Velocities))
	}
	c.started, c.step, c.pos, c.vel, c.migrated = s.Started, s.Step, s.Positions, s.Velocities, s.AtomsMigrated
	clear(c.forceSlots)
	clear(c.migrantSlots)
	for _, m := range s.PendingForces {
		if m.Slot < 0 || int(m.Slot) >= len(c.forceSlots) {
			return fmt.Errorf("leanmd: unpack cell %v: force slot %d", c.cell, m.Slot)
		}
		c.forceSlots[m.Slot] = m
	}
	for _, m := range s.PendingMigrants {
		if m.Slot < 0 || int(m.Slot) >= len(c.migrantSlots) {
			return fmt.Errorf("leanmd: unpack cell %v: migration slot %d", c.cell, m.Slot)
		}
		c.migrantSlots[m.Slot] = m
	}
	return nil
}
