package lulesh

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// Reference statuses, as in the JSON line.
const (
	referenceMatch    = "match"
	referenceMismatch = "mismatch"
	referenceNone     = "none"
)

// report returns the output lines of a finished run (format in doc.go)
// and the job's exit status: 1 if the configuration is a row of the
// reference table and the run does not reproduce it, 0 otherwise.
func report(cfg Config, res kernel.Result, pes int) (lines []string, status int) {
	grid := cfg.ChunkGrid()
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("lulesh size %d chunk %s chunks %s pes %d", cfg.Size, appkit.FormatTriple(cfg.Chunk), appkit.FormatTriple(grid), pes)
	var text strings.Builder
	if err := res.WriteReport(&text); err != nil {
		add("error: %v", err)
		return lines, 1
	}
	lines = append(lines, strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")...)

	reference := referenceNone
	if row, ok := Reference(cfg); ok {
		reference = referenceMatch
		if res.Iterations != row.Iterations ||
			!(math.Abs(res.FinalOriginEnergy-row.OriginEnergy) <= originEnergyTolerance*math.Abs(row.OriginEnergy)) {
			reference = referenceMismatch
			status = 1
		}
		if reference == referenceMatch {
			add("reference: match")
		} else {
			add("reference: MISMATCH (want %d iterations, e(0) %s within %g relative)",
				row.Iterations, appkit.FormatExact(row.OriginEnergy), originEnergyTolerance)
		}
	} else {
		limit := "none"
		if cfg.Iterations > 0 {
			limit = strconv.Itoa(cfg.Iterations)
		}
		add("reference: none (no reference row for size %d, iteration limit %s)", cfg.Size, limit)
	}

	if cfg.JSON {
		line, err := jsonLine(cfg, res, pes, reference)
		if err != nil {
			add("error: %v", err)
			return lines, 1
		}
		lines = append(lines, line)
	}
	return lines, status
}

// Report is the final JSON line of --json.
type Report struct {
	App        string `json:"app"`
	Size       int    `json:"size"`
	Chunk      [3]int `json:"chunk"`
	Chunks     int    `json:"chunks"`
	PEs        int    `json:"pes"`
	Iterations int    `json:"iterations"`
	// FinalOriginEnergy is written as in the text (appkit.FormatExact).
	FinalOriginEnergy json.Number `json:"final_origin_energy"`
	MaxAbsDiff        float64     `json:"max_abs_diff"`
	TotalAbsDiff      float64     `json:"total_abs_diff"`
	MaxRelDiff        float64     `json:"max_rel_diff"`
	ElapsedS          float64     `json:"elapsed_s"`
	FOM               float64     `json:"fom"`
	// Digest is the FNV-1a 64 of the final energies, 16 hex digits.
	Digest    string `json:"digest"`
	Reference string `json:"reference"`
}

func jsonLine(cfg Config, res kernel.Result, pes int, reference string) (string, error) {
	for _, v := range []float64{res.FinalOriginEnergy, res.Symmetry.MaxAbsDiff, res.Symmetry.TotalAbsDiff, res.Symmetry.MaxRelDiff} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", fmt.Errorf("lulesh: result %v is not finite, no JSON line", v)
		}
	}
	out, err := json.Marshal(Report{
		App:               appName,
		Size:              cfg.Size,
		Chunk:             cfg.Chunk,
		Chunks:            cfg.NumChunks(),
		PEs:               pes,
		Iterations:        res.Iterations,
		FinalOriginEnergy: json.Number(appkit.FormatExact(res.FinalOriginEnergy)),
		MaxAbsDiff:        res.Symmetry.MaxAbsDiff,
		TotalAbsDiff:      res.Symmetry.TotalAbsDiff,
		MaxRelDiff:        res.Symmetry.MaxRelDiff,
		ElapsedS:          res.Elapsed.Seconds(),
		FOM:               res.FOM,
		Digest:            fmt.Sprintf("%016x", res.Digest),
		Reference:         reference,
	})
	return string(out), err
}
