package stencil3d

import "golang.org/x/sys/cpu"

// The row of a sweep on amd64, vectorised in kernel_amd64.s: 4 points per
// instruction with AVX2 where the CPU has it (golang.org/x/sys/cpu tells),
// 2 with SSE2, which every amd64 CPU has. Each point is summed in the same
// order as sweepRowGo, left to right with the running sum as the first
// operand, then multiplied by the weight; vectorising across points leaves
// each point's operations as they were, and there is no fused
// multiply-add, so the result is sweepRowGo's bit for bit.

// sweepRowSSE2 and sweepRowAVX2 write out[i] = (c[i] + c[i+2] + ym[i] +
// yp[i] + zm[i] + zp[i] + c[i+1]) * w for i < len(out), which must be a
// multiple of 2 (SSE2) or 4 (AVX2); the caller guarantees len(c) >=
// len(out)+2 and that ym, yp, zm and zp hold len(out) points.
//
//go:noescape
func sweepRowSSE2(out, c, ym, yp, zm, zp []float64, w float64)

//go:noescape
func sweepRowAVX2(out, c, ym, yp, zm, zp []float64, w float64)

// sweepRow is sweepRowGo, vectorised.
func sweepRow(out, c, ym, yp, zm, zp []float64) {
	sweepRowSIMD(cpu.X86.HasAVX2, out, c, ym, yp, zm, zp)
}

// sweepRowSIMD runs the AVX2 version if avx2 is set (the tests run both),
// the SSE2 one otherwise, over the longest prefix of the row it takes,
// and sweepRowGo over the 0 to 3 points left. The reslicing checks the
// lengths the assembly relies on.
func sweepRowSIMD(avx2 bool, out, c, ym, yp, zm, zp []float64) {
	n := len(out)
	c = c[:n+2]
	ym, yp, zm, zp = ym[:n], yp[:n], zm[:n], zp[:n]
	m := n &^ 1
	if avx2 {
		m = n &^ 3
	}
	switch {
	case m == 0:
	case avx2:
		sweepRowAVX2(out[:m], c, ym, yp, zm, zp, oneSeventh)
	default:
		sweepRowSSE2(out[:m], c, ym, yp, zm, zp, oneSeventh)
	}
	if m < n {
		sweepRowGo(out[m:], c[m:], ym[m:], yp[m:], zm[m:], zp[m:])
	}
}
