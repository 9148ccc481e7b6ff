package md

import (
	"math"
	"slices"
	"testing"
)

// The reference values of shared/reference/leanmd.md for 5×5×3 cells,
// k-away 2,2,1, 75 atoms per cell, 200 steps, migration every 20.
const (
	referenceKineticInitial   = 4.6865663210178031e-15
	referencePotentialInitial = -2.0021111207963637e-15
	referenceKineticFinal     = 4.0968536822824306e-15
	referencePotentialFinal   = -1.4109150676500105e-15
	referenceAtomsMigrated    = 834
)

func relativeError(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// TestReferenceRun runs the full reference configuration (about 15 s of
// one core) and compares with the reference energies and migration count.
func TestReferenceRun(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("full 5×5×3, 200-step run: not in -short mode or under -race")
	}
	sim, err := NewSimulation(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := sim.Run()
	t.Logf("KE %.17g → %.17g, PE %.17g → %.17g, %d migrated, digest %016x",
		r.KineticInitial, r.KineticFinal, r.PotentialInitial, r.PotentialFinal, r.AtomsMigrated, r.Digest)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"initial kinetic energy", r.KineticInitial, referenceKineticInitial},
		{"initial potential energy", r.PotentialInitial, referencePotentialInitial},
		{"final kinetic energy", r.KineticFinal, referenceKineticFinal},
		{"final potential energy", r.PotentialFinal, referencePotentialFinal},
	} {
		if e := relativeError(c.got, c.want); e > 1e-9 {
			t.Errorf("%s = %.17g, reference %.17g (relative error %.2g)", c.name, c.got, c.want, e)
		}
	}
	if r.AtomsMigrated != referenceAtomsMigrated {
		t.Errorf("%d atoms migrated, reference %d", r.AtomsMigrated, referenceAtomsMigrated)
	}
}

