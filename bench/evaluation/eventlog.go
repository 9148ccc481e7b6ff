package evaluation

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gochare/gochare/logging"
)

// The event-logger comparison (`gochare bench eventlog`): per
// application, FullDet and PartialDet with and without an event logger
// (`--loggers 1 --event-logger`), and none as the baseline: the
// piggybacked bytes per step, the forward overhead against none and
// against the same protocol without the event logger, and the recovery
// after 1, 2 or 3 PEs killed at the same step. The killed PEs are never
// buddies of each other (PE r's checkpoint copy is on PE r+1), so every
// checkpoint survives: without the event logger the protocols survive
// two failures between checkpoints by replay and roll every task back at
// the third; with it, any number is recovered by replay. The jobs of a
// repetition run in an order rotated every repetition, and each overhead
// is paired with the baseline job of the same repetition. On a loaded
// machine the whole job's CPU time (launcher, PEs and logger) says more
// than its wall time, so both are reported.

// elFailureBound is the number of PE failures between two checkpoints
// that the protocols recover by replay without an event logger (f, which
// the runtime leaves at its default); a further one rolls every task back.
const elFailureBound = logging.DefaultFailures

// ELVariant is a protocol with or without the event logger.
type ELVariant struct {
	Protocol    string `json:"protocol"`
	EventLogger bool   `json:"event_logger"`
}

func (v ELVariant) String() string {
	if v.EventLogger {
		return v.Protocol + "+EL"
	}
	return v.Protocol
}

// elVariants are the forward jobs' variants, in the order they are
// reported; every one but none also has failure jobs.
var elVariants = []ELVariant{{"none", false}, {"fulldet", false}, {"fulldet", true}, {"partialdet", false}, {"partialdet", true}}

// ELConfig is a whole event-logger comparison.
type ELConfig struct {
	JobSet
	// Failures are the numbers of PEs killed at once in the failure jobs
	// (killedPEs says which).
	Failures []int `json:"failures"`
}

// ELPreset returns the named configuration: tiny (the tests) or quick
// (the default).
func ELPreset(name string) (ELConfig, error) {
	c := ELConfig{JobSet: JobSet{Preset: name, PEs: 6, Reps: 3, Timeout: Duration(3 * time.Minute)}, Failures: []int{1, 2, 3}}
	switch name {
	case "tiny":
		c.Reps = 1
		c.Failures = []int{3}
		c.Timeout = Duration(time.Minute)
		c.Apps = []AppJob{
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "8", "--steps", "9"}, CheckpointEvery: 3, KillStep: 4},
			{Name: "stencil3d", Args: []string{"--grid", "32,32,32", "--chunk", "8,8,8", "--iterations", "9"}, CheckpointEvery: 3, KillStep: 4},
			{Name: "lulesh", Args: []string{"--size", "12", "--chunk", "4", "--iterations", "9"}, CheckpointEvery: 3, KillStep: 4},
		}
	case "quick":
		c.Apps = []AppJob{
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "40", "--steps", "24"}, CheckpointEvery: 8, KillStep: 12},
			{Name: "stencil3d", Args: []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", "60"}, CheckpointEvery: 20, KillStep: 30},
			{Name: "lulesh", Args: []string{"--size", "18", "--chunk", "6", "--iterations", "30"}, CheckpointEvery: 10, KillStep: 15},
		}
	default:
		return c, fmt.Errorf("evaluation: unknown event-logger preset %q (tiny or quick)", name)
	}
	return c, nil
}

// killedPEs are the PEs killed when n fail at once: 1, 3, …, 2n−1. No
// two are neighbours in the ring of buddies, so each one's checkpoint
// copy, on the next PE, survives.
func killedPEs(n int) []int {
	pes := make([]int, n)
	for i := range pes {
		pes[i] = 2*i + 1
	}
	return pes
}

