package md

import (
	"fmt"
	"math"
	"slices"
	"syscall"
	"testing"
	"time"
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

// TestPairForcesMatchNaive checks the Go kernel and the vector ones the
// CPU has (AVX2, AVX-512) against the naive loop, bitwise, on every
// compute of a cell.
func TestPairForcesMatchNaive(t *testing.T) {
	for _, atoms := range []int{75, 172} {
		testPairForcesMatchNaive(t, atoms)
	}
}

func testPairForcesMatchNaive(t *testing.T, atomsPerCell int) {
	inputs, _ := referenceComputes(atomsPerCell)
	kernels := append([]kernelKind{kernelGo}, vectorKernels()...)
	for n, in := range inputs {
		for _, withEnergy := range []bool{false, true} {
			wantA, wantB, wantEnergy := naivePairForces(in.a, in.b, in.shift, withEnergy)
			for _, kernel := range kernels {
				fa, fb := make([]float64, len(in.a)), make([]float64, len(in.b))
				energy := pairForces(in.a, in.b, in.shift, fa, fb, withEnergy, kernel)
				if !slices.Equal(fa, wantA) || !slices.Equal(fb, wantB) || energy != wantEnergy {
					t.Errorf("%d atoms per cell, compute %d (energy %v), %s kernel: differs from the naive loop (energy %g vs %g)",
						atomsPerCell, n, withEnergy, kernel, energy, wantEnergy)
				}
			}
		}
	}
}

// BenchmarkPairKernel measures the pair-force kernel on the 37 pair
// computes of a cell of the reference configuration, with 75 atoms per
// cell (the app's default) and 172 (the Charm++ comparison), in atom pairs
// examined per second and ns per pair.
//
// Sub-benchmark kernel=go is the Go kernel, kernel=avx2 and kernel=avx512
// the vector ones (skipped where the CPU lacks them).
func BenchmarkPairKernel(b *testing.B) {
	for _, atoms := range []int{75, 172} {
		for _, kernel := range []kernelKind{kernelGo, kernelAVX2, kernelAVX512} {
			b.Run(fmt.Sprintf("atoms=%d/kernel=%s", atoms, kernel), func(b *testing.B) {
				if !slices.Contains(vectorKernels(), kernel) && kernel != kernelGo {
					b.Skipf("no %s on this CPU", kernel)
				}
				inputs, pairs := referenceComputes(atoms)
				fa, fb := make([]float64, 3*atoms), make([]float64, 3*atoms)
				b.ResetTimer()
				cpu0 := processCPU()
				for b.Loop() {
					for _, in := range inputs {
						pairForces(in.a, in.b, in.shift, fa, fb, false, kernel)
					}
				}
				reportPairRate(b, pairs, cpu0)
			})
		}
	}
}

// vectorKernels returns the vector kernels this CPU runs: AVX2 wherever
// it has AVX2 (AVX-512 CPUs included, though they use the AVX-512 one),
// AVX-512 where it has that.
func vectorKernels() []kernelKind {
	var kernels []kernelKind
	if haveAVX2 {
		kernels = append(kernels, kernelAVX2)
	}
	if haveAVX512 {
		kernels = append(kernels, kernelAVX512)
	}
	return kernels
}

// BenchmarkNaivePairLoop is the same work done by the naive loop.
func BenchmarkNaivePairLoop(b *testing.B) {
	for _, atoms := range []int{75, 172} {
		b.Run(fmt.Sprintf("atoms=%d", atoms), func(b *testing.B) {
			inputs, pairs := referenceComputes(atoms)
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				for _, in := range inputs {
					naivePairForces(in.a, in.b, in.shift, false)
				}
			}
			reportPairRate(b, pairs, cpu0)
		})
	}
}

// reportPairRate reports the pairs examined per second and per pair the
// wall-clock and the CPU time (user and system of the process since
// cpu0): on a loaded machine the CPU time is the steadier figure.
func reportPairRate(b *testing.B, pairsPerOp int, cpu0 time.Duration) {
	pairs := float64(pairsPerOp) * float64(b.N)
	b.ReportMetric(pairs/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pairs, "ns/pair")
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/pairs, "cpu-ns/pair")
}

// processCPU returns the CPU time (user and system) of the process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	cpu0 := processCPU()
	for b.Loop() {
		sim.Step(2) // neither an energy step nor a migration step
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/step")
}

// TestVectorKernelMatchesGo checks the vector kernels the CPU has (AVX2,
// AVX-512) against the Go kernel bit for bit (forces and energy) on the computes of the reference
// configuration and on random cells of awkward sizes (none, one atom,
// sizes that are not multiples of a vector or a chunk, more atoms than
// the kernel's stack buffers), atoms spread over a range a few cutoffs
// wide so that pairs fall on both sides of the cutoff and of r² = 1.
func TestVectorKernelMatchesGo(t *testing.T) {
	kernels := vectorKernels()
	if len(kernels) == 0 {
		t.Skip("neither AVX2 nor AVX-512 on this CPU")
	}
	check := func(name string, a, b []float64, shift [3]float64) {
		t.Helper()
		for _, withEnergy := range []bool{false, true} {
			goA, goB := make([]float64, len(a)), make([]float64, len(b))
			goEnergy := pairForces(a, b, shift, goA, goB, withEnergy, kernelGo)
			for _, kernel := range kernels {
				vecA, vecB := make([]float64, len(a)), make([]float64, len(b))
				vecEnergy := pairForces(a, b, shift, vecA, vecB, withEnergy, kernel)
				if !bitsEqual(goA, vecA) || !bitsEqual(goB, vecB) || math.Float64bits(goEnergy) != math.Float64bits(vecEnergy) {
					t.Errorf("%s (energy %v): %s kernel differs from the Go kernel (energy %g vs %g)", name, withEnergy, kernel, vecEnergy, goEnergy)
				}
			}
		}
	}
	for _, atoms := range []int{75, 172} {
		inputs, _ := referenceComputes(atoms)
		for n, in := range inputs {
			check(fmt.Sprintf("%d atoms per cell, compute %d", atoms, n), in.a, in.b, in.shift)
		}
	}
	rng := NewRand48(7)
	randomCell := func(atoms int, width float64) []float64 {
		p := make([]float64, 3*atoms)
		for i := range p {
			p[i] = (rng.Float64() - 0.5) * width
		}
		return p
	}
	pairs := 0
	for _, na := range []int{0, 1, 3, 17, 100} {
		// 1,100 atoms are more boxes than the vector culling takes.
		for _, nb := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 172, 255, 256, 257, 300, 1100} {
			for _, width := range []float64{4, 60} {
				a, b := randomCell(na, width), randomCell(nb, width)
				shift := [3]float64{rng.Float64() * 2, -rng.Float64() * 2, 0}
				check(fmt.Sprintf("random %d×%d atoms, width %g", na, nb, width), a, b, shift)
				pairs += na * nb
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no random pairs checked")
	}
}

// bitsEqual reports whether two slices hold the same float64 bits.
func bitsEqual(x, y []float64) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}
