package stencil3d

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rowFunc is the signature of a row of a sweep (sweepRow, sweepRowGo).
type rowFunc func(out, c, ym, yp, zm, zp []float64)

// rowLengths are the row lengths the row tests try: every length up to
// 67, which covers every tail of a 2- or 4-point vector loop several
// times over, and some long rows.
func rowLengths() []int {
	var ns []int
	for n := range 68 {
		ns = append(ns, n)
	}
	return append(ns, 64, 255, 256, 1000, 4099)
}

// specialValues are the inputs on which a vector version is most likely
// to part from the scalar one: signed zeros, subnormals, infinities, NaNs
// with different payloads and signs, and values so far apart in magnitude
// that another summation order would round differently.
var specialValues = []float64{
	0, math.Copysign(0, -1),
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.Float64frombits(0x000fffffffffffff), // largest subnormal
	-math.Float64frombits(0x0000000000001234),
	math.Inf(1), math.Inf(-1),
	math.NaN(),
	math.Float64frombits(0x7ff8000000000bad), // quiet NaN, other payload
	math.Float64frombits(0xfff8000000000000), // negative quiet NaN
	math.MaxFloat64, -math.MaxFloat64,
	1e16, -1e16, 1, 0x1p-1022,
}

// randomValue returns a special value one time in four, otherwise a
// normal value of random sign and magnitude.
func randomValue(rng *rand.Rand) float64 {
	if rng.IntN(4) == 0 {
		return specialValues[rng.IntN(len(specialValues))]
	}
	return rng.NormFloat64() * math.Ldexp(1, rng.IntN(80)-40)
}

// guard is the value of the points around out that a row must not write.
var guard = math.Float64frombits(0x7ff0dead0000beef)

// checkRow compares row with sweepRowGo bit for bit on random rows of
// every length of rowLengths, each row starting at a random offset of 0
// to 3 points into its own array (so the vector loads meet every
// alignment), and checks that row writes no point outside out. A NaN
// result only has to be a NaN: when two NaNs meet in an addition the x86
// instructions return the first operand, and Go's compiler, for which
// float addition commutes, does not keep one operand order for
// sweepRowGo itself (a -race build orders some of its additions
// differently from a plain one, so even sweepRowGo's NaNs differ between
// the two builds).
func checkRow(t *testing.T, rng *rand.Rand, row rowFunc) {
	t.Helper()
	for _, n := range rowLengths() {
		for range 8 {
			// The input rows: c with its two extra points, then ym..zp.
			var in [5][]float64
			for r := range in {
				m := n
				if r == 0 {
					m += 2
				}
				off := rng.IntN(4)
				backing := make([]float64, off+m+rng.IntN(4))
				for i := range backing {
					backing[i] = randomValue(rng)
				}
				in[r] = backing[off : off+m]
			}
			c, ym, yp, zm, zp := in[0], in[1], in[2], in[3], in[4]
			off := rng.IntN(4)
			backing := make([]float64, off+n+4)
			for i := range backing {
				backing[i] = guard
			}
			got := backing[off : off+n]
			want := make([]float64, n)
			row(got, c, ym, yp, zm, zp)
			sweepRowGo(want, c, ym, yp, zm, zp)
			for i := range want {
				g, w := math.Float64bits(got[i]), math.Float64bits(want[i])
				if g == w || math.IsNaN(got[i]) && math.IsNaN(want[i]) {
					continue
				}
				t.Fatalf("row of %d points, point %d: %#016x (%v), want %#016x (%v) from xm %v xp %v ym %v yp %v zm %v zp %v x0 %v",
					n, i, g, got[i], w, want[i], c[i], c[i+2], ym[i], yp[i], zm[i], zp[i], c[i+1])
			}
			for i, v := range backing {
				if (i < off || i >= off+n) && math.Float64bits(v) != math.Float64bits(guard) {
					t.Fatalf("row of %d points starting at %d wrote point %d of its array", n, off, i)
				}
			}
		}
	}
}

// TestSweepRowMatchesGo checks the row the sweeps run (vectorised where
// there is a vector version) against sweepRowGo.
func TestSweepRowMatchesGo(t *testing.T) {
	checkRow(t, rand.New(rand.NewPCG(5, 6)), sweepRow)
}

// TestSweepRowRefusesShortRows checks that a row too short for out panics
// (the bounds checks before any vector code) rather than reading past it.
func TestSweepRowRefusesShortRows(t *testing.T) {
	const n = 8
	full := func(m int) []float64 { return make([]float64, m) }
	cases := map[string][6][]float64{
		"c":  {full(n), full(n + 1), full(n), full(n), full(n), full(n)},
		"ym": {full(n), full(n + 2), full(n - 1), full(n), full(n), full(n)},
		"zp": {full(n), full(n + 2), full(n), full(n), full(n), full(n - 4)},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("sweepRow with a short %s row did not panic", name)
				}
			}()
			sweepRow(rows[0], rows[1], rows[2], rows[3], rows[4], rows[5])
		})
	}
}
