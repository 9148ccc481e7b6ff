package kernel

import (
	"math/rand/v2"
	"testing"
)

// volumeDerivativeStencil lists, for each corner, the six corners its
// volume derivative depends on (those of the three faces that meet
// there, in the order the derivative formula takes them).
var volumeDerivativeStencil = [8][6]int{
	{1, 2, 3, 4, 5, 7},
	{2, 3, 0, 5, 6, 4},
	{3, 0, 1, 6, 7, 5},
	{0, 1, 2, 7, 4, 6},
	{7, 6, 5, 0, 3, 1},
	{4, 7, 6, 1, 0, 2},
	{5, 4, 7, 2, 1, 3},
	{6, 5, 4, 3, 2, 0},
}

// naiveVolumeDerivatives is the derivative formula applied corner by
// corner through the stencil, each sum written out where it is used.
func naiveVolumeDerivatives(dvdx, dvdy, dvdz *[8]float64, x, y, z *[8]float64) {
	const twelfth = 1.0 / 12.0
	for c, s := range volumeDerivativeStencil {
		x0, x1, x2, x3, x4, x5 := x[s[0]], x[s[1]], x[s[2]], x[s[3]], x[s[4]], x[s[5]]
		y0, y1, y2, y3, y4, y5 := y[s[0]], y[s[1]], y[s[2]], y[s[3]], y[s[4]], y[s[5]]
		z0, z1, z2, z3, z4, z5 := z[s[0]], z[s[1]], z[s[2]], z[s[3]], z[s[4]], z[s[5]]
		dx := (y1+y2)*(z0+z1) - (y0+y1)*(z1+z2) +
			(y0+y4)*(z3+z4) - (y3+y4)*(z0+z4) -
			(y2+y5)*(z3+z5) + (y3+y5)*(z2+z5)
		dy := -(x1+x2)*(z0+z1) + (x0+x1)*(z1+z2) -
			(x0+x4)*(z3+z4) + (x3+x4)*(z0+z4) +
			(x2+x5)*(z3+z5) - (x3+x5)*(z2+z5)
		dz := -(y1+y2)*(x0+x1) + (y0+y1)*(x1+x2) -
			(y0+y4)*(x3+x4) + (y3+y4)*(x0+x4) +
			(y2+y5)*(x3+x5) - (y3+y5)*(x2+x5)
		dvdx[c], dvdy[c], dvdz[c] = dx*twelfth, dy*twelfth, dz*twelfth
	}
}

// randomHexahedron is the unit cube with each corner moved randomly by up
// to a quarter of its edge.
func randomHexahedron(rng *rand.Rand) (x, y, z [8]float64) {
	cube := [8][3]float64{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}
	for c, p := range cube {
		x[c] = p[0] + (rng.Float64()-0.5)/2
		y[c] = p[1] + (rng.Float64()-0.5)/2
		z[c] = p[2] + (rng.Float64()-0.5)/2
	}
	return x, y, z
}

// TestVolumeDerivativesMatchNaiveFormula checks the unrolled derivative,
// which shares pairwise sums between corners, against the formula applied
// corner by corner: the bits must agree.
func TestVolumeDerivativesMatchNaiveFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2026))
	for trial := range 1000 {
		x, y, z := randomHexahedron(rng)
		var fx, fy, fz, nx, ny, nz [8]float64
		volumeDerivatives(&fx, &fy, &fz, &x, &y, &z)
		naiveVolumeDerivatives(&nx, &ny, &nz, &x, &y, &z)
		if fx != nx || fy != ny || fz != nz {
			t.Fatalf("trial %d: unrolled %v %v %v, naive %v %v %v", trial, fx, fy, fz, nx, ny, nz)
		}
	}
}

// TestVolumeDerivativesPredictVolumeChange checks the physics: moving one
// corner by a small step changes the volume by the derivative times the
// step, and the stress-integration volume agrees with elementVolume.
func TestVolumeDerivativesPredictVolumeChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 21))
	const step = 1e-7
	for trial := range 100 {
		x, y, z := randomHexahedron(rng)
		var dvdx, dvdy, dvdz [8]float64
		volumeDerivatives(&dvdx, &dvdy, &dvdz, &x, &y, &z)
		volume := elementVolume(&x, &y, &z)
		if jv := jacobianVolume(&x, &y, &z); jv <= 0 || jv/volume < 0.5 || jv/volume > 2 {
			t.Fatalf("trial %d: Jacobian volume %g, element volume %g", trial, jv, volume)
		}
		for c := range 8 {
			moved := x
			moved[c] += step
			got := (elementVolume(&moved, &y, &z) - volume) / step
			if diff := got - dvdx[c]; diff > 1e-6 || diff < -1e-6 {
				t.Fatalf("trial %d corner %d: dV/dx %g by finite difference, %g by formula", trial, c, got, dvdx[c])
			}
		}
	}
}

// TestCharacteristicLengthOfCube: for a cube of edge h the length is
// 4·h³ / sqrt(largest face measure) = 4h³/sqrt(16h⁴) = h.
func TestCharacteristicLengthOfCube(t *testing.T) {
	const h = 0.5
	x := [8]float64{0, h, h, 0, 0, h, h, 0}
	y := [8]float64{0, 0, h, h, 0, 0, h, h}
	z := [8]float64{0, 0, 0, 0, h, h, h, h}
	volume := elementVolume(&x, &y, &z)
	if volume != h*h*h {
		t.Fatalf("cube volume %g, want %g", volume, h*h*h)
	}
	if got := characteristicLength(&x, &y, &z, volume); got != h {
		t.Fatalf("characteristic length %g, want %g", got, h)
	}
}
