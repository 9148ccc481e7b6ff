package md

// cutoffSquared is the squared cutoff in Å².
const cutoffSquared = CutoffDistance * CutoffDistance

// PairForces computes the Lennard-Jones forces between the atoms of two
// cells, a (shifted by shift) and b, and returns their potential energy if
// withEnergy (0 otherwise). Positions are x, y, z interleaved. forceA and
// forceB (same lengths as a and b) are overwritten with the forces on a's
// and b's atoms. Per atom the contributions are added in the order of the
// original loop (over a's atoms, then b's), so the result is bitwise that
// of the original code.
func PairForces(a, b []float64, shift [3]float64, forceA, forceB []float64, withEnergy bool) float64 {
	b = b[:len(b)/3*3]
	forceB = forceB[:len(b)]
	clear(forceB)
	forceA = forceA[:len(a)]
	twelveA, sixB, vdwA, vdwB := ljTwelveA, ljSixB, ljA, ljB
	energy := 0.0
	for i := 0; i+2 < len(a); i += 3 {
		ax, ay, az := a[i]+shift[0], a[i+1]+shift[1], a[i+2]+shift[2]
		var fx, fy, fz float64
		for j := 0; j+2 < len(b); j += 3 {
			sx, sy, sz := ax-b[j], ay-b[j+1], az-b[j+2]
			r2 := float64(sx*sx) + float64(sy*sy) + float64(sz*sz)
			if r2 <= 1 || r2 >= cutoffSquared {
				continue
			}
			r2 *= 1e-20
			r6 := float64(r2*r2) * r2
			r12 := r6 * r6
			f := twelveA/r12 - sixB/r6
			if withEnergy {
				energy += vdwA/r12 - vdwB/r6
			}
			scale := float64(f/r2) * 1e-10
			px, py, pz := float64(sx*scale), float64(sy*scale), float64(sz*scale)
			fx += px
			fy += py
			fz += pz
			forceB[j] -= px
			forceB[j+1] -= py
			forceB[j+2] -= pz
		}
		forceA[i], forceA[i+1], forceA[i+2] = fx, fy, fz
	}
	return energy
}

// SelfForces computes the forces between the atoms of one cell (each pair
// once, i < j), overwrites force with them and returns their potential
// energy if withEnergy.
func SelfForces(p, force []float64, withEnergy bool) float64 {
	p = p[:len(p)/3*3]
	force = force[:len(p)]
	clear(force)
	twelveA, sixB, vdwA, vdwB := ljTwelveA, ljSixB, ljA, ljB
	energy := 0.0
	for i := 0; i+2 < len(p); i += 3 {
		ax, ay, az := p[i], p[i+1], p[i+2]
		fx, fy, fz := force[i], force[i+1], force[i+2]
		for j := i + 3; j+2 < len(p); j += 3 {
			sx, sy, sz := ax-p[j], ay-p[j+1], az-p[j+2]
			r2 := float64(sx*sx) + float64(sy*sy) + float64(sz*sz)
			if r2 <= 1 || r2 >= cutoffSquared {
				continue
			}
			r2 *= 1e-20
			r6 := float64(r2*r2) * r2
			r12 := r6 * r6
			f := twelveA/r12 - sixB/r6
			if withEnergy {
				energy += vdwA/r12 - vdwB/r6
			}
			scale := float64(f/r2) * 1e-10
			px, py, pz := float64(sx*scale), float64(sy*scale), float64(sz*scale)
			fx += px
			fy += py
			fz += pz
			force[j] -= px
			force[j+1] -= py
			force[j+2] -= pz
		}
		force[i], force[i+1], force[i+2] = fx, fy, fz
	}
	return energy
}

// ComputeForces runs compute k of cell home: the self pair when k = 0
// (partnerPos and partnerForce unused), otherwise the pair of home and its
// partner (PartnerOf). The two cells are ordered by cell id before the
// kernel runs, so the result does not depend on which cell owns the
// compute; the lower one is shifted by PeriodicShift. homeForce and
// partnerForce receive the forces on each cell's atoms. Returns the
// potential energy if withEnergy.
func (g *Geometry) ComputeForces(home Cell, k int, homePos, partnerPos, homeForce, partnerForce []float64, withEnergy bool) float64 {
	if k == 0 {
		return SelfForces(homePos, homeForce, withEnergy)
	}
	partner := g.PartnerOf(home, k)
	if g.CellID(home) < g.CellID(partner) {
		return PairForces(homePos, partnerPos, g.PeriodicShift(home, partner), homeForce, partnerForce, withEnergy)
	}
	return PairForces(partnerPos, homePos, g.PeriodicShift(partner, home), partnerForce, homeForce, withEnergy)
}
