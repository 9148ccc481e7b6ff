package lulesh

// ReferenceRow is one row of the LULESH specification's reference table
// (the serial reference, optimised build).
type ReferenceRow struct {
	Size int
	// Limit is the reference's -i option (0: none, run to the stop time).
	Limit        int
	Iterations   int
	OriginEnergy float64
	MaxAbsDiff   float64
	TotalAbsDiff float64
	MaxRelDiff   float64
}

var referenceRows = []ReferenceRow{
	{Size: 10, Iterations: 231, OriginEnergy: 27205.311684703469, MaxAbsDiff: 2.273737e-12, TotalAbsDiff: 1.659646e-11, MaxRelDiff: 4.649603e-14},
	{Size: 10, Limit: 50, Iterations: 50, OriginEnergy: 81047.957518451338, MaxAbsDiff: 3.865352e-12, TotalAbsDiff: 8.924685e-12, MaxRelDiff: 2.915758e-13},
	{Size: 16, Iterations: 434, OriginEnergy: 63801.253851092704, MaxAbsDiff: 1.273293e-11, TotalAbsDiff: 1.108260e-10, MaxRelDiff: 3.303746e-13},
	{Size: 30, Iterations: 932, OriginEnergy: 202507.47850719938, MaxAbsDiff: 7.639755e-11, TotalAbsDiff: 8.590535e-10, MaxRelDiff: 1.482369e-12},
}

// originEnergyTolerance is the relative difference from the reference's
// e(0) that still matches (the specification's 1e-10).
const originEnergyTolerance = 1e-10

// Reference returns the reference row a configuration reproduces, if
// any: same mesh size and the same iteration limit, or no limit below
// the row's iteration count for a row that runs to the stop time. The
// chunking does not matter: every chunking must reproduce the row.
func Reference(cfg Config) (ReferenceRow, bool) {
	for _, row := range referenceRows {
		if cfg.Size != row.Size {
			continue
		}
		if cfg.Iterations == row.Limit || row.Limit == 0 && cfg.Iterations >= row.Iterations {
			return row, true
		}
	}
	return ReferenceRow{}, false
}