// ELCase is one job of the comparison: Failures 0 is the forward path.
type ELCase struct {
	App      string    `json:"app"`
	Variant  ELVariant `json:"variant"`
	Failures int       `json:"failures"`
	Rep      int       `json:"rep"`
}

func (k ELCase) String() string {
	s := fmt.Sprintf("%s %s", k.App, k.Variant)
	switch k.Failures {
	case 0:
		s += " forward"
	case 1:
		s += ", PE 1 killed"
	default:
		s += fmt.Sprintf(", PEs %s killed", intList(killedPEs(k.Failures)))
	}
	return fmt.Sprintf("%s, rep %d", s, k.Rep+1)
}

func intList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// ELRun is the outcome of one job.
type ELRun struct {
	ELCase
	Run
}

// ELForward is one application and variant without failure.
type ELForward struct {
	App string `json:"app"`
	ELVariant
	Runs   int  `json:"runs"`
	Failed int  `json:"failed"`
	StepMS Stat `json:"step_ms"`
	// CPUS is the whole job's CPU time.
	CPUS Stat `json:"cpu_s"`
	// Overhead (time per step) and CPUOverhead (the job's CPU time):
	// the ratio to none's job of the same repetition, minus 1;
	// OverheadNoEL and CPUOverheadNoEL the same against the protocol
	// without the event logger (event-logger variants only).
	Overhead        Stat `json:"overhead"`
	CPUOverhead     Stat `json:"cpu_overhead"`
	OverheadNoEL    Stat `json:"overhead_no_el"`
	CPUOverheadNoEL Stat `json:"cpu_overhead_no_el"`
	// PiggybackedPerStep: the records that rode on messages, bytes per
	// step; EventLogPerStep: the records sent to the logger.
	PiggybackedPerStep Stat `json:"piggybacked_bytes_per_step"`
	// PiggybackShare (event-logger variants) is PiggybackedPerStep's
	// median over the protocol's without the event logger.
	PiggybackShare  float64 `json:"piggyback_share,omitempty"`
	EventLogPerStep Stat    `json:"event_log_bytes_per_step"`
	Determinants    float64 `json:"determinants"`
}

// ELRecovery is one application and variant with Failures PEs killed at
// once.
type ELRecovery struct {
	App string `json:"app"`
	ELVariant
	Failures int `json:"failures"`
	Runs     int `json:"runs"`
	Failed   int `json:"failed"`
	// RegainedMS is the recovery time: failure → every task offered
	// again the step the job had reached (restore + catch-up).
	RegainedMS      Stat    `json:"regained_ms"`
	RestoreMS       Stat    `json:"restore_ms"`
	CatchUpMS       Stat    `json:"catch_up_ms"`
	RestoredTasks   float64 `json:"restored_tasks"`
	RolledBackTasks float64 `json:"rolled_back_tasks"`
	// RolledBack counts the jobs in which every task went back to the
	// checkpoint instead of the failed PEs' tasks replaying.
	RolledBack int `json:"rolled_back"`
}

// ELResults is everything an event-logger comparison measured.
type ELResults struct {
	Config   ELConfig     `json:"config"`
	Started  time.Time    `json:"started"`
	Host     Host         `json:"host"`
	Runs     []ELRun      `json:"runs"`
	Forward  []ELForward  `json:"forward"`
	Recovery []ELRecovery `json:"recovery"`
}

func (c ELConfig) validate() error {
	if err := c.JobSet.validate(); err != nil {
		return err
	}
	for _, n := range c.Failures {
		if n < 1 {
			return fmt.Errorf("evaluation: %d failures: want at least 1", n)
		}
		if need := 2 * n; c.PEs < need {
			return fmt.Errorf("evaluation: %d failures need %d PEs (PEs %s killed, their buddies alive), not %d", n, need, intList(killedPEs(n)), c.PEs)
		}
	}
	for _, a := range c.Apps {
		if a.CheckpointEvery < 1 || a.KillStep <= a.CheckpointEvery {
			return fmt.Errorf("evaluation: %s: kill at step %d, checkpoint every %d: want the kill after the first checkpoint", a.Name, a.KillStep, a.CheckpointEvery)
		}
	}
	return nil
}

