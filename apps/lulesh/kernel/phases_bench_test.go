package kernel

import "testing"

// benchmarkDomain is a 20³ domain advanced 100 cycles, so that the shock
// has spread over many elements.
func benchmarkDomain(b *testing.B) *Domain {
	b.Helper()
	d, err := NewSerialDomain(20)
	if err != nil {
		b.Fatal(err)
	}
	for !d.Finished(100) {
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// BenchmarkEOS20 times the equation of state of all regions (with the
// reference's repetitions) on a 20³ mesh, restoring its inputs each time.
func BenchmarkEOS20(b *testing.B) {
	d := benchmarkDomain(b)
	e, p, q := append([]float64(nil), d.e...), append([]float64(nil), d.p...), append([]float64(nil), d.q...)
	for b.Loop() {
		copy(d.e, e)
		copy(d.p, p)
		copy(d.q, q)
		for r, region := range d.regions {
			d.evaluateEOS(region, d.regionReps[r])
		}
	}
}

func BenchmarkNodalForces20(b *testing.B) {
	d := benchmarkDomain(b)
	for b.Loop() {
		if err := d.NodalForcePhase(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkElementGradients20(b *testing.B) {
	d := benchmarkDomain(b)
	for b.Loop() {
		if err := d.ElementGradientPhase(); err != nil {
			b.Fatal(err)
		}
	}
}
