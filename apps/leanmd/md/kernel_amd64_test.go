//go:build amd64

package md

import (
	"math"
	"testing"
)

// TestCullMatchesGo checks the vector culling (AVX2 and AVX-512, those
// the CPU has) against the Go loop's decision, box by box, for positions inside, beside and far from random
// boxes, on the cutoff's edge, and with NaN and infinite coordinates.
func TestCullMatchesGo(t *testing.T) {
	culls := map[string]func(*[3]float64, *boxesSoA, int, *kernelConstants) uint64{}
	if haveAVX2 {
		culls["AVX2"] = cullAVX2
	}
	if haveAVX512 {
		culls["AVX-512"] = cullAVX512
	}
	if len(culls) == 0 {
		t.Skip("neither AVX2 nor AVX-512 on this CPU")
	}
	rng := NewRand48(11)
	k := kernelConstants{one: 1, cutoffSquared: cutoffSquared}
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), CutoffDistance, -CutoffDistance, 0}
	for trial := range 2000 {
		n := 1 + trial%maxCulledChunks
		var arrays [6][maxCulledChunks]float64
		boxes := make([]chunkBox, n)
		for c := range boxes {
			for d := range 3 {
				lo := (rng.Float64() - 0.5) * 100
				hi := lo + rng.Float64()*20
				if rng.Float64() < 0.02 {
					lo = specials[int(rng.Float64()*float64(len(specials)))]
				}
				boxes[c].lo[d], boxes[c].hi[d] = lo, hi
				arrays[d][c], arrays[3+d][c] = lo, hi
			}
		}
		var pos [3]float64
		for d := range pos {
			pos[d] = (rng.Float64() - 0.5) * 150
			if rng.Float64() < 0.02 {
				pos[d] = specials[int(rng.Float64()*float64(len(specials)))]
			}
		}
		if trial%7 == 0 {
			// On the cutoff's edge of box 0 along x.
			pos = [3]float64{boxes[0].hi[0] + CutoffDistance, boxes[0].lo[1], boxes[0].lo[2]}
		}
		var want uint64
		for c, box := range boxes {
			dx, dy, dz := outside(pos[0], box.lo[0], box.hi[0]), outside(pos[1], box.lo[1], box.hi[1]), outside(pos[2], box.lo[2], box.hi[2])
			if !(float64(dx*dx)+float64(dy*dy)+float64(dz*dz) >= cutoffSquared) {
				want |= 1 << c
			}
		}
		view := boxesSoA{&arrays[0][0], &arrays[1][0], &arrays[2][0], &arrays[3][0], &arrays[4][0], &arrays[5][0]}
		for name, cull := range culls {
			if got := cull(&pos, &view, n, &k); got != want {
				t.Fatalf("%s, trial %d, %d boxes, position %v: kept %064b, Go keeps %064b", name, trial, n, pos, got, want)
			}
		}
	}
}