// cases returns the jobs of app a for repetition rep, in the order they
// run: the forward ones rotated by rep, then the failure ones rotated
// the same way.
func (c ELConfig) cases(a AppJob, rep int) []ELCase {
	var fwd, fail []ELCase
	for _, v := range elVariants {
		fwd = append(fwd, ELCase{App: a.Name, Variant: v, Rep: rep})
		if v.Protocol == "none" {
			continue
		}
		for _, n := range c.Failures {
			fail = append(fail, ELCase{App: a.Name, Variant: v, Failures: n, Rep: rep})
		}
	}
	return append(rotate(fwd, rep), rotate(fail, rep)...)
}

// jobs is the number of jobs of the comparison.
func (c ELConfig) jobs() int {
	n := 0
	for _, a := range c.Apps {
		n += c.Reps * len(c.cases(a, 0))
	}
	return n
}

// args are the `gochare` arguments of k.
func (c ELConfig) args(a AppJob, k ELCase) []string {
	args := []string{"run", a.Name, "--pes", strconv.Itoa(c.PEs), "--ft", k.Variant.Protocol,
		"--checkpoint-every", strconv.Itoa(a.CheckpointEvery), "--json"}
	if k.Variant.EventLogger {
		args = append(args, "--loggers", "1", "--event-logger")
	}
	for _, pe := range killedPEs(k.Failures) {
		args = append(args, "--kill", fmt.Sprintf("pe=%d,at=step:%d", pe, a.KillStep))
	}
	return append(args, a.Args...)
}

// EvaluateEventLogger runs every job of cfg and summarizes them; a job
// that fails is recorded (OK false) and the comparison goes on.
func EvaluateEventLogger(ctx context.Context, cfg ELConfig, progress *Progress) (*ELResults, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &ELResults{Config: cfg, Started: time.Now().UTC(), Host: hostInfo()}
	progress.start(cfg.jobs())
	for rep := range cfg.Reps {
		for _, a := range cfg.Apps {
			for _, k := range cfg.cases(a, rep) {
				if err := ctx.Err(); err != nil {
					return res, fmt.Errorf("evaluation: interrupted: %w", err)
				}
				c := Case{App: a.Name, Protocol: k.Variant.Protocol, Failure: k.Failures > 0, Rep: rep}
				r := ELRun{ELCase: k, Run: execute(ctx, cfg.Exe, c, cfg.args(a, k), time.Duration(cfg.Timeout))}
				res.Runs = append(res.Runs, r)
				progress.doneEL(r)
			}
		}
	}
	progress.finish()
	res.Host.LoadAvgEnd = hostInfo().LoadAvg
	res.Forward, res.Recovery = summarizeEL(cfg, res.Runs)
	return res, nil
}

func (p *Progress) doneEL(r ELRun) {
	what := fmt.Sprintf("%.2f ms/step, CPU %.2f s, piggybacked %s", r.StepMS, r.CPUS, bytesStr(float64(r.PiggybackedBytes)))
	if r.Failures > 0 {
		what += fmt.Sprintf(", recovery %.0f ms", r.RegainedMS)
		if r.RolledBackTasks > 0 {
			what += " (every task rolled back)"
		}
	}
	p.finished(r.ELCase.String(), what, r.Run)
}

// pairedRatios are a/b − 1 for the repetitions where both have a
// positive b.
func pairedRatios(a, b map[int]float64) []float64 {
	var out []float64
	for rep, x := range a {
		if y, ok := b[rep]; ok && y > 0 {
			out = append(out, x/y-1)
		}
	}
	return out
}

