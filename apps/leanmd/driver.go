package leanmd

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/apps/leanmd/md"
)

// start begins the run: every cell sends its first positions.
func (p *program) start(ctx actor.Context) { p.begin.Broadcast(ctx, &Begin{}) }

// Report is the outcome of a run, as printed with --json.
type Report struct {
	App              string  `json:"app"`
	Cells            [3]int  `json:"cells"`
	Steps            int     `json:"steps"`
	PEs              int     `json:"pes"`
	KineticInitial   float64 `json:"ke_initial"`
	PotentialInitial float64 `json:"pe_initial"`
	KineticFinal     float64 `json:"ke_final"`
	PotentialFinal   float64 `json:"pe_final"`
	AtomsMigrated    int64   `json:"atoms_migrated"`
	Digest           string  `json:"digest"`
	MsPerStep        float64 `json:"ms_per_step"`
}

// finish reports the run once every cell reduction is in: the energies
// of the first (and last) step, then the final state.
func (p *program) finish(ctx actor.Context, run appkit.Run) ([]string, int, error) {
	opts := p.opts
	energies := func(r *actor.ReductionResult) (kinetic, potential float64) {
		if len(r.Floats) != 2 {
			panic(fmt.Sprintf("leanmd: energy reduction %d has %d values", r.Number, len(r.Floats)))
		}
		return r.Floats[0], r.Floats[1]
	}
	state := run.Results[len(run.Results)-1]
	if len(state.Ints) != 1 {
		panic(fmt.Sprintf("leanmd: state reduction has %d integers", len(state.Ints)))
	}
	h := fnv.New64a()
	h.Write(state.Bytes)
	rep := Report{
		App: "leanmd", Cells: opts.Cells, Steps: opts.Steps, PEs: ctx.NumPEs(),
		AtomsMigrated: state.Ints[0],
		Digest:        fmt.Sprintf("%016x", h.Sum64()),
		MsPerStep:     float64(run.Elapsed.Microseconds()) / 1000 / float64(opts.Steps),
	}
	rep.KineticInitial, rep.PotentialInitial = energies(run.Results[0])
	rep.KineticFinal, rep.PotentialFinal = energies(run.Results[len(run.Results)-2])

	atoms := len(state.Bytes) / (8 * md.MigrantStride)
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("leanmd: %d×%d×%d cells, k-away %d,%d,%d, %d atoms, %d steps, migration every %d, %d PEs",
		opts.Cells[0], opts.Cells[1], opts.Cells[2], opts.KAway[0], opts.KAway[1], opts.KAway[2],
		atoms, opts.Steps, opts.MigrateEvery, ctx.NumPEs())
	add("initial energy: kinetic %.17g potential %.17g", rep.KineticInitial, rep.PotentialInitial)
	add("final energy: kinetic %.17g potential %.17g", rep.KineticFinal, rep.PotentialFinal)
	add("atoms migrated: %d", rep.AtomsMigrated)
	add("time per step: %.3f ms", rep.MsPerStep)
	add("digest: %s", rep.Digest)
	status := 0
	if verdict, ok := CheckReference(opts.Config, rep); ok {
		add("reference: match (largest relative error %.2g)", verdict.LargestRelativeError)
	} else if verdict.Applicable {
		add("reference: MISMATCH: %s", verdict.Problem)
		status = 1
	} else {
		add("reference: none for this configuration")
	}
	if opts.JSON {
		line, err := json.Marshal(rep)
		if err != nil {
			panic(fmt.Sprintf("leanmd: encode report: %v", err))
		}
		lines = append(lines, string(line))
	}
	return lines, status, nil
}

// Reference values of shared/reference/leanmd.md.
var referenceConfig = md.Config{Cells: [3]int{5, 5, 3}, KAway: [3]int{2, 2, 1}, AtomsPerCell: 75, Steps: 200, MigrateEvery: 20}

const (
	referenceKineticInitial   = 4.6865663210178031e-15
	referencePotentialInitial = -2.0021111207963637e-15
	referenceKineticFinal     = 4.0968536822824306e-15
	referencePotentialFinal   = -1.4109150676500105e-15
	referenceAtomsMigrated    = 834
	referenceTolerance        = 1e-9
)

// Verdict is the comparison of a run with the reference values.
type Verdict struct {
	// Applicable reports whether the configuration has reference values.
	Applicable           bool
	LargestRelativeError float64
	// Problem says what does not match ("" if all does).
	Problem string
}

// CheckReference compares a report with the reference values of its
// configuration, if there are any; ok is true when they match.
func CheckReference(cfg md.Config, rep Report) (v Verdict, ok bool) {
	if cfg != referenceConfig {
		return Verdict{}, false
	}
	v.Applicable = true
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"initial kinetic energy", rep.KineticInitial, referenceKineticInitial},
		{"initial potential energy", rep.PotentialInitial, referencePotentialInitial},
		{"final kinetic energy", rep.KineticFinal, referenceKineticFinal},
		{"final potential energy", rep.PotentialFinal, referencePotentialFinal},
	} {
		e := math.Abs(c.got-c.want) / math.Abs(c.want)
		if !(e <= referenceTolerance) && v.Problem == "" {
			v.Problem = fmt.Sprintf("%s %.17g, reference %.17g", c.name, c.got, c.want)
		}
		v.LargestRelativeError = max(v.LargestRelativeError, e)
	}
	if rep.AtomsMigrated != referenceAtomsMigrated && v.Problem == "" {
		v.Problem = fmt.Sprintf("%d atoms migrated, reference %d", rep.AtomsMigrated, referenceAtomsMigrated)
	}
	return v, v.Problem == ""
}
