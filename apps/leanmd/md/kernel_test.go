package md

import (
	"fmt"
	"slices"
	"testing"
)

// benchmarkCell is a cell of the reference configuration whose 38
// computes the benchmarks run, on the initial state.
var benchmarkCell = Cell{2, 2, 1}

type computeInput struct {
	a, b  []float64
	shift [3]float64
}

// referenceComputes returns the pair inputs of the computes of
// benchmarkCell (self pair excluded) and the number of atom pairs examined,
// for the reference configuration with atomsPerCell atoms per cell.
func referenceComputes(atomsPerCell int) ([]computeInput, int) {
	cfg := DefaultConfig()
	cfg.AtomsPerCell = atomsPerCell
	g := NewGeometry(cfg)
	var inputs []computeInput
	pairs := 0
	for k := 1; k < g.ComputesPerCell(); k++ {
		home, partner := benchmarkCell, g.PartnerOf(benchmarkCell, k)
		if g.CellID(home) > g.CellID(partner) {
			home, partner = partner, home
		}
		a, _ := InitialAtoms(cfg, &g, home)
		b, _ := InitialAtoms(cfg, &g, partner)
		inputs = append(inputs, computeInput{a, b, g.PeriodicShift(home, partner)})
		pairs += len(a) / 3 * len(b) / 3
	}
	return inputs, pairs
}

// TestPairForcesMatchNaive checks the fast kernel against the naive loop,
// bitwise, on every compute of a cell.
func TestPairForcesMatchNaive(t *testing.T) {
	for _, atoms := range []int{75, 172} {
		testPairForcesMatchNaive(t, atoms)
	}
}

func testPairForcesMatchNaive(t *testing.T, atomsPerCell int) {
	inputs, _ := referenceComputes(atomsPerCell)
	for n, in := range inputs {
		for _, withEnergy := range []bool{false, true} {
			fa, fb := make([]float64, len(in.a)), make([]float64, len(in.b))
			energy := PairForces(in.a, in.b, in.shift, fa, fb, withEnergy)
			wantA, wantB, wantEnergy := naivePairForces(in.a, in.b, in.shift, withEnergy)
			if !slices.Equal(fa, wantA) || !slices.Equal(fb, wantB) || energy != wantEnergy {
				t.Errorf("%d atoms per cell, compute %d (energy %v): fast kernel differs from the naive loop (energy %g vs %g)", atomsPerCell, n, withEnergy, energy, wantEnergy)
			}
		}
	}
}

// BenchmarkPairKernel measures the pair-force kernel on the 37 pair
// computes of a cell of the reference configuration, with 75 atoms per
// cell (the app's default) and 172 (the Charm++ comparison), in atom pairs
// examined per second and ns per pair.
func BenchmarkPairKernel(b *testing.B) {
	for _, atoms := range []int{75, 172} {
		b.Run(fmt.Sprintf("atoms=%d", atoms), func(b *testing.B) {
			inputs, pairs := referenceComputes(atoms)
			fa, fb := make([]float64, 3*atoms), make([]float64, 3*atoms)
			b.ResetTimer()
			for b.Loop() {
				for _, in := range inputs {
					PairForces(in.a, in.b, in.shift, fa, fb, false)
				}
			}
			reportPairRate(b, pairs)
		})
	}
}

// BenchmarkNaivePairLoop is the same work done by the naive loop.
func BenchmarkNaivePairLoop(b *testing.B) {
	for _, atoms := range []int{75, 172} {
		b.Run(fmt.Sprintf("atoms=%d", atoms), func(b *testing.B) {
			inputs, pairs := referenceComputes(atoms)
			b.ResetTimer()
			for b.Loop() {
				for _, in := range inputs {
					naivePairForces(in.a, in.b, in.shift, false)
				}
			}
			reportPairRate(b, pairs)
		})
	}
}

func reportPairRate(b *testing.B, pairsPerOp int) {
	perSecond := float64(pairsPerOp) * float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(perSecond, "pairs/s")
	b.ReportMetric(1e9/perSecond, "ns/pair")
}

// BenchmarkSerialStep measures one time step of the serial driver (all
// computes and cells on one core, no messages) for 3×3×3 cells: with 75
// atoms per cell (2,025 atoms, the app's default) and with 300 (8,100
// atoms, the size of the Charm++ comparison).
func BenchmarkSerialStep(b *testing.B) {
	for _, atoms := range []int{75, 172, 300} {
		b.Run(fmt.Sprintf("atoms=%d", 27*atoms), func(b *testing.B) { benchmarkSerialStep(b, atoms) })
	}
}

func benchmarkSerialStep(b *testing.B, atomsPerCell int) {
	cfg := DefaultConfig()
	cfg.Cells = [3]int{3, 3, 3}
	cfg.AtomsPerCell = atomsPerCell
	cfg.MigrateEvery = 0
	sim, err := NewSimulation(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sim.Step(1)
	b.ResetTimer()
	for b.Loop() {
		sim.Step(2) // neither an energy step nor a migration step
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
}