func summarizeEL(cfg ELConfig, runs []ELRun) ([]ELForward, []ELRecovery) {
	type key struct {
		app string
		ELVariant
		failures int
	}
	byKey := map[key][]ELRun{}
	for _, r := range runs {
		k := key{r.ELCase.App, r.Variant, r.Failures}
		byKey[k] = append(byKey[k], r)
	}
	// perRep is a figure of the finished forward jobs of app and v, by
	// repetition.
	perRep := func(app string, v ELVariant, f func(ELRun) float64) map[int]float64 {
		m := map[int]float64{}
		for _, r := range byKey[key{app, v, 0}] {
			if r.OK {
				m[r.ELCase.Rep] = f(r)
			}
		}
		return m
	}
	values := func(m map[int]float64) []float64 {
		var v []float64
		for _, x := range m {
			v = append(v, x)
		}
		return v
	}
	stepMS := func(r ELRun) float64 { return r.StepMS }
	cpu := func(r ELRun) float64 { return r.CPUS }
	var fwd []ELForward
	var rec []ELRecovery
	for _, a := range cfg.Apps {
		for _, v := range elVariants {
			s := ELForward{App: a.Name, ELVariant: v}
			var dets []float64
			for _, r := range byKey[key{a.Name, v, 0}] {
				s.Runs++
				if !r.OK {
					s.Failed++
				} else {
					dets = append(dets, float64(r.Determinants))
				}
			}
			s.Determinants = stat(dets).Median
			step, jobCPU := perRep(a.Name, v, stepMS), perRep(a.Name, v, cpu)
			s.StepMS, s.CPUS = stat(values(step)), stat(values(jobCPU))
			s.PiggybackedPerStep = stat(values(perRep(a.Name, v, func(r ELRun) float64 { return float64(r.PiggybackedBytes) / float64(max(r.Steps, 1)) })))
			s.EventLogPerStep = stat(values(perRep(a.Name, v, func(r ELRun) float64 { return float64(r.EventLogBytes) / float64(max(r.Steps, 1)) })))
			none := ELVariant{Protocol: "none"}
			s.Overhead = stat(pairedRatios(step, perRep(a.Name, none, stepMS)))
			s.CPUOverhead = stat(pairedRatios(jobCPU, perRep(a.Name, none, cpu)))
			if v.EventLogger {
				without := ELVariant{Protocol: v.Protocol}
				s.OverheadNoEL = stat(pairedRatios(step, perRep(a.Name, without, stepMS)))
				s.CPUOverheadNoEL = stat(pairedRatios(jobCPU, perRep(a.Name, without, cpu)))
				if i := len(fwd) - 1; i >= 0 && fwd[i].ELVariant == without && fwd[i].PiggybackedPerStep.Median > 0 {
					s.PiggybackShare = s.PiggybackedPerStep.Median / fwd[i].PiggybackedPerStep.Median
				}
			}
			fwd = append(fwd, s)
			if v.Protocol == "none" {
				continue
			}
			for _, n := range cfg.Failures {
				rs := ELRecovery{App: a.Name, ELVariant: v, Failures: n}
				var regained, restore, catchUp, restored, rolled []float64
				for _, r := range byKey[key{a.Name, v, n}] {
					rs.Runs++
					if !r.OK {
						rs.Failed++
						continue
					}
					regained = append(regained, r.RegainedMS)
					restore = append(restore, r.RestoreMS)
					catchUp = append(catchUp, r.CatchUpMS)
					restored = append(restored, float64(r.RestoredTasks))
					rolled = append(rolled, float64(r.RolledBackTasks))
					if r.RolledBackTasks > 0 {
						rs.RolledBack++
					}
				}
				rs.RegainedMS, rs.RestoreMS, rs.CatchUpMS = stat(regained), stat(restore), stat(catchUp)
				rs.RestoredTasks, rs.RolledBackTasks = stat(restored).Median, stat(rolled).Median
				rec = append(rec, rs)
			}
		}
	}
	return fwd, rec
}

