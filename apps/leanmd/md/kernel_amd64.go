//go:build amd64

package md

import "math/bits"

// The pair kernel's vector passes (kernel_amd64.s): the AVX-512 ones, used
// when the CPU and the operating system support AVX-512 F, DQ and VL and
// POPCNT, and otherwise the AVX2 ones (the same passes four lanes at a
// time), when they support AVX2 and POPCNT.

// soaView points at b's positions as structure of arrays.
type soaView struct{ x, y, z *float64 }

// selection points at the selected pairs: separations and b's atom index.
type selection struct {
	sx, sy, sz *float64
	j          *int32
}

// pairTerms points at the per-pair results: force on a's atom and energy.
type pairTerms struct{ px, py, pz, e *float64 }

// kernelConstants are the constants of the vector passes, in the order
// the assembly reads them.
type kernelConstants struct {
	one, cutoffSquared        float64
	twelveA, sixB, vdwA, vdwB float64
	reduceSquare, reduceForce float64
}

//go:noescape
func selectAVX512(a *[3]float64, b *soaView, start, end int, sel *selection, n int, k *kernelConstants) int

// boxesSoA points at the chunk boxes as structure of arrays.
type boxesSoA struct{ loX, loY, loZ, hiX, hiY, hiZ *float64 }

// maxCulledChunks is the most boxes cullAVX512 takes (one bit each).
const maxCulledChunks = 64

//go:noescape
func cullAVX512(pos *[3]float64, boxes *boxesSoA, n int, k *kernelConstants) uint64

// accumulateAVX uses only AVX (VEX-encoded scalar) instructions: both
// vector paths run it.
//
//go:noescape
func cullAVX2(pos *[3]float64, boxes *boxesSoA, n int, k *kernelConstants) uint64

//go:noescape
func accumulateAVX(out *pairTerms, sel *selection, n int, forces *soaView, f *[3]float64)

//go:noescape
func termsAVX512(sel *selection, n int, out *pairTerms, withEnergy bool, k *kernelConstants)

//go:noescape
func selectAVX2(a *[3]float64, b *soaView, start, end int, sel *selection, n int, k *kernelConstants) int

//go:noescape
func termsAVX2(sel *selection, n int, out *pairTerms, withEnergy bool, k *kernelConstants)

func cpuid(leaf, subleaf uint32) (a, b, c, d uint32)

func xgetbv0() (lo, hi uint32)

// haveAVX512 and haveAVX2 are set once, at package initialisation, from
// the CPU; bestKernel is the fastest kernel they allow.
var (
	haveAVX512 = detectAVX512()
	haveAVX2   = detectAVX2()
	bestKernel = chooseKernel(haveAVX512, haveAVX2)
)

func chooseKernel(avx512, avx2 bool) kernelKind {
	switch {
	case avx512:
		return kernelAVX512
	case avx2:
		return kernelAVX2
	}
	return kernelGo
}

func detectAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx, popcnt = 1 << 27, 1 << 28, 1 << 23
	if ecx1&osxsave == 0 || ecx1&avx == 0 || ecx1&popcnt == 0 {
		return false
	}
	// The OS saves the SSE and YMM registers.
	if xcr0, _ := xgetbv0(); xcr0&0x6 != 0x6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const avx2 = 1 << 5
	return ebx7&avx2 != 0
}

func detectAVX512() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, popcnt = 1 << 27, 1 << 23
	if ecx1&osxsave == 0 || ecx1&popcnt == 0 {
		return false
	}
	// The OS saves the SSE, AVX, opmask and all ZMM registers.
	if xcr0, _ := xgetbv0(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const avx512f, avx512dq, avx512vl = 1 << 16, 1 << 17, 1 << 31
	return ebx7&avx512f != 0 && ebx7&avx512dq != 0 && ebx7&avx512vl != 0
}

// vectorSlack is how many entries past the last used one the vector passes
// may write or read.
const vectorSlack = 8

