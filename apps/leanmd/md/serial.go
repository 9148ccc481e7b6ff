package md

import (
	"hash/fnv"
)

// Result is what a run reports.
type Result struct {
	KineticInitial, PotentialInitial float64
	KineticFinal, PotentialFinal     float64
	// AtomsMigrated counts the atoms that changed cell over the run.
	AtomsMigrated int
	// Digest is FNV-1a 64 over AppendState of every cell, in cell id order.
	Digest uint64
}

// Simulation runs the whole system in one process with the same functions
// and summation orders as the distributed app: compute contributions kept
// per (cell, slot) and added in slot order, potential energy summed per
// cell over its own computes in compute order, migration lists appended in
// the receiver's slot order. Positions, velocities, the migration count and
// the digest are bitwise those of the distributed run; the energy totals
// are summed over cells in id order here, by the runtime's reduction tree
// there, so they may differ in the last bits.
type Simulation struct {
	cfg Config
	geo Geometry
	pos [][]float64 // per cell id
	vel [][]float64
	// contributions[cell][slot] is the force of the compute at that slot.
	contributions [][][]float64
	force         []float64
	// potential[cell] sums the energies of the cell's own computes.
	potential []float64
	migrated  int
	kinetic   [2]float64
	potTotal  [2]float64
}

// NewSimulation sets up the initial state of cfg.
func NewSimulation(cfg Config) (*Simulation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Simulation{cfg: cfg, geo: NewGeometry(cfg)}
	cells := s.geo.NumCells()
	s.pos = make([][]float64, cells)
	s.vel = make([][]float64, cells)
	s.contributions = make([][][]float64, cells)
	s.potential = make([]float64, cells)
	for id := range cells {
		s.pos[id], s.vel[id] = InitialAtoms(cfg, &s.geo, s.geo.CellAt(id))
		s.contributions[id] = make([][]float64, s.geo.NumNeighbours())
	}
	return s, nil
}

// Geometry returns the decomposition of the run.
func (s *Simulation) Geometry() *Geometry { return &s.geo }

// Run performs all the steps and returns the result.
func (s *Simulation) Run() Result {
	for step := 1; step <= s.cfg.Steps; step++ {
		s.Step(step)
	}
	return s.Result()
}

// Step performs time step step (1-based).
func (s *Simulation) Step(step int) {
	g := &s.geo
	withEnergy := s.cfg.IsEnergyStep(step)
	cells := g.NumCells()
	// The computes, in the order of their collection (cell id, then k).
	for id := range cells {
		home := g.CellAt(id)
		s.potential[id] = 0
		for k := range g.ComputesPerCell() {
			homeForce := s.contribution(id, g.HomeSlot(k))
			var partnerPos, partnerForce []float64
			if k > 0 {
				partner := g.CellID(g.PartnerOf(home, k))
				partnerPos = s.pos[partner]
				partnerForce = s.contribution(partner, g.NeighbourSlot(k))
			}
			energy := g.ComputeForces(home, k, s.pos[id], partnerPos, homeForce, partnerForce, withEnergy)
			s.potential[id] += energy
		}
	}
	// The cells.
	var kinetic, potential float64
	for id := range cells {
		n := len(s.pos[id])
		s.force = append(s.force[:0], make([]float64, n)...)
		SumForces(s.force, s.contributions[id])
		if withEnergy {
			kinetic += KineticEnergy(s.vel[id])
			potential += s.potential[id]
		}
		Advance(s.pos[id], s.vel[id], s.force)
	}
	if step == 1 {
		s.kinetic[0], s.potTotal[0] = kinetic, potential
	}
	if step == s.cfg.Steps {
		s.kinetic[1], s.potTotal[1] = kinetic, potential
	}
	if s.cfg.IsMigrationStep(step) {
		s.migrate()
	}
}

// contribution returns the force buffer of (cell, slot), sized to the
// cell's atoms.
func (s *Simulation) contribution(id, slot int) []float64 {
	n := len(s.pos[id])
	buf := s.contributions[id][slot]
	if cap(buf) < n {
		buf = make([]float64, n)
	}
	buf = buf[:n]
	s.contributions[id][slot] = buf
	return buf
}

func (s *Simulation) migrate() {
	g := &s.geo
	cells := g.NumCells()
	n := g.NumNeighbours()
	outgoing := make([][][]float64, cells)
	for id := range cells {
		outgoing[id] = make([][]float64, n)
		var left int
		s.pos[id], s.vel[id], left = g.Emigrate(g.CellAt(id), s.pos[id], s.vel[id], outgoing[id])
		s.migrated += left
	}
	incoming := make([][]float64, n)
	for id := range cells {
		c := g.CellAt(id)
		for slot := range n {
			// The sender at this slot sent its list for the opposite slot.
			sender := g.CellID(g.Neighbour(c, slot))
			incoming[slot] = outgoing[sender][g.MigrationSlot(slot)]
		}
		s.pos[id], s.vel[id] = Immigrate(s.pos[id], s.vel[id], incoming)
	}
}

// Result returns the energies of the first and last steps run, the
// migration count and the digest of the current state.
func (s *Simulation) Result() Result {
	h := fnv.New64a()
	var buf []byte
	for id := range s.pos {
		buf = AppendState(buf[:0], s.pos[id], s.vel[id])
		h.Write(buf)
	}
	return Result{
		KineticInitial: s.kinetic[0], PotentialInitial: s.potTotal[0],
		KineticFinal: s.kinetic[1], PotentialFinal: s.potTotal[1],
		AtomsMigrated: s.migrated,
		Digest:        h.Sum64(),
	}
}