// Check verifies what the event logger promises: every job finished
// with the application's failure-free result; with the event logger the
// PEs sent records to the logger and every failure, however many PEs
// died at once, was recovered by replay (the failed PEs' tasks
// restored, none rolled back); without it, up to elFailureBound
// failures were recovered by replay and more rolled every task back.
func (res *ELResults) Check() error {
	var errs []error
	bad := func(r ELRun, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", r.ELCase, fmt.Sprintf(format, a...)))
	}
	digest := map[string]string{}
	for _, r := range res.Runs {
		if r.OK && r.Variant.Protocol == "none" && r.Failures == 0 {
			digest[r.App] = r.Digest
		}
	}
	for _, r := range res.Runs {
		if !r.OK {
			bad(r, "job failed: %s", strings.SplitN(r.Error, "\n", 2)[0])
			continue
		}
		if d, ok := digest[r.App]; ok && r.Digest != d {
			bad(r, "digest %s, none's forward job gave %s", r.Digest, d)
		}
		// Without an event logger no record goes to one; with one,
		// FullDet sends a determinant per reception, PartialDet none on
		// the mini-apps (no order-dependent handler: no determinant and
		// no progress record, logging.Config.OrderFree).
		if (!r.Variant.EventLogger && r.EventLogRecords > 0) || (r.Variant.EventLogger && r.Variant.Protocol == "fulldet" && r.EventLogRecords == 0) {
			bad(r, "event logger %v, %d records sent to loggers", r.Variant.EventLogger, r.EventLogRecords)
		}
		if r.Failures == 0 {
			continue
		}
		failed := 0
		for _, e := range r.Events {
			if e.What == "failed" {
				failed++
			}
		}
		if failed != r.Failures {
			bad(r, "%d PE failures reported, %d PEs killed", failed, r.Failures)
		}
		replay := r.Variant.EventLogger || r.Failures <= elFailureBound
		switch {
		case replay && (r.RolledBackTasks != 0 || r.RestoredTasks == 0):
			bad(r, "rolled_back_tasks=%d restored_tasks=%d, want 0 and > 0: a recovery by replay", r.RolledBackTasks, r.RestoredTasks)
		case !replay && r.RolledBackTasks == 0:
			bad(r, "%d failures without an event logger, and no task rolled back", r.Failures)
		}
	}
	return errors.Join(errs...)
}

// EventLoggerMain is `gochare bench eventlog ...`: it runs the
// comparison with the executable exe and writes its outputs. It returns
// the exit status.
func EventLoggerMain(args []string, stdout io.Writer, exe string) (int, error) {
	fs := flag.NewFlagSet("bench eventlog", flag.ContinueOnError)
	fs.SetOutput(stdout)
	cf := addComparisonFlags(fs, "CI preset: the smallest jobs, 1 repetition, 3 PEs killed at once only", "eventlog-results",
		"directory for eventlog.json, eventlog.csv, eventlog-recovery.csv, eventlog.md and the PNG plots", 6, "leanmd,stencil3d,lulesh")
	failures := fs.String("failures", "", "numbers of PEs killed at once in the failure jobs (default 1,2,3; n needs 2n PEs)")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	cfg, err := ELPreset(cf.preset())
	if err != nil {
		return 2, err
	}
	if err := cf.apply(&cfg.JobSet, exe); err != nil {
		return 2, err
	}
	if *failures != "" {
		if cfg.Failures, err = parseInts("--failures", *failures); err != nil {
			return 2, err
		}
	}
	if err := cfg.validate(); err != nil {
		return 2, err
	}
	return runComparison(stdout, cf, "eventlog", cfg.JobSet, cfg.jobs(),
		func(ctx context.Context, p *Progress) (*ELResults, error) { return EvaluateEventLogger(ctx, cfg, p) }, WriteEventLogger)
}

