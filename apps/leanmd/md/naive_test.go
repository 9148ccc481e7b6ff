package md

// This file holds a plain, naive transcription of the pair-force loop (a
// vector type with value methods, shifted copies, fresh force arrays per
// call), used as the baseline of the kernel benchmark and as the slow
// reference the fast kernel must agree with bit for bit.

type vec3 struct{ x, y, z float64 }

func (a vec3) minus(b vec3) vec3 { return vec3{a.x - b.x, a.y - b.y, a.z - b.z} }
func (a vec3) plus(b vec3) vec3  { return vec3{a.x + b.x, a.y + b.y, a.z + b.z} }
func (a vec3) times(s float64) vec3 {
	return vec3{float64(a.x * s), float64(a.y * s), float64(a.z * s)}
}
func (a vec3) dot(b vec3) float64 { return float64(a.x*b.x) + float64(a.y*b.y) + float64(a.z*b.z) }
func toVectors(flat []float64) []vec3 {
	v := make([]vec3, len(flat)/3)
	for i := range v {
		v[i] = vec3{flat[3*i], flat[3*i+1], flat[3*i+2]}
	}
	return v
}

func fromVectors(v []vec3) []float64 {
	flat := make([]float64, 0, 3*len(v))
	for _, p := range v {
		flat = append(flat, p.x, p.y, p.z)
	}
	return flat
}

// naivePairForces is PairForces written the obvious way.
func naivePairForces(a, b []float64, shift [3]float64, withEnergy bool) (forceA, forceB []float64, energy float64) {
	first, second := toVectors(a), toVectors(b)
	for i := range first {
		first[i] = first[i].plus(vec3{shift[0], shift[1], shift[2]})
	}
	f1, f2 := make([]vec3, len(first)), make([]vec3, len(second))
	for i := range first {
		for j := range second {
			separation := first[i].minus(second[j])
			r2 := separation.dot(separation)
			if r2 > 1 && r2 < CutoffDistance*CutoffDistance {
				r2 = r2 * 1e-20
				r6 := float64(r2*r2) * r2
				r12 := r6 * r6
				f := (12*ljA)/r12 - (6*ljB)/r6
				if withEnergy {
					energy += ljA/r12 - ljB/r6
				}
				force := separation.times(float64(f/r2) * 1e-10)
				f1[i] = f1[i].plus(force)
				f2[j] = f2[j].minus(force)
			}
		}
	}
	return fromVectors(f1), fromVectors(f2), energy
}
