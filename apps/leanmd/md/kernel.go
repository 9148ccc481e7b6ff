package md

import "math"

// cutoffSquared is the squared cutoff in Å².
const cutoffSquared = CutoffDistance * CutoffDistance

// PairForces computes the Lennard-Jones forces between the atoms of two
// cells, a (shifted by shift) and b, and returns their potential energy if
// withEnergy (0 otherwise). Positions are x, y, z interleaved. forceA and
// forceB (same lengths as a and b) are overwritten with the forces on a's
// and b's atoms. Per atom the contributions are added in the order of the
// original loop (over a's atoms, then b's), so the result is bitwise that
// of the original code.
//
// Pairs out of reach are skipped by blocks: b's atoms are taken in chunks
// of chunkAtoms consecutive atoms with their bounding box, and a chunk is
// skipped for an atom of a whose distance² to the box reaches the cutoff.
// Rounding is monotone, so every pair's computed r² is at least the
// computed distance² to the box: the skipped pairs are exactly pairs the
// cutoff test would reject, and the result keeps its bits.
//
// On amd64 CPUs with AVX-512 the culling, the selection of the pairs
// within the cutoff and their forces run eight lanes at a time
// (pairRowsVector); on those with AVX2 but not AVX-512, four at a time.
// Every pair goes through the same operations in the same order, and the
// forces are added in the same order, so the result is bitwise that of
// the Go loop.
func PairForces(a, b []float64, shift [3]float64, forceA, forceB []float64, withEnergy bool) float64 {
	return pairForces(a, b, shift, forceA, forceB, withEnergy, bestKernel)
}

// kernelKind names a version of the pair kernel.
type kernelKind int

const (
	kernelGo     kernelKind = iota // the Go loop, everywhere
	kernelAVX2                     // culling, selection, forces 4 at a time (amd64)
	kernelAVX512                   // culling, selection, forces 8 at a time (amd64)
)

func (k kernelKind) String() string {
	switch k {
	case kernelAVX2:
		return "avx2"
	case kernelAVX512:
		return "avx512"
	}
	return "go"
}

// pairForces is PairForces with the given version of the kernel.
func pairForces(a, b []float64, shift [3]float64, forceA, forceB []float64, withEnergy bool, kernel kernelKind) float64 {
	vector := kernel != kernelGo
	b = b[:len(b)/3*3]
	forceB = forceB[:len(b)]
	forceA = forceA[:len(a)]
	var boxesOnStack [16]chunkBox
	boxes := chunkBoxes(boxesOnStack[:0], b)
	// b's positions and forces as structure of arrays: x, y and z each
	// contiguous, so that the pair loop reads and writes them without
	// bounds checks. The forces are added per atom in the same order as
	// before; only where they are kept differs.
	nb := len(b) / 3
	var soaOnStack [6 * 256]float64
	soa := soaOnStack[:]
	if 6*nb > len(soa) {
		soa = make([]float64, 6*nb)
	}
	bx, by, bz := soa[0:nb], soa[nb:2*nb], soa[2*nb:3*nb]
	gx, gy, gz := soa[3*nb:4*nb], soa[4*nb:5*nb], soa[5*nb:6*nb]
	clear(soa[3*nb : 6*nb])
	for j := range bx {
		p := b[3*j : 3*j+3 : 3*j+3]
		bx[j], by[j], bz[j] = p[0], p[1], p[2]
	}
	energy := 0.0
	if vector {
		energy = pairRowsVector(a, shift, boxes, bx, by, bz, gx, gy, gz, forceA, withEnergy, kernel == kernelAVX512)
	}
	for i := 0; !vector && i+2 < len(a); i += 3 {
		ax, ay, az := a[i]+shift[0], a[i+1]+shift[1], a[i+2]+shift[2]
		var fx, fy, fz float64
		for c, box := range boxes {
			dx, dy, dz := outside(ax, box.lo[0], box.hi[0]), outside(ay, box.lo[1], box.hi[1]), outside(az, box.lo[2], box.hi[2])
			if float64(dx*dx)+float64(dy*dy)+float64(dz*dz) >= cutoffSquared {
				continue
			}
			start := chunkAtoms * c
			end := min(start+chunkAtoms, nb)
			fx, fy, fz, energy = pairRow(ax, ay, az, fx, fy, fz, energy,
				bx[start:end], by[start:end], bz[start:end], gx[start:end], gy[start:end], gz[start:end], withEnergy)
		}
		forceA[i], forceA[i+1], forceA[i+2] = fx, fy, fz
	}
	for j := range gx {
		f := forceB[3*j : 3*j+3 : 3*j+3]
		f[0], f[1], f[2] = gx[j], gy[j], gz[j]
	}
	return energy
}

