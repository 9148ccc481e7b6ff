package kernel

import "testing"

// benchmarkKernel runs the whole serial problem on an n³ mesh per
// iteration and reports the reference's figure of merit,
// 1000 / (µs per zone per cycle), and the cycle count.
func benchmarkKernel(b *testing.B, n int) {
	var fom, iterations float64
	for b.Loop() {
		res, err := Run(n, 0)
		if err != nil {
			b.Fatal(err)
		}
		fom, iterations = res.FOM, float64(res.Iterations)
	}
	b.ReportMetric(fom, "FOM")
	b.ReportMetric(iterations, "cycles")
}

func BenchmarkKernel10(b *testing.B) { benchmarkKernel(b, 10) }
func BenchmarkKernel20(b *testing.B) { benchmarkKernel(b, 20) }
func BenchmarkKernel30(b *testing.B) { benchmarkKernel(b, 30) }
