package evaluation

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

func writeJSON(w io.Writer, res *Results) error { return writeIndentedJSON(w, jsonSafe(res)) }

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonSafe replaces NaN (a statistic of no run) by -1, which JSON can hold.
func jsonSafe(res *Results) *Results {
	c := *res
	fix := func(s *Stat) {
		for _, f := range []*float64{&s.Median, &s.Min, &s.Max} {
			if math.IsNaN(*f) || math.IsInf(*f, 0) {
				*f = -1
			}
		}
	}
	c.Summary = append([]Summary(nil), res.Summary...)
	for i := range c.Summary {
		s := &c.Summary[i]
		fix(&s.StepMS)
		fix(&s.Overhead)
		fix(&s.CheckpointMS)
		fix(&s.InitialCheckpointMS)
		for _, f := range []*float64{&s.Handled, &s.Determinants, &s.PiggybackedPerStep, &s.LogBytesPerStep, &s.CheckpointBytes, &s.DalyPeriodS, &s.DalySteps} {
			if math.IsNaN(*f) || math.IsInf(*f, 0) {
				*f = -1
			}
		}
	}
	c.Recovery = append([]RecoverySummary(nil), res.Recovery...)
	for i := range c.Recovery {
		r := &c.Recovery[i]
		for _, s := range []*Stat{&r.DetectionMS, &r.RestoreMS, &r.CatchUpMS, &r.RegainedMS, &r.ReplayCatchUpMS, &r.SinceFailureMS, &r.ExtraS} {
			fix(s)
		}
		for _, f := range []*float64{&r.RestoredTasks, &r.RolledBackTasks, &r.FasterThanNone} {
			if math.IsNaN(*f) || math.IsInf(*f, 0) {
				*f = -1
			}
		}
	}
	return &c
}