// WriteEventLogger writes every output of res into dir and returns the
// files' paths.
func WriteEventLogger(res *ELResults, dir string) ([]string, error) {
	return writeOutputs(dir, res, []output[*ELResults]{
		{"eventlog.json", writeELJSON},
		{"eventlog.csv", writeELForwardCSV},
		{"eventlog-recovery.csv", writeELRecoveryCSV},
		{"eventlog.md", writeELMarkdown},
		{"eventlog-piggyback.png", plotELPiggyback},
		{"eventlog-overhead.png", plotELOverhead},
		{"eventlog-recovery.png", plotELRecovery},
	})
}

func writeELJSON(w io.Writer, res *ELResults) error {
	out := *res
	out.Forward = slices.Clone(res.Forward)
	for i := range out.Forward {
		s := &out.Forward[i]
		zeroNaN(&s.StepMS, &s.CPUS, &s.Overhead, &s.CPUOverhead, &s.OverheadNoEL, &s.CPUOverheadNoEL, &s.PiggybackedPerStep, &s.EventLogPerStep)
		s.Determinants = finite(s.Determinants)
	}
	out.Recovery = slices.Clone(res.Recovery)
	for i := range out.Recovery {
		s := &out.Recovery[i]
		zeroNaN(&s.RegainedMS, &s.RestoreMS, &s.CatchUpMS)
		s.RestoredTasks, s.RolledBackTasks = finite(s.RestoredTasks), finite(s.RolledBackTasks)
	}
	return writeIndentedJSON(w, &out)
}

func writeELForwardCSV(w io.Writer, res *ELResults) error {
	rows := [][]string{{"app", "protocol", "event_logger", "runs", "failed", "step_ms_median", "cpu_s_median",
		"overhead_median", "cpu_overhead_median", "cpu_overhead_min", "cpu_overhead_max", "overhead_no_el_median", "cpu_overhead_no_el_median",
		"cpu_overhead_no_el_min", "cpu_overhead_no_el_max", "piggybacked_bytes_per_step", "piggyback_share", "event_log_bytes_per_step", "determinants"}}
	for _, s := range res.Forward {
		rows = append(rows, []string{s.App, s.Protocol, strconv.FormatBool(s.EventLogger), strconv.Itoa(s.Runs), strconv.Itoa(s.Failed),
			g(s.StepMS.Median), g(s.CPUS.Median), g(s.Overhead.Median), g(s.CPUOverhead.Median), g(s.CPUOverhead.Min), g(s.CPUOverhead.Max),
			g(s.OverheadNoEL.Median), g(s.CPUOverheadNoEL.Median), g(s.CPUOverheadNoEL.Min), g(s.CPUOverheadNoEL.Max),
			g(s.PiggybackedPerStep.Median), g(s.PiggybackShare), g(s.EventLogPerStep.Median), g(s.Determinants)})
	}
	return writeCSV(w, rows)
}

func writeELRecoveryCSV(w io.Writer, res *ELResults) error {
	rows := [][]string{{"app", "protocol", "event_logger", "failures", "killed_pes", "runs", "failed", "regained_ms_median", "regained_ms_min", "regained_ms_max",
		"restore_ms_median", "catch_up_ms_median", "restored_tasks", "rolled_back_tasks", "rolled_back_jobs"}}
	for _, s := range res.Recovery {
		rows = append(rows, []string{s.App, s.Protocol, strconv.FormatBool(s.EventLogger), strconv.Itoa(s.Failures), intList(killedPEs(s.Failures)),
			strconv.Itoa(s.Runs), strconv.Itoa(s.Failed), g(s.RegainedMS.Median), g(s.RegainedMS.Min), g(s.RegainedMS.Max),
			g(s.RestoreMS.Median), g(s.CatchUpMS.Median), g(s.RestoredTasks), g(s.RolledBackTasks), strconv.Itoa(s.RolledBack)})
	}
	return writeCSV(w, rows)
}

