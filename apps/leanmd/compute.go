package leanmd

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd/md"
)

// computeTask computes the forces between its own cell (home) and the
// neighbour at half-shell position k (partner), or within home when k = 0.
type computeTask struct {
	prog    *program
	home    md.Cell
	k       int
	homeID  int
	partner md.Cell
	// partnerID is the partner cell's id (homeID for the self compute).
	partnerID int

	step uint64 // the step whose positions are awaited, from 1
	// received holds the open region's messages: [0] from home, [1] from
	// the partner.
	received [2]*Positions
}

func (p *program) newCompute(i actor.Index) *computeTask {
	g := &p.geo
	t := &computeTask{prog: p, home: cellOf(i), k: int(i[3]), step: 1}
	t.homeID = g.CellID(t.home)
	t.partner = g.PartnerOf(t.home, t.k)
	t.partnerID = g.CellID(t.partner)
	return t
}

// receivePositions keeps one of the pair's two position messages.
func (t *computeTask) receivePositions(ctx actor.Context, m *Positions) {
	side := -1
	switch {
	case t.k == 0:
	case int(m.Cell) == t.homeID:
		side = 0
	case int(m.Cell) == t.partnerID:
		side = 1
	}
	if side < 0 || m.Step != t.step || t.received[side] != nil {
		panic(fmt.Sprintf("leanmd: compute %v%d at step %d: unexpected positions of cell %d step %d",
			t.home, t.k, t.step, m.Cell, m.Step))
	}
	t.checkCoordinates(m)
	t.received[side] = m
}

// positionsComplete computes the pair's forces and sends each cell its
// contribution.
func (t *computeTask) positionsComplete(ctx actor.Context, key uint64) {
	s := t.prog.getScratch()
	defer t.prog.scratch.Put(s)
	s.homePos = decodeCoordinates(s.homePos, t.received[0])
	s.partnerPos = decodeCoordinates(s.partnerPos, t.received[1])
	t.received = [2]*Positions{}
	s.homeForce, s.partnerForce = resize(s.homeForce, len(s.homePos)), resize(s.partnerForce, len(s.partnerPos))
	energy := t.prog.geo.ComputeForces(t.home, t.k, s.homePos, s.partnerPos, s.homeForce, s.partnerForce, t.prog.opts.IsEnergyStep(int(t.step)))
	g := &t.prog.geo
	// Send encodes the message before it returns: one buffer serves both.
	s.encoded = md.AppendFloats(s.encoded[:0], s.homeForce)
	t.prog.forces.Send(ctx, cellIndex(t.home), &Forces{Step: t.step, Slot: int32(g.HomeSlot(t.k)), Forces: s.encoded, PotentialEnergy: energy})
	s.encoded = md.AppendFloats(s.encoded[:0], s.partnerForce)
	t.prog.forces.Send(ctx, cellIndex(t.partner), &Forces{Step: t.step, Slot: int32(g.NeighbourSlot(t.k)), Forces: s.encoded})
	t.finishStep(ctx)
}

// selfPositions computes the forces within the home cell.
func (t *computeTask) selfPositions(ctx actor.Context, m *Positions) {
	if t.k != 0 || int(m.Cell) != t.homeID || m.Step != t.step {
		panic(fmt.Sprintf("leanmd: compute %v%d at step %d: unexpected self positions of cell %d step %d",
			t.home, t.k, t.step, m.Cell, m.Step))
	}
	t.checkCoordinates(m)
	s := t.prog.getScratch()
	defer t.prog.scratch.Put(s)
	s.homePos = decodeCoordinates(s.homePos, m)
	s.homeForce = resize(s.homeForce, len(s.homePos))
	energy := t.prog.geo.ComputeForces(t.home, 0, s.homePos, nil, s.homeForce, nil, t.prog.opts.IsEnergyStep(int(t.step)))
	s.encoded = md.AppendFloats(s.encoded[:0], s.homeForce)
	t.prog.forces.Send(ctx, cellIndex(t.home), &Forces{Step: t.step, Slot: int32(t.prog.geo.SelfSlot()), Forces: s.encoded, PotentialEnergy: energy})
	t.finishStep(ctx)
}

// checkCoordinates panics unless m holds whole atoms (3 encoded float64
// values each).
func (t *computeTask) checkCoordinates(m *Positions) {
	if len(m.Coordinates)%(3*8) != 0 {
		panic(fmt.Sprintf("leanmd: compute %v%d: positions of cell %d are %d bytes, not whole atoms", t.home, t.k, m.Cell, len(m.Coordinates)))
	}
}

// computeScratch holds a compute's working arrays while it runs; the
// computes of a PE share them through program.scratch.
type computeScratch struct {
	homePos, partnerPos, homeForce, partnerForce []float64
	encoded                                      []byte
}

// getScratch returns working arrays from the pool, or new ones.
func (p *program) getScratch() *computeScratch {
	if s, ok := p.scratch.Get().(*computeScratch); ok {
		return s
	}
	return &computeScratch{}
}

// decodeCoordinates decodes m's positions into dst (checked whole atoms
// by checkCoordinates on reception).
func decodeCoordinates(dst []float64, m *Positions) []float64 {
	pos, err := md.DecodeFloats(dst, m.Coordinates)
	if err != nil {
		panic(fmt.Sprintf("leanmd: positions of cell %d: %v", m.Cell, err))
	}
	return pos
}

// resize returns buf with length n, reallocated if its capacity is short
// (its values are left to be overwritten).
func resize(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, n)
	}
	return buf[:n]
}

// finishStep ends the compute's part of a step, its forces sent: it
// offers the step's sync point (but after the last step, where the cells
// offer none), then waits for the next step's positions.
func (t *computeTask) finishStep(ctx actor.Context) {
	if t.step < uint64(t.prog.opts.Steps) && ctx.AtSync(t.step) {
		return
	}
	t.nextStep(ctx)
}

func (t *computeTask) nextStep(ctx actor.Context) {
	t.step++
	ctx.Expect(positionsKey(t.step))
}

// ResumeFromSync continues after a sync point the runtime took, or after
// the compute was restored from a checkpoint taken there: the step packed
// is the one whose forces were sent.
func (t *computeTask) ResumeFromSync(ctx actor.Context) {
	if t.received != [2]*Positions{} {
		panic(fmt.Sprintf("leanmd: compute %v%d resumed at step %d with positions pending", t.home, t.k, t.step))
	}
	t.nextStep(ctx)
}

// MarshalBinary packs the compute.
func (t *computeTask) MarshalBinary() ([]byte, error) {
	s := &ComputeState{Step: t.step}
	for _, m := range t.received {
		if m != nil {
			s.Pending = append(s.Pending, m)
		}
	}
	return marshalState(s)
}

// UnmarshalBinary restores a compute packed by MarshalBinary into a task
// made by the collection's constructor.
func (t *computeTask) UnmarshalBinary(data []byte) error {
	var s ComputeState
	if err := proto.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("leanmd: unpack compute %v%d: %w", t.home, t.k, err)
	}
	t.step = s.Step
	t.received = [2]*Positions{}
	for _, m := range s.Pending {
		switch int(m.Cell) {
		case t.homeID:
			t.received[0] = m
		case t.partnerID:
			t.received[1] = m
		default:
			return fmt.Errorf("leanmd: unpack compute %v%d: positions of cell %d", t.home, t.k, m.Cell)
		}
	}
	return nil
}
