package lulesh

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

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
	add("lulesh size %d chunk %s chunks %s pes %d", cfg.Size, formatTriple(cfg.Chunk), formatTriple(grid), pes)
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
				row.Iterations, formatEnergy(row.OriginEnergy), originEnergyTolerance)
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

// formatEnergy writes an energy with 17 significant digits, enough to
// identify the float64 exactly, as in the reference table.
func formatEnergy(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }

// Report is the final JSON line of --json.
type Report struct {
	App        string `json:"app"`
	Size       int    `json:"size"`
	Chunk      [3]int `json:"chunk"`
	Chunks     int    `json:"chunks"`
	PEs        int    `json:"pes"`
	Iterations int    `json:"iterations"`
	// FinalOriginEnergy is written with 17 significant digits.
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
		FinalOriginEnergy: json.Number(formatEnergy(res.FinalOriginEnergy)),
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

// mainTask is the only element of the main collection.
type mainTask struct {
	// startedAt is the Unix time in nanoseconds of Start, 0 before.
	startedAt int64
	numPEs    int32
	finished  bool
}

// Packed form of a mainTask, little-endian: "LULM" version(1),
// startedAt (int64), numPEs (int32), finished (1 byte).
const (
	mainMagic       = "LULM"
	mainVersion     = 1
	mainPackedBytes = len(mainMagic) + 1 + 8 + 4 + 1
)

func (m *mainTask) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, mainPackedBytes)
	out = append(out, mainMagic...)
	out = append(out, mainVersion)
	out = binary.LittleEndian.AppendUint64(out, uint64(m.startedAt))
	out = binary.LittleEndian.AppendUint32(out, uint32(m.numPEs))
	var finished byte
	if m.finished {
		finished = 1
	}
	return append(out, finished), nil
}

func (m *mainTask) UnmarshalBinary(data []byte) error {
	if len(data) != mainPackedBytes || string(data[:len(mainMagic)]) != mainMagic || data[len(mainMagic)] != mainVersion {
		return fmt.Errorf("lulesh: packed main element of %d bytes is not %q version %d", len(data), mainMagic, mainVersion)
	}
	rest := data[len(mainMagic)+1:]
	if rest[12] > 1 {
		return fmt.Errorf("lulesh: packed main element has finished flag %d", rest[12])
	}
	m.startedAt = int64(binary.LittleEndian.Uint64(rest))
	m.numPEs = int32(binary.LittleEndian.Uint32(rest[8:]))
	m.finished = rest[12] == 1
	return nil
}
