//go:build !amd64

package stencil3d

// sweepRow is the portable row of a sweep where there is no vector
// version of it (see kernel_amd64.go).
func sweepRow(out, c, ym, yp, zm, zp []float64) { sweepRowGo(out, c, ym, yp, zm, zp) }
