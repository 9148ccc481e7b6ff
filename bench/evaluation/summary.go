package evaluation

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gochare/gochare/job"
)

// Stat is the median and range of a measurement over repetitions.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func stat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Summary is one application under one protocol without failure.
type Summary struct {
	App      string `json:"app"`
	Protocol string `json:"protocol"`
	Runs     int    `json:"runs"`
	Failed   int    `json:"failed"`
	StepMS   Stat   `json:"step_ms"`
	// Overhead is time per step over none's, minus 1: Median from the
	// medians, Min and Max over the repetitions paired with none's.
	Overhead           Stat    `json:"overhead"`
	Handled            float64 `json:"handled"`
	Determinants       float64 `json:"determinants"`
	PiggybackedPerStep float64 `json:"piggybacked_bytes_per_step"`
	LogBytesPerStep    float64 `json:"log_bytes_per_step"`
	// CheckpointMS is the commit time of the checkpoints taken during the
	// run (the initial one is InitialCheckpointMS); CheckpointBytes the
	// median size of those checkpoints, the whole job's state.
	CheckpointMS        Stat    `json:"checkpoint_ms"`
	InitialCheckpointMS Stat    `json:"initial_checkpoint_ms"`
	CheckpointBytes     float64 `json:"checkpoint_bytes"`
	// DalyPeriodS is the optimal checkpoint period for the configured
	// MTBF and the median checkpoint time; DalySteps the same in steps.
	DalyPeriodS float64 `json:"daly_period_s"`
	DalySteps   float64 `json:"daly_steps"`
	Digest      string  `json:"digest"`
}

// RecoverySummary is one application under one protocol with one PE
// killed in the middle of a checkpoint period.
type RecoverySummary struct {
	App         string `json:"app"`
	Protocol    string `json:"protocol"`
	Spread      int    `json:"spread"` // 0: all survivors
	Runs        int    `json:"runs"`
	Failed      int    `json:"failed"`
	DetectionMS Stat   `json:"detection_ms"`
	RestoreMS   Stat   `json:"restore_ms"`
	// CatchUpMS and RegainedMS: restore → and failure → the progress at
	// the failure regained (RegainedMS is the recovery time).
	CatchUpMS  Stat `json:"catch_up_ms"`
	RegainedMS Stat `json:"regained_ms"`
	// ReplayCatchUpMS and SinceFailureMS: restore → and failure → the
	// first checkpoint after the failure.
	ReplayCatchUpMS Stat `json:"replay_catch_up_ms"`
	SinceFailureMS  Stat `json:"since_failure_ms"`
	// ExtraS is the application's run time with the failure minus without
	// (same protocol and repetition).
	ExtraS          Stat    `json:"extra_s"`
	RestoredTasks   float64 `json:"restored_tasks"`
	RolledBackTasks float64 `json:"rolled_back_tasks"`
	// FasterThanNone is none's median recovery time (failure → progress
	// regained) over this one's (above 1: faster than checkpoint/restart).
	FasterThanNone float64 `json:"faster_than_none"`
}

type key struct {
	app, protocol string
	failure       bool
	spread, rep   int
}

func keyOf(c Case) key { return key{c.App, c.Protocol, c.Failure, c.Spread, c.Rep} }

func summarize(cfg Config, runs []Run) ([]Summary, []RecoverySummary) {
	byKey := map[key]Run{}
	for _, r := range runs {
		if r.OK {
			byKey[keyOf(r.Case)] = r
		}
	}
	count := func(app, p string, failure bool, spread int) (n, failed int) {
		for _, r := range runs {
			if r.App == app && r.Protocol == p && r.Failure == failure && (!failure || r.Spread == spread) {
				n++
				if !r.OK {
					failed++
				}
			}
		}
		return n, failed
	}
	var sums []Summary
	var recs []RecoverySummary
	for _, a := range cfg.Apps {
		noneStep := map[int]float64{}
		var noneRegained, noneMedian float64
		for _, p := range protocols {
			s := Summary{App: a.Name, Protocol: p}
			s.Runs, s.Failed = count(a.Name, p, false, 0)
			var step, ratio, handled, dets, pig, logb, ckpt, initial, size []float64
			for rep := 0; rep < cfg.Reps; rep++ {
				r, ok := byKey[key{a.Name, p, false, 0, rep}]
				if !ok {
					continue
				}
				step = append(step, r.StepMS)
				if p == "none" {
					noneStep[rep] = r.StepMS
				} else if n, ok := noneStep[rep]; ok && n > 0 {
					ratio = append(ratio, r.StepMS/n-1)
				}
				handled = append(handled, float64(r.Handled))
				dets = append(dets, float64(r.Determinants))
				pig = append(pig, float64(r.PiggybackedBytes)/float64(r.Steps))
				logb = append(logb, float64(r.LogBytes)/float64(r.Steps))
				for i, c := range r.Checkpoints {
					if i == 0 {
						initial = append(initial, c.MS)
						continue
					}
					ckpt = append(ckpt, c.MS)
					size = append(size, float64(c.Bytes))
				}
				s.Digest = r.Digest
			}
			s.StepMS = stat(step)
			s.Handled = stat(handled).Median
			s.Determinants = stat(dets).Median
			s.PiggybackedPerStep = stat(pig).Median
			s.LogBytesPerStep = stat(logb).Median
			s.CheckpointMS = stat(ckpt)
			s.InitialCheckpointMS = stat(initial)
			s.CheckpointBytes = stat(size).Median
			if p == "none" {
				noneMedian = s.StepMS.Median
				s.Overhead = Stat{N: len(step)}
			} else {
				s.Overhead = stat(ratio)
				if noneMedian > 0 {
					s.Overhead.Median = s.StepMS.Median/noneMedian - 1
				}
			}
			if !math.IsNaN(s.CheckpointMS.Median) && s.StepMS.Median > 0 {
				// A checkpoint that takes under a millisecond is reported as 0.
				delta := time.Duration(max(s.CheckpointMS.Median, 0.5) * float64(time.Millisecond))
				per := job.DalyPeriod(delta, time.Duration(cfg.MTBF))
				s.DalyPeriodS = per.Seconds()
				s.DalySteps = per.Seconds() * 1000 / s.StepMS.Median
			}
			sums = append(sums, s)

			spreads := cfg.Spreads
			if p == "none" {
				spreads = []int{0}
			}
			for _, k := range spreads {
				rs := RecoverySummary{App: a.Name, Protocol: p, Spread: k}
				rs.Runs, rs.Failed = count(a.Name, p, true, k)
				var det, rest, catchUp, regained, replay, since, extra, restored, rolled []float64
				for rep := 0; rep < cfg.Reps; rep++ {
					r, ok := byKey[key{a.Name, p, true, k, rep}]
					if !ok {
						continue
					}
					det = append(det, r.DetectionMS)
					rest = append(rest, r.RestoreMS)
					catchUp = append(catchUp, r.CatchUpMS)
					regained = append(regained, r.RegainedMS)
					replay = append(replay, r.ReplayCatchUpMS)
					since = append(since, r.SinceFailureMS)
					restored = append(restored, float64(r.RestoredTasks))
					rolled = append(rolled, float64(r.RolledBackTasks))
					if f, ok := byKey[key{a.Name, p, false, 0, rep}]; ok {
						extra = append(extra, r.ElapsedS-f.ElapsedS)
					}
				}
				rs.DetectionMS, rs.RestoreMS, rs.CatchUpMS, rs.RegainedMS = stat(det), stat(rest), stat(catchUp), stat(regained)
				rs.ReplayCatchUpMS, rs.SinceFailureMS, rs.ExtraS = stat(replay), stat(since), stat(extra)
				rs.RestoredTasks, rs.RolledBackTasks = stat(restored).Median, stat(rolled).Median
				if p == "none" {
					noneRegained = rs.RegainedMS.Median
				}
				if rs.RegainedMS.Median > 0 {
					rs.FasterThanNone = noneRegained / rs.RegainedMS.Median
				}
				recs = append(recs, rs)
			}
		}
	}
	return sums, recs
}