func g(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func writeCSV(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}

func writeRunsCSV(w io.Writer, res *Results) error {
	rows := [][]string{{"app", "protocol", "failure", "spread", "rep", "ok", "wall_s", "elapsed_s", "step_ms", "steps",
		"handled", "determinants", "piggybacked_bytes", "log_bytes", "restored_tasks", "rolled_back_tasks",
		"checkpoints", "checkpoint_ms", "checkpoint_bytes", "detection_ms", "restore_ms", "catch_up_ms", "regained_ms", "regained_step",
		"replay_catch_up_ms", "since_failure_ms", "digest", "error"}}
	for _, r := range res.Runs {
		var cms, cb []string
		for _, c := range r.Checkpoints {
			cms = append(cms, g(c.MS))
			cb = append(cb, strconv.FormatInt(c.Bytes, 10))
		}
		rows = append(rows, []string{r.App, r.Protocol, strconv.FormatBool(r.Failure), spreadName(r.Spread), strconv.Itoa(r.Rep + 1), strconv.FormatBool(r.OK),
			g(r.WallS), g(r.ElapsedS), g(r.StepMS), strconv.Itoa(r.Steps),
			i64(r.Handled), i64(r.Determinants), i64(r.PiggybackedBytes), i64(r.LogBytes), i64(r.RestoredTasks), i64(r.RolledBackTasks),
			strconv.Itoa(len(r.Checkpoints)), strings.Join(cms, " "), strings.Join(cb, " "),
			g(r.DetectionMS), g(r.RestoreMS), g(r.CatchUpMS), g(r.RegainedMS), i64(r.RegainedStep),
			g(r.ReplayCatchUpMS), g(r.SinceFailureMS), r.Digest, r.Error})
	}
	return writeCSV(w, rows)
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func writeSummaryCSV(w io.Writer, res *Results) error {
	rows := [][]string{{"app", "protocol", "runs", "failed", "step_ms_median", "step_ms_min", "step_ms_max",
		"overhead_median", "overhead_min", "overhead_max", "handled", "determinants", "piggybacked_bytes_per_step", "log_bytes_per_step",
		"checkpoint_ms_median", "checkpoint_ms_min", "checkpoint_ms_max", "initial_checkpoint_ms", "checkpoint_bytes", "daly_period_s", "daly_steps"}}
	for _, s := range res.Summary {
		rows = append(rows, []string{s.App, s.Protocol, strconv.Itoa(s.Runs), strconv.Itoa(s.Failed),
			g(s.StepMS.Median), g(s.StepMS.Min), g(s.StepMS.Max), g(s.Overhead.Median), g(s.Overhead.Min), g(s.Overhead.Max),
			g(s.Handled), g(s.Determinants), g(s.PiggybackedPerStep), g(s.LogBytesPerStep),
			g(s.CheckpointMS.Median), g(s.CheckpointMS.Min), g(s.CheckpointMS.Max), g(s.InitialCheckpointMS.Median), g(s.CheckpointBytes),
			g(s.DalyPeriodS), g(s.DalySteps)})
	}
	return writeCSV(w, rows)
}

func writeRecoveryCSV(w io.Writer, res *Results) error {
	rows := [][]string{{"app", "protocol", "spread", "runs", "failed", "detection_ms", "restore_ms", "restore_ms_min", "restore_ms_max",
		"catch_up_ms", "catch_up_ms_min", "catch_up_ms_max", "regained_ms", "regained_ms_min", "regained_ms_max",
		"replay_catch_up_ms", "replay_catch_up_ms_min", "replay_catch_up_ms_max", "since_failure_ms", "since_failure_ms_min", "since_failure_ms_max",
		"extra_s", "extra_s_min", "extra_s_max", "restored_tasks", "rolled_back_tasks", "faster_than_none"}}
	for _, r := range res.Recovery {
		rows = append(rows, []string{r.App, r.Protocol, spreadName(r.Spread), strconv.Itoa(r.Runs), strconv.Itoa(r.Failed),
			g(r.DetectionMS.Median), g(r.RestoreMS.Median), g(r.RestoreMS.Min), g(r.RestoreMS.Max),
			g(r.CatchUpMS.Median), g(r.CatchUpMS.Min), g(r.CatchUpMS.Max), g(r.RegainedMS.Median), g(r.RegainedMS.Min), g(r.RegainedMS.Max),
			g(r.ReplayCatchUpMS.Median), g(r.ReplayCatchUpMS.Min), g(r.ReplayCatchUpMS.Max),
			g(r.SinceFailureMS.Median), g(r.SinceFailureMS.Min), g(r.SinceFailureMS.Max),
			g(r.ExtraS.Median), g(r.ExtraS.Min), g(r.ExtraS.Max), g(r.RestoredTasks), g(r.RolledBackTasks), g(r.FasterThanNone)})
	}
	return writeCSV(w, rows)
}

// rng formats a statistic as "median (min–max)" with the given format, or
// just the median of a single value.
func rng(s Stat, format string) string {
	if s.N == 0 || math.IsNaN(s.Median) {
		return "–"
	}
	m := fmt.Sprintf(format, s.Median)
	if s.N == 1 || s.Min == s.Max {
		return m
	}
	return fmt.Sprintf("%s (%s – %s)", m, fmt.Sprintf(format, s.Min), fmt.Sprintf(format, s.Max))
}

func pct(s Stat) string {
	if s.N == 0 || math.IsNaN(s.Median) {
		return "–"
	}
	p := func(f float64) string { return fmt.Sprintf("%+.1f %%", 100*f) }
	if s.N == 1 || s.Min == s.Max {
		return p(s.Median)
	}
	return fmt.Sprintf("%s (%s … %s)", p(s.Median), p(s.Min), p(s.Max))
}

func bytesStr(b float64) string {
	switch {
	case math.IsNaN(b):
		return "–"
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func writeMarkdown(w io.Writer, res *Results) error {
	var b strings.Builder
	cfg := res.Config
	fmt.Fprintf(&b, "Preset `%s`: %d PE processes per job, %d repetition(s), MTBF %s; %d CPUs, load average at start %s; started %s.\n\n",
		cfg.Preset, cfg.PEs, cfg.Reps, time.Duration(cfg.MTBF), res.Host.CPUs, res.Host.LoadAvg, res.Started.Format(time.RFC3339))
	b.WriteString("| app | configuration |\n|---|---|\n")
	for _, a := range cfg.Apps {
		fmt.Fprintf(&b, "| %s | `%s %s %d`, checkpoint every %d steps, PE 1 killed at step %d |\n", a.Name, strings.Join(a.Args, " "), a.StepsFlag, a.Steps, a.CheckpointEvery, a.KillStep())
	}
	failed := failedJobs(res.Runs, func(r Run) (string, Run) { return r.Case.String(), r })
	fmt.Fprintf(&b, "\n%d jobs, %d finished, %d failed.\n", len(res.Runs), len(res.Runs)-len(failed), len(failed))

	b.WriteString("\n### Forward path (no failure)\n\n")
	b.WriteString("Median (min – max) over repetitions; overhead is the ratio of medians to none's, then the range of the ratios paired by repetition.\n\n")
	b.WriteString("| app | protocol | ms/step | overhead vs none | determinants | piggybacked B/step | logged B/step |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range res.Summary {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f | %s | %s |\n", s.App, s.Protocol, rng(s.StepMS, "%.2f"), pct(s.Overhead), s.Determinants,
			bytesStr(s.PiggybackedPerStep), bytesStr(s.LogBytesPerStep))
	}
	b.WriteString("\n### Checkpoints and Daly's period\n\n")
	fmt.Fprintf(&b, "Commit time of the checkpoints during the run (not the initial one), size of the job's checkpoint; Daly's optimal period for MTBF %s: τ = sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + δ/(18M)] − δ.\n\n", time.Duration(cfg.MTBF))
	b.WriteString("| app | protocol | checkpoint ms | initial checkpoint ms | size | Daly period | in steps |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range res.Summary {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.0f |\n", s.App, s.Protocol, rng(s.CheckpointMS, "%.0f"), rng(s.InitialCheckpointMS, "%.0f"),
			bytesStr(s.CheckpointBytes), time.Duration(s.DalyPeriodS*float64(time.Second)).Round(time.Second), s.DalySteps)
	}
	b.WriteString("\n### Recovery (PE 1 killed in the middle of a checkpoint period)\n\n")
	b.WriteString("Detection: kill → launcher's notice (arrival of the log lines). Restore: the launcher's notice → the restored tasks go on (none: every task rolled back). " +
		"Catch-up: from then until every task has offered again the furthest step any task had offered when the PE died (the progress at the failure); " +
		"failure → progress regained is restore + catch-up, the recovery time. Failure → next checkpoint: until the first checkpoint after the failure commits, which adds forward work that is the same for every protocol. " +
		"Extra time: the run with the failure minus without (same repetition). Faster than none: none's failure → progress regained over this one's.\n\n")
	b.WriteString("| app | protocol | restore spread | detection ms | restore ms | catch-up ms | failure → progress regained ms | failure → next checkpoint ms | extra time s | restored tasks | rolled-back tasks | faster than none |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Recovery {
		sp := spreadName(r.Spread)
		if r.Protocol == "none" {
			sp = "(all roll back)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %.2f× |\n", r.App, r.Protocol, sp, rng(r.DetectionMS, "%.0f"),
			rng(r.RestoreMS, "%.0f"), rng(r.CatchUpMS, "%.0f"), rng(r.RegainedMS, "%.0f"), rng(r.SinceFailureMS, "%.0f"), rng(r.ExtraS, "%+.2f"),
			r.RestoredTasks, r.RolledBackTasks, r.FasterThanNone)
	}
	writeFailedJobs(&b, failed)
	_, err := io.WriteString(w, b.String())
	return err
}

// failedJobs lists the runs that failed, "- name: the error's first
// line", job giving each run's name and outcome.
func failedJobs[R any](runs []R, job func(R) (string, Run)) []string {
	var failed []string
	for _, r := range runs {
		if name, run := job(r); !run.OK {
			failed = append(failed, fmt.Sprintf("- %s: %s", name, strings.SplitN(run.Error, "\n", 2)[0]))
		}
	}
	return failed
}

// writeFailedJobs adds a section with the failed jobs, if any.
func writeFailedJobs(b *strings.Builder, failed []string) {
	if len(failed) > 0 {
		b.WriteString("\n### Failed jobs\n\n" + strings.Join(failed, "\n") + "\n")
	}
}
