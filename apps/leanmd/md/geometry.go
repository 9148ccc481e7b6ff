package md

import (
	"errors"
	"fmt"
)

// Physical constants of LeanMD (units: Å, fs, g).
const (
	// CutoffDistance is the interaction cutoff in Å; pairs interact when
	// 1 < r² < CutoffDistance².
	CutoffDistance = 26
	// CellMargin is added to the cutoff to size the cells.
	CellMargin = 4
	// AtomMass is the mass of every atom in g.
	AtomMass = 1.67e-24
	// MaxVelocity clamps each velocity component to [-MaxVelocity, MaxVelocity].
	MaxVelocity = 0.1
)

// The Lennard-Jones constants and the factors of the force law. They are
// variables, not constants, so that 12·A and 6·B are rounded products of
// the rounded constants, as in the original C++ code.
var (
	ljA       = 1.1328e-133
	ljB       = 2.23224e-76
	ljTwelveA = 12 * ljA
	ljSixB    = 6 * ljB
)

// Config is the configuration of a run.
type Config struct {
	// Cells is the number of cells in x, y and z (periodic).
	Cells [3]int
	// KAway is how many cells away a cell interacts with, per dimension.
	KAway [3]int
	// AtomsPerCell is the initial number of atoms of every cell.
	AtomsPerCell int
	// Steps is the number of time steps.
	Steps int
	// MigrateEvery is the migration period in steps (0: never).
	MigrateEvery int
}