// Check reports every inconsistency in the results: a job that failed or
// did not finish, determinants where the protocol needs none or none where
// it needs them, a rollback where only the failed PE's tasks should be
// restored, results that differ between protocols, a failure run whose
// progress at the failure was not reported regained, or only after the
// next checkpoint.
func (res *Results) Check() error {
	var errs []error
	bad := func(r Run, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", r.Case, fmt.Sprintf(format, a...)))
	}
	digest := map[string]string{}
	for _, r := range res.Runs {
		if !r.OK {
			bad(r, "job failed: %s", r.Error)
			continue
		}
		if d, ok := digest[r.App]; !ok {
			digest[r.App] = r.Digest
		} else if d != r.Digest {
			bad(r, "result digest %s, other runs of %s gave %s", r.Digest, r.App, d)
		}
		if len(r.Checkpoints) < 2 {
			bad(r, "%d checkpoints committed, want the initial one and at least one more", len(r.Checkpoints))
		}
		for _, c := range r.Checkpoints {
			if c.Bytes <= 0 {
				bad(r, "checkpoint %d has no size", c.Epoch)
			}
		}
		switch r.Protocol {
		case "none":
			if r.Determinants != 0 || r.LogBytes != 0 || r.PiggybackedBytes != 0 {
				bad(r, "none logged: determinants=%d log_bytes=%d piggybacked_bytes=%d", r.Determinants, r.LogBytes, r.PiggybackedBytes)
			}
			if r.Failure && r.RolledBackTasks == 0 {
				bad(r, "checkpoint/restart after a failure rolled back no task")
			}
		case "partialdet":
			if r.Determinants != 0 {
				bad(r, "partialdet created %d determinants, the applications need none", r.Determinants)
			}
		case "fulldet":
			if r.Determinants == 0 {
				bad(r, "fulldet created no determinant")
			}
		}
		if r.Protocol != "none" {
			if r.LogBytes == 0 {
				bad(r, "no message logged")
			}
			if r.Failure && (r.RolledBackTasks != 0 || r.RestoredTasks == 0) {
				bad(r, "after a failure: rolled_back_tasks=%d restored_tasks=%d, want 0 and > 0", r.RolledBackTasks, r.RestoredTasks)
			}
		}
		if r.Failure && (r.RestoreMS <= 0 && r.ReplayCatchUpMS <= 0 || r.SinceFailureMS < r.ReplayCatchUpMS) {
			bad(r, "recovery times inconsistent: restore %v ms, replay %v ms, since failure %v ms", r.RestoreMS, r.ReplayCatchUpMS, r.SinceFailureMS)
		}
		if r.Failure && (r.RegainedStep <= 0 || r.RegainedMS <= 0) {
			bad(r, "no report that the progress at the failure was regained (step %d, %v ms after the failure)", r.RegainedStep, r.RegainedMS)
		}
		// Every task offers the step reached at the failure before the
		// next sync point, so the progress is regained before the next
		// checkpoint.
		if r.Failure && (r.RegainedMS < r.CatchUpMS || r.RegainedMS > r.SinceFailureMS) {
			bad(r, "recovery times inconsistent: catch-up %v ms, failure → progress regained %v ms, failure → next checkpoint %v ms", r.CatchUpMS, r.RegainedMS, r.SinceFailureMS)
		}
	}
	return errors.Join(errs...)
}
