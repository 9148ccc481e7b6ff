package kernel

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteReport prints the result the way the reference ends its run, with
// the origin energy at full precision and the digest added.
func (r Result) WriteReport(w io.Writer) error {
	_, err := fmt.Fprintf(w, `Run completed:
   Problem size        =  %d
   Iteration count     =  %d
   Final Origin Energy =  %.17g
   Testing Plane 0 of Energy Array:
        MaxAbsDiff   = %.6e
        TotalAbsDiff = %.6e
        MaxRelDiff   = %.6e

Elapsed time         = %10.2f (s)
FOM                  = %10.2f (z/s)
Digest               = %016x
`, r.Size, r.Iterations, r.FinalOriginEnergy,
		r.Symmetry.MaxAbsDiff, r.Symmetry.TotalAbsDiff, r.Symmetry.MaxRelDiff,
		r.Elapsed.Seconds(), r.FOM, r.Digest)
	return err
}

// resultJSON is the one-line JSON form of a result (the CLI's --json).
type resultJSON struct {
	Iterations        int     `json:"iterations"`
	FinalOriginEnergy float64 `json:"final_origin_energy"`
	MaxAbsDiff        float64 `json:"max_abs_diff"`
	TotalAbsDiff      float64 `json:"total_abs_diff"`
	MaxRelDiff        float64 `json:"max_rel_diff"`
	ElapsedSeconds    float64 `json:"elapsed_s"`
	FOM               float64 `json:"fom"`
	Digest            string  `json:"digest"` // 16 hex digits
}

// MarshalJSON encodes the result with the keys iterations,
// final_origin_energy, max_abs_diff, total_abs_diff, max_rel_diff,
// elapsed_s, fom and digest (16 hex digits).
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{
		Iterations:        r.Iterations,
		FinalOriginEnergy: r.FinalOriginEnergy,
		MaxAbsDiff:        r.Symmetry.MaxAbsDiff,
		TotalAbsDiff:      r.Symmetry.TotalAbsDiff,
		MaxRelDiff:        r.Symmetry.MaxRelDiff,
		ElapsedSeconds:    r.Elapsed.Seconds(),
		FOM:               r.FOM,
		Digest:            fmt.Sprintf("%016x", r.Digest),
	})
}