// DefaultConfig is the configuration of the reference run: 5×5×3 cells,
// 2-away in x and y, 75 atoms per cell, 200 steps, migration every 20.
func DefaultConfig() Config {
	return Config{Cells: [3]int{5, 5, 3}, KAway: [3]int{2, 2, 1}, AtomsPerCell: 75, Steps: 200, MigrateEvery: 20}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("md: invalid configuration")

// Validate reports whether the configuration can be run.
func (c Config) Validate() error {
	for d, name := range []string{"x", "y", "z"} {
		if c.KAway[d] < 1 || CutoffDistance+CellMargin < c.KAway[d] {
			return fmt.Errorf("%w: k-away %d in %s, want 1 to %d", ErrConfig, c.KAway[d], name, CutoffDistance+CellMargin)
		}
		// With at most k cells in a dimension, some neighbour offset would
		// wrap onto the cell itself and a compute would pair a cell with
		// itself twice.
		if c.Cells[d] <= c.KAway[d] {
			return fmt.Errorf("%w: %d cells in %s, want more than the k-away factor %d", ErrConfig, c.Cells[d], name, c.KAway[d])
		}
	}
	if c.AtomsPerCell < 0 {
		return fmt.Errorf("%w: %d atoms per cell", ErrConfig, c.AtomsPerCell)
	}
	if c.Steps < 1 {
		return fmt.Errorf("%w: %d steps, want at least 1", ErrConfig, c.Steps)
	}
	if c.MigrateEvery < 0 {
		return fmt.Errorf("%w: migration period %d", ErrConfig, c.MigrateEvery)
	}
	return nil
}

// IsEnergyStep reports whether step (1-based) reports energies: the first
// and the last.
func (c Config) IsEnergyStep(step int) bool { return step == 1 || step == c.Steps }

// IsMigrationStep reports whether atoms migrate after the update of step.
func (c Config) IsMigrationStep(step int) bool {
	return c.MigrateEvery > 0 && step%c.MigrateEvery == 0
}

// Cell is the coordinate of a cell.
type Cell [3]int

// Offset is a displacement between cells, in cells.
type Offset [3]int

// Geometry is the decomposition of the periodic box into cells and computes.
//
// The neighbour offsets of a cell (the full shell) are enumerated as in the
// original code: slot s in [0, n) has offset
// (s/(NBY·NBZ) − KX, (s%(NBY·NBZ))/NBZ − KY, s%NBZ − KZ) with NB = 2K+1, so
// slot n−1−s has the opposite offset of slot s, and slot n/2 is (0,0,0).
// Compute k in [0, n/2] of a cell pairs it with the neighbour at slot
// n/2+k (the half shell; k = 0 is the self pair). A cell is touched by n
// computes: slot s ≥ n/2 is its own compute s−n/2; slot s < n/2 is compute
// n/2−s of the neighbour at slot s (n is odd).
type Geometry struct {
	Cells    [3]int
	CellSize [3]int // Å
	// Neighbours lists the offsets of the full shell, by slot.
	Neighbours []Offset
}

// NewGeometry returns the geometry of a valid configuration.
func NewGeometry(c Config) Geometry {
	g := Geometry{Cells: c.Cells}
	var extent [3]int
	for d := range 3 {
		g.CellSize[d] = (CutoffDistance + CellMargin) / c.KAway[d]
		extent[d] = 2*c.KAway[d] + 1
	}
	n := extent[0] * extent[1] * extent[2]
	g.Neighbours = make([]Offset, n)
	for s := range n {
		g.Neighbours[s] = Offset{
			s/(extent[1]*extent[2]) - c.KAway[0],
			(s%(extent[1]*extent[2]))/extent[2] - c.KAway[1],
			s%extent[2] - c.KAway[2],
		}
	}
	return g
}

// NumCells returns the number of cells.
func (g *Geometry) NumCells() int { return g.Cells[0] * g.Cells[1] * g.Cells[2] }

// NumNeighbours returns n, the number of neighbour slots of a cell (itself
// included), which is also the number of computes that touch a cell.
func (g *Geometry) NumNeighbours() int { return len(g.Neighbours) }

// ComputesPerCell returns the size of the half shell: the number of
// computes a cell owns, its self pair included.
func (g *Geometry) ComputesPerCell() int { return len(g.Neighbours)/2 + 1 }

// SelfSlot is the slot of offset (0,0,0).
func (g *Geometry) SelfSlot() int { return len(g.Neighbours) / 2 }

// CellID returns the linear id of a cell, z + NZ·(y + NY·x).
func (g *Geometry) CellID(c Cell) int { return c[2] + g.Cells[2]*(c[1]+g.Cells[1]*c[0]) }

// CellAt is the inverse of CellID.
func (g *Geometry) CellAt(id int) Cell {
	return Cell{id / (g.Cells[1] * g.Cells[2]), (id / g.Cells[2]) % g.Cells[1], id % g.Cells[2]}
}

// Neighbour returns the cell at the given slot of c, wrapped periodically.
func (g *Geometry) Neighbour(c Cell, slot int) Cell {
	off := g.Neighbours[slot]
	var n Cell
	for d := range 3 {
		n[d] = ((c[d]+off[d])%g.Cells[d] + g.Cells[d]) % g.Cells[d]
	}
	return n
}

// HomeSlot is the slot, at its own cell, of compute k.
func (g *Geometry) HomeSlot(k int) int { return len(g.Neighbours)/2 + k }

// NeighbourSlot is the slot, at the neighbour cell, of compute k (k ≥ 1).
func (g *Geometry) NeighbourSlot(k int) int { return len(g.Neighbours) - 1 - g.HomeSlot(k) }

// PartnerOf returns the cell paired with home by compute k.
func (g *Geometry) PartnerOf(home Cell, k int) Cell { return g.Neighbour(home, g.HomeSlot(k)) }

// ComputeAtSlot returns the compute that contributes to slot s of cell c:
// its home cell and its number.
func (g *Geometry) ComputeAtSlot(c Cell, s int) (home Cell, k int) {
	if s >= len(g.Neighbours)/2 {
		return c, s - len(g.Neighbours)/2
	}
	return g.Neighbour(c, s), len(g.Neighbours) - 1 - s - len(g.Neighbours)/2
}

// MigrationSlot is the slot under which the cell at sender slot s receives
// a migration list: the receiver sees its sender at the opposite offset.
func (g *Geometry) MigrationSlot(senderSlot int) int { return len(g.Neighbours) - 1 - senderSlot }

// PeriodicShift returns the shift applied to the positions of cell a (the
// one with the lower id) when it interacts with cell b. This is the rule of
// the original code, kept for comparability: per dimension, when the cell
// coordinates differ by more than one, shift by the box length, negative
// when b's coordinate is the lower. With 2-away cells it also shifts pairs
// that do not wrap.
func (g *Geometry) PeriodicShift(a, b Cell) [3]float64 {
	var shift [3]float64
	for d := range 3 {
		if a[d]-b[d] > 1 || b[d]-a[d] > 1 {
			box := g.CellSize[d] * g.Cells[d]
			if b[d] < a[d] {
				box = -box
			}
			shift[d] = float64(box)
		}
	}
	return shift
}
