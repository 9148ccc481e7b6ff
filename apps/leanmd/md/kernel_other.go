//go:build !amd64

package md

// bestKernel is the Go one off amd64.
const bestKernel = kernelGo

// haveAVX2 and haveAVX512 are false off amd64.
const haveAVX2, haveAVX512 = false, false

func pairRowsVector(a []float64, shift [3]float64, boxes []chunkBox, bx, by, bz, gx, gy, gz, forceA []float64, withEnergy, avx512 bool) float64 {
	panic("md: no vector pair kernel on this architecture")
}