// TestFirstStepEnergies runs one step of the reference configuration: the
// energies of step 1 are the reference initial energies.
func TestFirstStepEnergies(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Steps = 1
	sim, err := NewSimulation(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := sim.Run()
	if e := relativeError(r.KineticInitial, referenceKineticInitial); e > 1e-9 {
		t.Errorf("initial kinetic energy %.17g, reference %.17g", r.KineticInitial, referenceKineticInitial)
	}
	if e := relativeError(r.PotentialInitial, referencePotentialInitial); e > 1e-9 {
		t.Errorf("initial potential energy %.17g, reference %.17g", r.PotentialInitial, referencePotentialInitial)
	}
}

// smallConfig runs in a fraction of a second and still migrates atoms
// (60 of them); with 3 cells 2-away, some cell pairs meet in two computes.
func smallConfig() Config {
	return Config{Cells: [3]int{3, 3, 2}, KAway: [3]int{2, 2, 1}, AtomsPerCell: 10, Steps: 200, MigrateEvery: 10}
}

// TestShortRunIsReproducible runs a small configuration twice and wants
// bitwise-identical results.
func TestShortRunIsReproducible(t *testing.T) {
	run := func() Result {
		sim, err := NewSimulation(smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		return sim.Run()
	}
	first, second := run(), run()
	if first != second {
		t.Fatalf("two identical runs differ:\n%+v\n%+v", first, second)
	}
	if first.AtomsMigrated == 0 {
		t.Errorf("no atom migrated")
	}
	t.Logf("%+v", first)
}

func TestRand48MatchesLibc(t *testing.T) {
	// Values printed by glibc's srand48(seed); drand48().
	for _, c := range []struct {
		seed int64
		want []float64
	}{
		{0, []float64{0.17082803610628972, 0.74990198048496381, 0.09637165562356742}},
		{1, []float64{0.041630344771878214, 0.45449244472862915, 0.8348172181669149}},
		{74, []float64{0.61019887735983858, 0.88959633451619879, 0.74134328383128079}},
	} {
		r := NewRand48(c.seed)
		for i, want := range c.want {
			if got := r.Float64(); got != want {
				t.Errorf("seed %d draw %d = %.17g, want %.17g", c.seed, i, got, want)
			}
		}
	}
}

func TestGeometryOfDefaultDecomposition(t *testing.T) {
	g := NewGeometry(DefaultConfig())
	if g.CellSize != [3]int{15, 15, 30} {
		t.Errorf("cell size %v, want [15 15 30]", g.CellSize)
	}
	if g.NumNeighbours() != 75 || g.ComputesPerCell() != 38 {
		t.Errorf("%d neighbours and %d computes per cell, want 75 and 38", g.NumNeighbours(), g.ComputesPerCell())
	}
	if g.Neighbours[g.SelfSlot()] != (Offset{}) {
		t.Errorf("self slot has offset %v", g.Neighbours[g.SelfSlot()])
	}
	for s, off := range g.Neighbours {
		if g.slotOf(off) != s {
			t.Errorf("slotOf(%v) = %d, want %d", off, g.slotOf(off), s)
		}
		opp := g.Neighbours[g.MigrationSlot(s)]
		if opp != (Offset{-off[0], -off[1], -off[2]}) {
			t.Errorf("slot %d offset %v, opposite slot offset %v", s, off, opp)
		}
	}
	// Every slot of every cell names a compute that names it back.
	for id := range g.NumCells() {
		c := g.CellAt(id)
		if g.CellID(c) != id {
			t.Fatalf("CellAt(%d) = %v, CellID = %d", id, c, g.CellID(c))
		}
		for s := range g.NumNeighbours() {
			home, k := g.ComputeAtSlot(c, s)
			if k < 0 || k >= g.ComputesPerCell() {
				t.Fatalf("cell %v slot %d: compute number %d", c, s, k)
			}
			switch {
			case home == c && g.HomeSlot(k) == s:
			case home != c && g.PartnerOf(home, k) == c && g.NeighbourSlot(k) == s:
			default:
				t.Errorf("cell %v slot %d: compute (%v, %d) does not touch it there", c, s, home, k)
			}
		}
	}
}

func TestInitialAtomsOfFirstCell(t *testing.T) {
	cfg := DefaultConfig()
	g := NewGeometry(cfg)
	pos, vel := InitialAtoms(cfg, &g, Cell{1, 2, 0})
	if len(pos) != 3*75 || len(vel) != 3*75 {
		t.Fatalf("%d positions, %d velocities", len(pos), len(vel))
	}
	// Atom 74: x = 1.5 + 15 + ((74·2)/100)·3, y = 1.5 + 30 + ((74/10)%5)·3 = 37.5, z = 1.5 + (74%10)·3.
	if got := pos[3*74 : 3*75]; !slices.Equal(got, []float64{19.5, 37.5, 13.5}) {
		t.Errorf("atom 74 at %v, want [19.5 37.5 13.5]", got)
	}
	first := NewRand48(int64(g.CellID(Cell{1, 2, 0}))).Float64()
	if vel[0] != (first-0.5)*0.02 {
		t.Errorf("first velocity %v, want %v", vel[0], (first-0.5)*0.02)
	}
}

func TestPairForcesConserveMomentumAndMatchSelf(t *testing.T) {
	cfg := DefaultConfig()
	g := NewGeometry(cfg)
	a, _ := InitialAtoms(cfg, &g, Cell{0, 0, 0})
	b, _ := InitialAtoms(cfg, &g, Cell{0, 1, 0})
	fa, fb := make([]float64, len(a)), make([]float64, len(b))
	energy := PairForces(a, b, [3]float64{}, fa, fb, true)
	if energy == 0 {
		t.Fatal("no interaction between adjacent cells")
	}
	var total [3]float64
	for k := range fa {
		total[k%3] += fa[k] + fb[k]
	}
	for d, f := range total {
		if math.Abs(f) > 1e-12*maxAbs(fa) {
			t.Errorf("net force %g in dimension %d", f, d)
		}
	}
	// The self pair of the union equals the pair plus the two self pairs.
	union := append(slices.Clone(a), b...)
	fu := make([]float64, len(union))
	fsa, fsb := make([]float64, len(a)), make([]float64, len(b))
	eu := SelfForces(union, fu, true)
	ea, eb := SelfForces(a, fsa, true), SelfForces(b, fsb, true)
	if e := relativeError(eu, energy+ea+eb); e > 1e-12 {
		t.Errorf("self energy of union %g, pair+self %g", eu, energy+ea+eb)
	}
	for k := range a {
		if e := relativeError(fu[k], fa[k]+fsa[k]); fu[k] != 0 && e > 1e-9 {
			t.Errorf("force %d: union %g, pair+self %g", k, fu[k], fa[k]+fsa[k])
		}
	}
	// Without energy the forces are the same bits.
	fa2, fb2 := make([]float64, len(a)), make([]float64, len(b))
	if e := PairForces(a, b, [3]float64{}, fa2, fb2, false); e != 0 || !slices.Equal(fa, fa2) || !slices.Equal(fb, fb2) {
		t.Errorf("forces without energy differ or energy %g reported", e)
	}
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

func TestPeriodicShiftRule(t *testing.T) {
	g := NewGeometry(DefaultConfig()) // box 75 × 75 × 90
	for _, c := range []struct {
		a, b Cell
		want [3]float64
	}{
		{Cell{0, 0, 0}, Cell{1, 0, 0}, [3]float64{}},
		{Cell{0, 0, 0}, Cell{4, 0, 0}, [3]float64{75, 0, 0}},
		{Cell{0, 0, 0}, Cell{2, 0, 0}, [3]float64{75, 0, 0}}, // the original rule shifts 2-away pairs too
		{Cell{3, 4, 2}, Cell{0, 1, 0}, [3]float64{-75, -75, -90}},
	} {
		if got := g.PeriodicShift(c.a, c.b); got != c.want {
			t.Errorf("shift of %v against %v = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestEmigrateAndImmigrate(t *testing.T) {
	g := NewGeometry(DefaultConfig())
	c := Cell{0, 2, 1} // x in [0,15), y in [30,45), z in [30,60)
	pos := []float64{
		1, 31, 31, // stays
		-1, 31, 31, // x −1: wraps to 74
		1, 61, 31, // y +2 (> 30+30)
		1, 44, 29, // z −1
		14, 40, 59, // stays
	}
	vel := []float64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}
	out := make([][]float64, g.NumNeighbours())
	pos, vel, left := g.Emigrate(c, pos, vel, out)
	if left != 3 || !slices.Equal(pos, []float64{1, 31, 31, 14, 40, 59}) || !slices.Equal(vel, []float64{0, 0, 0, 4, 4, 4}) {
		t.Fatalf("kept %v %v, %d left", pos, vel, left)
	}
	if got := out[g.slotOf(Offset{-1, 0, 0})]; !slices.Equal(got, []float64{74, 31, 31, 1, 1, 1}) {
		t.Errorf("list to x−1: %v", got)
	}
	if got := out[g.slotOf(Offset{0, 2, 0})]; !slices.Equal(got, []float64{1, 61, 31, 2, 2, 2}) {
		t.Errorf("list to y+2: %v", got)
	}
	pos, vel = Immigrate(pos, vel, [][]float64{nil, {7, 7, 7, 8, 8, 8}, {9, 9, 9, 1, 2, 3}})
	if !slices.Equal(pos[6:], []float64{7, 7, 7, 9, 9, 9}) || !slices.Equal(vel[6:], []float64{8, 8, 8, 1, 2, 3}) {
		t.Errorf("after immigration %v %v", pos, vel)
	}
}

func TestConfigValidation(t *testing.T) {
	bad := DefaultConfig()
	bad.Cells = [3]int{2, 5, 3} // 2-away in x needs at least 3 cells
	if err := bad.Validate(); err == nil {
		t.Error("2 cells with k-away 2 accepted")
	}
	bad = DefaultConfig()
	bad.Steps = 0
	if err := bad.Validate(); err == nil {
		t.Error("0 steps accepted")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
}
