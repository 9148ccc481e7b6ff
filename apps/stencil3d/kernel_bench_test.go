package stencil3d

import "testing"

// BenchmarkSweep measures the kernel on the benchmark chunk size, 64³, and
// reports interior point updates per second.
func BenchmarkSweep(b *testing.B) {
	block := Block{64, 64, 64}
	current, next := make([]float64, block.Len()), make([]float64, block.Len())
	ApplyBoundary(block, current)
	for b.Loop() {
		Sweep(block, current, next)
		current, next = next, current
	}
	b.ReportMetric(float64(block.Interior())*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkExchange measures extracting and storing the six faces of a
// 64³ chunk, the copying done around every message of an iteration.
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