func writeELMarkdown(w io.Writer, res *ELResults) error {
	var b strings.Builder
	cfg := res.Config
	fmt.Fprintf(&b, "Preset `%s`: %d PE processes per job, %d repetition(s); %d CPUs, load average at start %s, at the end %s; started %s.\n\n",
		cfg.Preset, cfg.PEs, cfg.Reps, res.Host.CPUs, res.Host.LoadAvg, res.Host.LoadAvgEnd, res.Started.Format(time.RFC3339))
	b.WriteString("| app | configuration |\n|---|---|\n")
	for _, a := range cfg.Apps {
		fmt.Fprintf(&b, "| %s | `%s`, checkpoint every %d steps, PEs killed at step %d |\n", a.Name, strings.Join(a.Args, " "), a.CheckpointEvery, a.KillStep)
	}
	failed := failedJobs(res.Runs, func(r ELRun) (string, Run) { return r.ELCase.String(), r.Run })
	fmt.Fprintf(&b, "\n%d jobs, %d finished, %d failed.\n", len(res.Runs), len(res.Runs)-len(failed), len(failed))

	b.WriteString("\n### Forward path (no failure)\n\n")
	b.WriteString("Median (min – max) over repetitions. +EL: `--loggers 1 --event-logger`. CPU: user + system time of the whole job (launcher, PEs, logger). " +
		"Overheads are paired by repetition: the job's time per step (wall) or CPU time over none's, and over the same protocol's without the event logger. " +
		"Piggybacked: the records that rode on messages; to the logger: the records the PEs sent to the event logger.\n\n")
	b.WriteString("| app | variant | ms/step | CPU s | wall overhead vs none | CPU overhead vs none | wall overhead vs no EL | CPU overhead vs no EL | piggybacked B/step | to the logger B/step | determinants |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range res.Forward {
		over, cpuOver, noEL, cpuNoEL := pct(s.Overhead), pct(s.CPUOverhead), "–", "–"
		if s.Protocol == "none" {
			over, cpuOver = "–", "–"
		}
		piggyback := bytesStr(s.PiggybackedPerStep.Median)
		if s.EventLogger {
			noEL, cpuNoEL = pct(s.OverheadNoEL), pct(s.CPUOverheadNoEL)
			if s.PiggybackShare > 0 {
				piggyback += fmt.Sprintf(" (%.0f %% of %s's)", 100*s.PiggybackShare, s.Protocol)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n", s.App, s.ELVariant, rng(s.StepMS, "%.2f"), rng(s.CPUS, "%.2f"),
			over, cpuOver, noEL, cpuNoEL, piggyback, bytesStr(s.EventLogPerStep.Median), s.Determinants)
	}
	b.WriteString("\n### Recovery (PEs killed at the same step, no two of them buddies)\n\n")
	fmt.Fprintf(&b, "Recovery: failure → every task offered again the step the job had reached (restore + catch-up), median (min – max). "+
		"Without the event logger up to %d failures between checkpoints are recovered by replay and more roll every task back to the checkpoint; "+
		"with it, replay. Rolled back: jobs of the row in which every task went back to the checkpoint.\n\n", elFailureBound)
	b.WriteString("| app | variant | PEs killed | recovery ms | restore ms | catch-up ms | restored tasks | rolled-back tasks | recovered by |\n" +
		"|---|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, s := range res.Recovery {
		how := "replay"
		switch {
		case s.Runs == s.Failed:
			how = "–"
		case s.RolledBack == s.Runs-s.Failed:
			how = "rollback"
		case s.RolledBack > 0:
			how = fmt.Sprintf("rollback in %d of %d", s.RolledBack, s.Runs-s.Failed)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.0f | %.0f | %s |\n", s.App, s.ELVariant, intList(killedPEs(s.Failures)), rng(s.RegainedMS, "%.0f"),
			rng(s.RestoreMS, "%.0f"), rng(s.CatchUpMS, "%.0f"), s.RestoredTasks, s.RolledBackTasks, how)
	}
	writeFailedJobs(&b, failed)
	_, err := io.WriteString(w, b.String())
	return err
}

// elColor is a variant's colour: its protocol's, darker with the event
// logger.
func elColor(v ELVariant) color.Color {
	c := protocolColors[v.Protocol]
	if v.EventLogger {
		return darker(c)
	}
	return c
}

// elBars adds to p a bar per application (groups) and variant of vs,
// valued by value of the variant's summary.
func elBars(p *plot.Plot, res *ELResults, vs []ELVariant, width vg.Length, value func(ELForward) float64) error {
	var series []barSeries
	for _, v := range vs {
		vals := make(plotter.Values, len(res.Config.Apps))
		for j, a := range res.Config.Apps {
			for _, s := range res.Forward {
				if s.App == a.Name && s.ELVariant == v {
					vals[j] = finite(value(s))
				}
			}
		}
		series = append(series, barSeries{v.String(), elColor(v), vals})
	}
	if err := addBars(p, width, series); err != nil {
		return err
	}
	var names []string
	for _, a := range res.Config.Apps {
		names = append(names, a.Name)
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.NominalX(names...)
	return nil
}

// plotELPiggyback draws the piggybacked bytes per step per application
// and variant.
func plotELPiggyback(w io.Writer, res *ELResults) error {
	p := plot.New()
	p.Title.Text = "Records piggybacked on messages, per step (median)"
	p.Y.Label.Text = "KiB per step"
	if err := elBars(p, res, elVariants[1:], vg.Points(16), func(s ELForward) float64 { return s.PiggybackedPerStep.Median / 1024 }); err != nil {
		return err
	}
	p.Y.Min = 0
	p.Y.Max *= 1.35 // room for the legend
	return savePNG(w, p, 6*vg.Inch, 3.4*vg.Inch)
}

// plotELOverhead draws the whole job's CPU overhead against none per
// application and variant.
func plotELOverhead(w io.Writer, res *ELResults) error {
	p := plot.New()
	p.Title.Text = "Forward path: whole-job CPU time vs none (median of paired ratios)"
	p.Y.Label.Text = "overhead (%)"
	if err := elBars(p, res, elVariants[1:], vg.Points(16), func(s ELForward) float64 { return 100 * s.CPUOverhead.Median }); err != nil {
		return err
	}
	p.Y.Max = math.Max(p.Y.Max*1.35, 5)
	return savePNG(w, p, 6*vg.Inch, 3.4*vg.Inch)
}

// plotELRecovery draws the recovery time per application and number of
// PEs killed (groups) and variant (bars).
func plotELRecovery(w io.Writer, res *ELResults) error {
	p := plot.New()
	p.Title.Text = "Recovery: failure → progress at the failure regained (median)"
	p.Y.Label.Text = "ms"
	var groups []string
	for _, a := range res.Config.Apps {
		for _, n := range res.Config.Failures {
			groups = append(groups, fmt.Sprintf("%s ×%d", a.Name, n))
		}
	}
	var series []barSeries
	for _, v := range elVariants[1:] {
		vals := make(plotter.Values, len(groups))
		j := 0
		for _, a := range res.Config.Apps {
			for _, n := range res.Config.Failures {
				for _, s := range res.Recovery {
					if s.App == a.Name && s.ELVariant == v && s.Failures == n {
						vals[j] = finite(s.RegainedMS.Median)
					}
				}
				j++
			}
		}
		series = append(series, barSeries{v.String(), elColor(v), vals})
	}
	if err := addBars(p, vg.Points(9), series); err != nil {
		return err
	}
	p.Add(plotter.NewGrid())
	p.Y.Min = 0
	p.Y.Max *= 1.35
	p.Legend.Top = true
	p.NominalX(groups...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return savePNG(w, p, 8*vg.Inch, 3.8*vg.Inch)
}
