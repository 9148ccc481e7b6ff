package stencil3d

import "testing"

// benchSweep measures a sweep function on the benchmark chunk size, 64³,
// and reports interior point updates per second and ns per point.
func benchSweep(b *testing.B, sweep func(Block, []float64, []float64)) {
	block := Block{64, 64, 64}
	current, next := make([]float64, block.Len()), make([]float64, block.Len())
	ApplyBoundary(block, current)
	for b.Loop() {
		sweep(block, current, next)
		current, next = next, current
	}
	points := float64(block.Interior()) * float64(b.N)
	b.ReportMetric(points/b.Elapsed().Seconds(), "points/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/points, "ns/point")
}

// BenchmarkSweep is the kernel the app runs.
func BenchmarkSweep(b *testing.B) { benchSweep(b, Sweep) }

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
	current, next := make([]float64, block.Len()), make([]float64, block.Len())
	ApplyBoundary(block, current)
	var faces [NumSides][]byte
	for s := range Side(NumSides) {
		faces[s] = AppendFaceBytes(block, current, s.Opposite(), nil)
	}
	for b.Loop() {
		halos := faces
		faces = [NumSides][]byte{}
		if err := Step(block, current, next, &halos, &faces); err != nil {
			b.Fatal(err)
		}
		current, next = next, current
	}
	points := float64(block.Interior()) * float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/points, "ns/point")
}