// pairRowsVector is the row loop of PairForces with the vector passes:
// per atom of a, the chunks of b that the boxes do not cull are scanned
// and the pairs within the cutoff selected (in atom order), their forces
// and energies computed eight at a time (avx512) or four at a time
// (AVX2), then added in selection order as the Go loop adds them. nb is
// the number of b's atoms; bx to gz hold nb values each.
func pairRowsVector(a []float64, shift [3]float64, boxes []chunkBox, bx, by, bz, gx, gy, gz, forceA []float64, withEnergy, avx512 bool) float64 {
	nb := len(bx)
	size := nb + vectorSlack
	var floatsOnStack [7 * (256 + vectorSlack)]float64
	var indexOnStack [256 + vectorSlack]int32
	floats, index := floatsOnStack[:], indexOnStack[:]
	if 7*size > len(floats) {
		floats, index = make([]float64, 7*size), make([]int32, size)
	}
	sx, sy, sz := floats[0:size], floats[size:2*size], floats[2*size:3*size]
	px, py, pz, es := floats[3*size:4*size], floats[4*size:5*size], floats[5*size:6*size], floats[6*size:7*size]
	js := index[:size]
	sel := selection{&sx[0], &sy[0], &sz[0], &js[0]}
	out := pairTerms{&px[0], &py[0], &pz[0], &es[0]}
	k := kernelConstants{
		one: 1, cutoffSquared: cutoffSquared,
		twelveA: ljTwelveA, sixB: ljSixB, vdwA: ljA, vdwB: ljB,
		reduceSquare: 1e-20, reduceForce: 1e-10,
	}
	if nb == 0 {
		clear(forceA)
		return 0
	}
	view := soaView{&bx[0], &by[0], &bz[0]}
	forces := soaView{&gx[0], &gy[0], &gz[0]}
	// Up to maxCulledChunks boxes, the culling is vector too.
	var boxArrays [6][maxCulledChunks]float64
	var boxView boxesSoA
	vectorCull := len(boxes) <= maxCulledChunks
	// The assembly passes are called directly (selectPairs is inlined):
	// through function values their arguments would escape.
	selectPairs := func(pos *[3]float64, start, end, n int) int {
		if avx512 {
			return selectAVX512(pos, &view, start, end, &sel, n, &k)
		}
		return selectAVX2(pos, &view, start, end, &sel, n, &k)
	}
	if vectorCull {
		for c, box := range boxes {
			boxArrays[0][c], boxArrays[1][c], boxArrays[2][c] = box.lo[0], box.lo[1], box.lo[2]
			boxArrays[3][c], boxArrays[4][c], boxArrays[5][c] = box.hi[0], box.hi[1], box.hi[2]
		}
		boxView = boxesSoA{&boxArrays[0][0], &boxArrays[1][0], &boxArrays[2][0], &boxArrays[3][0], &boxArrays[4][0], &boxArrays[5][0]}
	}
	energy := 0.0
	for i := 0; i+2 < len(a); i += 3 {
		pos := [3]float64{a[i] + shift[0], a[i+1] + shift[1], a[i+2] + shift[2]}
		n := 0
		if vectorCull {
			// Each run of consecutive chunks in reach is scanned as one
			// range.
			var kept uint64
			if avx512 {
				kept = cullAVX512(&pos, &boxView, len(boxes), &k)
			} else {
				kept = cullAVX2(&pos, &boxView, len(boxes), &k)
			}
			for kept != 0 {
				first := bits.TrailingZeros64(kept)
				run := bits.TrailingZeros64(^(kept >> first))
				n = selectPairs(&pos, chunkAtoms*first, min(chunkAtoms*(first+run), nb), n)
				kept &^= 1<<(first+run) - 1
			}
		}
		// Otherwise consecutive chunks not culled are scanned as one range.
		start, end := 0, 0
		for c, box := range boxes {
			if vectorCull {
				break
			}
			dx, dy, dz := outside(pos[0], box.lo[0], box.hi[0]), outside(pos[1], box.lo[1], box.hi[1]), outside(pos[2], box.lo[2], box.hi[2])
			if float64(dx*dx)+float64(dy*dy)+float64(dz*dz) >= cutoffSquared {
				continue
			}
			first, last := chunkAtoms*c, min(chunkAtoms*(c+1), nb)
			if first == end {
				end = last
				continue
			}
			if end > start {
				n = selectPairs(&pos, start, end, n)
			}
			start, end = first, last
		}
		if end > start {
			n = selectPairs(&pos, start, end, n)
		}
		var fx, fy, fz float64
		if n > 0 {
			if avx512 {
				termsAVX512(&sel, n, &out, withEnergy, &k)
			} else {
				termsAVX2(&sel, n, &out, withEnergy, &k)
			}
			f := [3]float64{fx, fy, fz}
			accumulateAVX(&out, &sel, n, &forces, &f)
			fx, fy, fz = f[0], f[1], f[2]
			if withEnergy {
				for _, e := range es[:n] {
					energy += e
				}
			}
		}
		forceA[i], forceA[i+1], forceA[i+2] = fx, fy, fz
	}
	return energy
}
