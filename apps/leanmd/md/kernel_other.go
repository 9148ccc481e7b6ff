//go:build !amd64

package md

// haveAVX512 is false off amd64: the pair kernel is the Go one.
const haveAVX512 = false

func pairRowsVector(a []float64, shift [3]float64, boxes []chunkBox, bx, by, bz, gx, gy, gz, forceA []float64, withEnergy bool) float64 {
	panic("md: no vector pair kernel on this architecture")
}
