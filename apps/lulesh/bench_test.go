package lulesh

import (
	"testing"

	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// BenchmarkChunkedDriver48 times kernel.RunChunked on the benchmark
// configuration (48³ in 16³ chunks, 27 chunks) for 20 cycles: the same
// arithmetic as the distributed app in one goroutine without the
// runtime, its baseline. It reports milliseconds per cycle (setup
// excluded).
func BenchmarkChunkedDriver48(b *testing.B) {
	chunking, err := kernel.UniformChunking(48, [3]int{3, 3, 3})
	if err != nil {
		b.Fatal(err)
	}
	const cycles = 20
	var perCycle float64
	for b.Loop() {
		res, err := kernel.RunChunked(48, chunking, cycles)
		if err != nil {
			b.Fatal(err)
		}
		perCycle = res.Elapsed.Seconds() * 1000 / cycles
	}
	b.ReportMetric(perCycle, "ms/cycle")
}
