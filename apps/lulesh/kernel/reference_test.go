package kernel

import (
	"flag"
	"math"
	"os"
	"testing"
)

var fullRows = flag.Bool("lulesh.full", false, "also run the 30³ reference row (about 20 s)")

// referenceRow is one row of the reference table in
// shared/reference/lulesh.md (serial optimised build of LLNL/LULESH 2.0).
type referenceRow struct {
	name          string
	size          int
	maxIterations int
	iterations    int
	originEnergy  float64
	symmetry      Symmetry
	long          bool // needs -lulesh.full or LULESH_FULL=1
	heavyForRace  bool // skipped under the race detector
}

var referenceTable = []referenceRow{
	{name: "10", size: 10, iterations: 231, originEnergy: 27205.311684703469,
		symmetry: Symmetry{2.273737e-12, 1.659646e-11, 4.649603e-14}},
	{name: "10-i50", size: 10, maxIterations: 50, iterations: 50, originEnergy: 81047.957518451338,
		symmetry: Symmetry{3.865352e-12, 8.924685e-12, 2.915758e-13}},
	{name: "16", size: 16, iterations: 434, originEnergy: 63801.253851092704,
		symmetry: Symmetry{1.273293e-11, 1.108260e-10, 3.303746e-13}, heavyForRace: true},
	{name: "30", size: 30, iterations: 932, originEnergy: 202507.47850719938,
		symmetry: Symmetry{7.639755e-11, 8.590535e-10, 1.482369e-12}, long: true, heavyForRace: true},
}

func TestMatchesReferenceTable(t *testing.T) {
	for _, row := range referenceTable {
		t.Run(row.name, func(t *testing.T) {
			if row.long && !*fullRows && os.Getenv("LULESH_FULL") == "" {
				t.Skip("30³ row: run with -lulesh.full or LULESH_FULL=1")
			}
			if row.heavyForRace && raceDetectorEnabled {
				t.Skip("too slow under the race detector")
			}
			res, err := Run(row.size, row.maxIterations)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("iterations %d e(0) %.17g symmetry %+v digest %016x elapsed %v FOM %.1f",
				res.Iterations, res.FinalOriginEnergy, res.Symmetry, res.Digest, res.Elapsed, res.FOM)
			if res.Iterations != row.iterations {
				t.Errorf("iterations = %d, reference %d", res.Iterations, row.iterations)
			}
			if rel := math.Abs(res.FinalOriginEnergy-row.originEnergy) / row.originEnergy; rel > 1e-10 {
				t.Errorf("e(0) = %.17g, reference %.17g (relative difference %.3g)",
					res.FinalOriginEnergy, row.originEnergy, rel)
			}
			checkSameOrder(t, "max abs diff", res.Symmetry.MaxAbsDiff, row.symmetry.MaxAbsDiff)
			checkSameOrder(t, "total abs diff", res.Symmetry.TotalAbsDiff, row.symmetry.TotalAbsDiff)
			checkSameOrder(t, "max rel diff", res.Symmetry.MaxRelDiff, row.symmetry.MaxRelDiff)
		})
	}
}

// checkSameOrder accepts a symmetry measure within a factor of 10 of the
// reference's (these are rounding-level asymmetries).
func checkSameOrder(t *testing.T, what string, got, reference float64) {
	t.Helper()
	if got > 10*reference || got < reference/10 {
		t.Errorf("%s = %.6e, reference %.6e: not of the same order", what, got, reference)
	}
}