// pairRow adds the interactions of one atom at (ax, ay, az), whose force so
// far is (fx, fy, fz), with the atoms at (bx, by, bz) (at most chunkAtoms
// of them), subtracting each pair's force from (gx, gy, gz), and returns
// the atom's new force and the energy so far plus that of these pairs. All
// slices have the length of bx.
//
// It works in two passes: the first lists the atoms within the cutoff
// without a branch on the test (whose outcome varies from pair to pair
// and would be mispredicted often), the second computes their forces in
// list order, which is atom order: the sums are those of one loop.
func pairRow(ax, ay, az, fx, fy, fz, energy float64, bx, by, bz, gx, gy, gz []float64, withEnergy bool) (float64, float64, float64, float64) {
	twelveA, sixB, vdwA, vdwB := ljTwelveA, ljSixB, ljA, ljB
	var within [chunkAtoms]uint8
	n := len(bx)
	if n > chunkAtoms {
		panic("md: pair row of more than chunkAtoms atoms")
	}
	by, bz, gx, gy, gz = by[:n], bz[:n], gx[:n], gy[:n], gz[:n]
	count := 0
	for j := range bx {
		sx, sy, sz := ax-bx[j], ay-by[j], az-bz[j]
		r2 := float64(sx*sx) + float64(sy*sy) + float64(sz*sz)
		within[count&(chunkAtoms-1)] = uint8(j)
		// count++ if 1 < r2 < cutoffSquared (false for NaN, as in the
		// original), written as two conditional moves.
		above, below := 0, 0
		if r2 > 1 {
			above = 1
		}
		if r2 < cutoffSquared {
			below = 1
		}
		count += above & below
	}
	for _, j := range within[:count] {
		sx, sy, sz := ax-bx[j], ay-by[j], az-bz[j]
		r2 := float64(sx*sx) + float64(sy*sy) + float64(sz*sz)
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
		gx[j] -= px
		gy[j] -= py
		gz[j] -= pz
	}
	return fx, fy, fz, energy
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

// chunkAtoms is the number of consecutive atoms of b culled together.
const chunkAtoms = 16

// chunkBox is the bounding box of a chunk of atoms.
type chunkBox struct{ lo, hi [3]float64 }

// chunkBoxes appends to dst the bounding boxes of the chunks of chunkAtoms
// consecutive atoms of p (x, y, z interleaved).
func chunkBoxes(dst []chunkBox, p []float64) []chunkBox {
	for start := 0; start+2 < len(p); start += 3 * chunkAtoms {
		box := chunkBox{
			lo: [3]float64{math.Inf(1), math.Inf(1), math.Inf(1)},
			hi: [3]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)},
		}
		for i := start; i+2 < min(start+3*chunkAtoms, len(p)); i += 3 {
			for d := range 3 {
				box.lo[d] = min(box.lo[d], p[i+d])
				box.hi[d] = max(box.hi[d], p[i+d])
			}
		}
		dst = append(dst, box)
	}
	return dst
}

// outside returns how far x lies outside [lo, hi] (0 inside), computed as
// the kernel computes separations.
func outside(x, lo, hi float64) float64 {
	switch {
	case x < lo:
		return x - lo
	case x > hi:
		return x - hi
	}
	return 0
}
