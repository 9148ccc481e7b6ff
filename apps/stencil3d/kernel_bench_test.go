package stencil3d

import (
	"testing"

	"github.com/gochare/gochare/internal/cputime"
)

// pointMetrics reports ns/point (wall time) and, where the process's CPU
// time is known, cpu-ns/point: the benchmark's CPU time per point, which
// on a loaded machine is the truer cost (the process, GC included, not
// only the benchmark's goroutine). cpu0 is cputime.Process at the start.
func pointMetrics(b *testing.B, points float64, cpu0 func() (float64, bool)) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/points, "ns/point")
	if start, ok := cpu0(); ok {
		if now, ok := cputime.Process(); ok {
			b.ReportMetric((float64(now.Nanoseconds())-start)/points, "cpu-ns/point")
		}
	}
}

// startCPU returns cputime.Process now, for pointMetrics.
func startCPU() func() (float64, bool) {
	d, ok := cputime.Process()
	return func() (float64, bool) { return float64(d.Nanoseconds()), ok }
}

// benchSweep measures a sweep function on the benchmark chunk size, 64³,
// and reports interior point updates per second and ns per point.
func benchSweep(b *testing.B, sweep func(Block, []float64, []float64)) {
	block := Block{64, 64, 64}
	current, next := make([]float64, block.Len()), make([]float64, block.Len())
	ApplyBoundary(block, current)
	cpu0 := startCPU()
	for b.Loop() {
		sweep(block, current, next)
		current, next = next, current
	}
	points := float64(block.Interior()) * float64(b.N)
	b.ReportMetric(points/b.Elapsed().Seconds(), "points/s")
	pointMetrics(b, points, cpu0)
}

// BenchmarkSweep is the kernel the app runs.
func BenchmarkSweep(b *testing.B) { benchSweep(b, Sweep) }

// BenchmarkSweepGo is Sweep with the portable row, sweepRowGo, in place
// of the vectorised one: the kernel before it was vectorised, measured in
// the same run.
func BenchmarkSweepGo(b *testing.B) { benchSweep(b, sweepGo) }

// sweepGo is Sweep with rows of sweepRowGo.
func sweepGo(b Block, t, next []float64) {
	sy, sz := b.stride(1), b.stride(2)
	n := b.X
	for k := 1; k <= b.Z; k++ {
		for j := 1; j <= b.Y; j++ {
			row := b.At(1, j, k)
			sweepRowGo(next[row:row+n], t[row-1:row+n+1], t[row-sy:row-sy+n], t[row+sy:row+sy+n],
				t[row-sz:row-sz+n], t[row+sz:row+sz+n])
		}
	}
}

// BenchmarkNaiveSweep is the plain flat-index loop, for comparison.
func BenchmarkNaiveSweep(b *testing.B) { benchSweep(b, naiveSweep) }

// BenchmarkExchange measures extracting and storing the six faces of a
// 64³ chunk in their float form, the copying the serial solver does.
func BenchmarkExchange(b *testing.B) {
	block := Block{64, 64, 64}
	t := make([]float64, block.Len())
	var face []float64
	for b.Loop() {
		for s := range Side(NumSides) {
			face = ExtractFace(block, t, s, face[:0])
			if err := StoreFace(block, t, s.Opposite(), face); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(NumSides*block.FaceLen(XLow)*8), "face-bytes/op")
}

// BenchmarkExchangeBytes is the app's exchange: each face written to its
// wire form and decoded into the halo, with a fresh buffer per face as the
// app allocates one per message.
func BenchmarkExchangeBytes(b *testing.B) {
	block := Block{64, 64, 64}
	t := make([]float64, block.Len())
	for b.Loop() {
		for s := range Side(NumSides) {
			face := AppendFaceBytes(block, t, s, nil)
			if err := StoreFaceBytes(block, t, s.Opposite(), face); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(NumSides*block.FaceLen(XLow)*8), "face-bytes/op")
}

// BenchmarkIteration is a chunk's whole kernel work for one iteration on
// 64³, as the app does it: Step with six received faces (fresh buffers,
// as messages bring them) taking the six outgoing ones. It reports ns per
// interior point; compare with the sweep alone.
func BenchmarkIteration(b *testing.B) {
	block := Block{64, 64, 64}
	current, layers := make([]float64, block.Len()), make([]float64, 2*StepLayers(block))
	ApplyBoundary(block, current)
	var faces [NumSides][]byte
	for s := range Side(NumSides) {
		faces[s] = AppendFaceBytes(block, current, s.Opposite(), nil)
	}
	cpu0 := startCPU()
	for b.Loop() {
		halos := faces
		faces = [NumSides][]byte{}
		if err := Step(block, current, layers, &halos, &faces); err != nil {
			b.Fatal(err)
		}
	}
	pointMetrics(b, float64(block.Interior())*float64(b.N), cpu0)
}

// BenchmarkIterationMany is BenchmarkIteration over 32 chunks of 64³ in
// turn (150 MB of arrays, as a PE holds in a 2-PE run of 256³), so that
// a chunk's array has left the cache by the time it is swept again: the
// sweep is bound by memory, as in the app.
func BenchmarkIterationMany(b *testing.B) {
	const chunks = 32
	block := Block{64, 64, 64}
	type chunk struct {
		array, layers []float64
		// faces received and sent, swapped every iteration
		in, out [NumSides][]byte
	}
	cs := make([]chunk, chunks)
	for n := range cs {
		c := &cs[n]
		c.array, c.layers = make([]float64, block.Len()), make([]float64, 2*StepLayers(block))
		ApplyBoundary(block, c.array)
		for s := range Side(NumSides) {
			c.in[s] = AppendFaceBytes(block, c.array, s.Opposite(), nil)
		}
	}
	cpu0 := startCPU()
	for b.Loop() {
		for n := range cs {
			c := &cs[n]
			halos := c.in
			if err := Step(block, c.array, c.layers, &halos, &c.out); err != nil {
				b.Fatal(err)
			}
			c.in, c.out = c.out, c.in
		}
	}
	pointMetrics(b, float64(chunks*block.Interior())*float64(b.N), cpu0)
}
