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
)

// The log-quota comparison (`gochare bench quota`): per application, the
// forward path with --log-quota at fractions of the log's unbounded
// high-water mark against the same job with its log unbounded, with one
// and with two loggers, and the recovery after a PE killed, with the
// bytes dumped to the loggers and fetched back. A first job per
// application runs unbounded to find the high-water mark (the largest
// per-PE log_peak_bytes); every job starts the loggers, so that a
// difference is the dumping alone. The forward jobs of a repetition run
// in an order rotated every repetition, and each quota's overhead is its
// time per step over the unbounded job's of the same repetition and
// loggers (paired A/B on a loaded machine).

// AppJob is one application's job in the quota and event-logger
// comparisons.
type AppJob struct {
	Name string   `json:"name"`
	Args []string `json:"args"` // application flags, the step count included
	// CheckpointEvery is --checkpoint-every; the failure jobs kill PEs at
	// KillStep.
	CheckpointEvery int `json:"checkpoint_every"`
	KillStep        int `json:"kill_step"`
}

// JobSet is what the configurations of the quota and event-logger
// comparisons share: the jobs' applications, how many PEs they run on,
// how often each runs, and how long one may take.
type JobSet struct {
	Preset  string   `json:"preset"`
	Exe     string   `json:"-"`
	PEs     int      `json:"pes"`
	Reps    int      `json:"reps"`
	Apps    []AppJob `json:"apps"`
	Timeout Duration `json:"timeout"`
}

func (c JobSet) validate() error {
	switch {
	case c.Exe == "":
		return errors.New("evaluation: no gochare executable")
	case c.Reps < 1:
		return fmt.Errorf("evaluation: %d repetitions: want at least 1", c.Reps)
	case len(c.Apps) == 0:
		return errors.New("evaluation: no application")
	}
	return nil
}

// comparisonFlags are the flags of every comparison command, read into
// its JobSet by apply.
type comparisonFlags struct {
	tiny      *bool
	out, apps *string
	reps, pes *int
}

func addComparisonFlags(fs *flag.FlagSet, tinyHelp, out, outHelp string, pes int, apps string) comparisonFlags {
	return comparisonFlags{
		tiny: fs.Bool("tiny", false, tinyHelp),
		out:  fs.String("out", out, outHelp),
		reps: fs.Int("reps", 0, "repetitions of every job (default: the preset's)"),
		pes:  fs.Int("pes", 0, fmt.Sprintf("PE processes per job (default %d)", pes)),
		apps: fs.String("apps", "", fmt.Sprintf("comma-separated applications (default: %s)", apps)),
	}
}

// preset is the preset the flags choose: tiny or quick.
func (f comparisonFlags) preset() string {
	if *f.tiny {
		return "tiny"
	}
	return "quick"
}

// apply sets the executable and what the flags change in set.
func (f comparisonFlags) apply(set *JobSet, exe string) error {
	set.Exe = exe
	if *f.reps > 0 {
		set.Reps = *f.reps
	}
	if *f.pes > 0 {
		set.PEs = *f.pes
	}
	var err error
	set.Apps, err = pickApps(set.Apps, *f.apps, func(a AppJob) string { return a.Name })
	return err
}

// runComparison announces and runs the comparison name of set's jobs.
func runComparison[R interface{ Check() error }](stdout io.Writer, f comparisonFlags, name string, set JobSet, jobs int,
	evaluate func(context.Context, *Progress) (R, error), write func(R, string) ([]string, error)) (int, error) {
	fmt.Fprintf(stdout, "gochare bench %s: preset %s, %d PEs, %d repetitions, %d jobs, results in %s\n", name, set.Preset, set.PEs, set.Reps, jobs, *f.out)
	return runBench(stdout, *f.out, evaluate, write)
}

// QuotaConfig is a whole quota comparison.
type QuotaConfig struct {
	JobSet
	// Fractions are the quotas in percent of the unbounded high-water
	// mark; Loggers the logger counts of the forward jobs (the failure
	// jobs use the first).
	Fractions []int `json:"fractions"`
	Loggers   []int `json:"loggers"`
}

// QuotaPreset returns the named configuration: tiny (the tests) or quick
// (the default: LeanMD as docs/benchmarks.md measures its log, and
// stencil3d).
func QuotaPreset(name string) (QuotaConfig, error) {
	c := QuotaConfig{JobSet: JobSet{Preset: name, PEs: 2, Reps: 3, Timeout: Duration(3 * time.Minute)}, Fractions: []int{100, 50, 10}, Loggers: []int{1, 2}}
	switch name {
	case "tiny":
		c.Reps = 1
		c.Fractions = []int{100, 25}
		c.Loggers = []int{1}
		c.Timeout = Duration(time.Minute)
		c.Apps = []AppJob{
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "20", "--steps", "9"}, CheckpointEvery: 3, KillStep: 4},
			{Name: "stencil3d", Args: []string{"--grid", "32,32,32", "--chunk", "8,8,8", "--iterations", "12"}, CheckpointEvery: 4, KillStep: 6},
		}
	case "quick":
		c.Apps = []AppJob{
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--steps", "30"}, CheckpointEvery: 10, KillStep: 15},
			{Name: "stencil3d", Args: []string{"--grid", "128,128,128", "--chunk", "32,32,32", "--iterations", "60"}, CheckpointEvery: 20, KillStep: 30},
		}
	default:
		return c, fmt.Errorf("evaluation: unknown quota preset %q (tiny or quick)", name)
	}
	return c, nil
}

// QuotaCase is one job of the comparison: Fraction 0 is the unbounded
// log.
type QuotaCase struct {
	App      string `json:"app"`
	Fraction int    `json:"fraction"`
	Loggers  int    `json:"loggers"`
	Failure  bool   `json:"failure"`
	// Calibration marks the job that finds the high-water mark.
	Calibration bool `json:"calibration"`
	Rep         int  `json:"rep"`
}

func (k QuotaCase) String() string {
	q := "unbounded"
	if k.Fraction > 0 {
		q = fmt.Sprintf("quota %d %%", k.Fraction)
	}
	s := fmt.Sprintf("%s %s, %d logger(s)", k.App, q, k.Loggers)
	switch {
	case k.Calibration:
		return s + ", high-water mark"
	case k.Failure:
		s += ", PE 1 killed"
	}
	return fmt.Sprintf("%s, rep %d", s, k.Rep+1)
}

// QuotaRun is the outcome of one job.
type QuotaRun struct {
	QuotaCase
	Run
	// Quota is --log-quota in bytes (0: unbounded).
	Quota int64 `json:"quota"`
}

// QuotaSummary is one application, logger count and quota.
type QuotaSummary struct {
	App      string `json:"app"`
	Loggers  int    `json:"loggers"`
	Fraction int    `json:"fraction"`
	Quota    int64  `json:"quota"`
	// StepMS is the time per step; Overhead the ratio to the unbounded
	// job's of the same repetition, minus 1 (Median over repetitions).
	StepMS   Stat `json:"step_ms"`
	Overhead Stat `json:"overhead"`
	// DumpedBytes, BlockedMS: summed over the PEs, per job; PeakBytes
	// the largest per-PE high-water mark of the log's memory.
	DumpedBytes Stat  `json:"dumped_bytes"`
	BlockedMS   Stat  `json:"blocked_ms"`
	PeakBytes   int64 `json:"peak_bytes"`
	// RecoveryMS (failure → progress at the failure regained) and
	// FetchedBytes (log entries the survivors fetched back from the
	// loggers), for the logger count of the failure jobs.
	RecoveryMS   Stat `json:"recovery_ms"`
	FetchedBytes Stat `json:"fetched_bytes"`
}

// QuotaResults is everything a quota comparison measured.
type QuotaResults struct {
	Config    QuotaConfig      `json:"config"`
	Started   time.Time        `json:"started"`
	Host      Host             `json:"host"`
	HighWater map[string]int64 `json:"high_water"`
	Runs      []QuotaRun       `json:"runs"`
	Summary   []QuotaSummary   `json:"summary"`
}

func (c QuotaConfig) validate() error {
	if err := c.JobSet.validate(); err != nil {
		return err
	}
	switch {
	case c.PEs < 2:
		return fmt.Errorf("evaluation: %d PEs: at least 2 are needed (one is killed)", c.PEs)
	case len(c.Loggers) == 0 || len(c.Fractions) == 0:
		return errors.New("evaluation: no logger count or no quota fraction")
	}
	for _, l := range c.Loggers {
		if l < 1 {
			return fmt.Errorf("evaluation: %d loggers: want at least 1", l)
		}
	}
	for _, f := range c.Fractions {
		if f < 1 || f > 100 {
			return fmt.Errorf("evaluation: quota %d %%: want 1 to 100", f)
		}
	}
	return nil
}

// cases returns the jobs of app a for repetition rep, in the order they
// run: the forward ones (per logger count, unbounded then every quota)
// rotated by rep, then the failure ones rotated the same way.
func (c QuotaConfig) cases(a AppJob, rep int) []QuotaCase {
	var fwd, fail []QuotaCase
	for _, l := range c.Loggers {
		fwd = append(fwd, QuotaCase{App: a.Name, Loggers: l, Rep: rep})
		for _, f := range c.Fractions {
			fwd = append(fwd, QuotaCase{App: a.Name, Fraction: f, Loggers: l, Rep: rep})
		}
	}
	fail = append(fail, QuotaCase{App: a.Name, Loggers: c.Loggers[0], Failure: true, Rep: rep})
	for _, f := range c.Fractions {
		fail = append(fail, QuotaCase{App: a.Name, Fraction: f, Loggers: c.Loggers[0], Failure: true, Rep: rep})
	}
	return append(rotate(fwd, rep), rotate(fail, rep)...)
}

// jobs is the number of jobs of the comparison.
func (c QuotaConfig) jobs() int {
	n := 0
	for _, a := range c.Apps {
		n += 1 + c.Reps*len(c.cases(a, 0))
	}
	return n
}

// quotaBytes is the quota of fraction percent of highWater.
func quotaBytes(highWater int64, fraction int) int64 {
	return max(highWater*int64(fraction)/100, 1)
}

// args are the `gochare` arguments of k with a quota of quota bytes (0:
// none).
func (c QuotaConfig) args(a AppJob, k QuotaCase, quota int64) []string {
	args := []string{"run", a.Name, "--pes", strconv.Itoa(c.PEs), "--loggers", strconv.Itoa(k.Loggers),
		"--checkpoint-every", strconv.Itoa(a.CheckpointEvery), "--json"}
	if quota > 0 {
		args = append(args, "--log-quota", strconv.FormatInt(quota, 10))
	}
	if k.Failure {
		args = append(args, "--kill", fmt.Sprintf("pe=1,at=step:%d", a.KillStep))
	}
	return append(args, a.Args...)
}

// EvaluateQuota runs every job of cfg and summarizes them; a job that
// fails is recorded (OK false) and the comparison goes on, except the
// calibration job, without which an application's quotas are unknown.
func EvaluateQuota(ctx context.Context, cfg QuotaConfig, progress *Progress) (*QuotaResults, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &QuotaResults{Config: cfg, Started: time.Now().UTC(), Host: hostInfo(), HighWater: map[string]int64{}}
	progress.start(cfg.jobs())
	run := func(a AppJob, k QuotaCase, quota int64) QuotaRun {
		r := QuotaRun{QuotaCase: k, Quota: quota}
		c := Case{App: a.Name, Protocol: "partialdet", Failure: k.Failure, Rep: k.Rep}
		r.Run = execute(ctx, cfg.Exe, c, cfg.args(a, k, quota), time.Duration(cfg.Timeout))
		if r.OK && k.Failure && r.RestoredTasks == 0 {
			r.OK, r.Error = false, "PE 1 was killed and no task was restored"
		}
		res.Runs = append(res.Runs, r)
		progress.doneQuota(r)
		return r
	}
	for _, a := range cfg.Apps {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("evaluation: interrupted: %w", err)
		}
		cal := run(a, QuotaCase{App: a.Name, Loggers: cfg.Loggers[0], Calibration: true}, 0)
		if !cal.OK || cal.LogPeakBytes <= 0 {
			return res, fmt.Errorf("evaluation: %s: the unbounded job gave no high-water mark: %s", a.Name, cal.Error)
		}
		res.HighWater[a.Name] = cal.LogPeakBytes
	}
	for rep := range cfg.Reps {
		for _, a := range cfg.Apps {
			for _, k := range cfg.cases(a, rep) {
				if err := ctx.Err(); err != nil {
					return res, fmt.Errorf("evaluation: interrupted: %w", err)
				}
				var quota int64
				if k.Fraction > 0 {
					quota = quotaBytes(res.HighWater[a.Name], k.Fraction)
				}
				run(a, k, quota)
			}
		}
	}
	progress.finish()
	res.Summary = summarizeQuota(cfg, res)
	return res, nil
}

func summarizeQuota(cfg QuotaConfig, res *QuotaResults) []QuotaSummary {
	type fkey struct {
		app              string
		loggers, rep     int
		fraction         int
		failure, calibre bool
	}
	byKey := map[fkey]QuotaRun{}
	for _, r := range res.Runs {
		if r.OK {
			byKey[fkey{r.App, r.Loggers, r.QuotaCase.Rep, r.Fraction, r.QuotaCase.Failure, r.Calibration}] = r
		}
	}
	var out []QuotaSummary
	for _, a := range cfg.Apps {
		for _, l := range cfg.Loggers {
			for _, f := range append([]int{0}, cfg.Fractions...) {
				s := QuotaSummary{App: a.Name, Loggers: l, Fraction: f}
				if f > 0 {
					s.Quota = quotaBytes(res.HighWater[a.Name], f)
				}
				var step, over, dumped, blocked, rec, fetched []float64
				for rep := range cfg.Reps {
					r, ok := byKey[fkey{a.Name, l, rep, f, false, false}]
					if ok {
						step = append(step, r.StepMS)
						dumped = append(dumped, float64(r.LogDumpedBytes))
						blocked = append(blocked, float64(r.LogBlockedMS))
						s.PeakBytes = max(s.PeakBytes, r.LogPeakBytes)
						if base, ok := byKey[fkey{a.Name, l, rep, 0, false, false}]; ok && base.StepMS > 0 {
							over = append(over, r.StepMS/base.StepMS-1)
						}
					}
					if fr, ok := byKey[fkey{a.Name, l, rep, f, true, false}]; ok {
						rec = append(rec, fr.RegainedMS)
						fetched = append(fetched, float64(fr.LogFetchedBytes))
					}
				}
				s.StepMS, s.Overhead, s.DumpedBytes, s.BlockedMS = stat(step), stat(over), stat(dumped), stat(blocked)
				s.RecoveryMS, s.FetchedBytes = stat(rec), stat(fetched)
				out = append(out, s)
			}
		}
	}
	return out
}

// Check verifies what the quota promises: every job finished with its
// application's failure-free result, and no PE's log went past its
// quota.
func (res *QuotaResults) Check() error {
	var errs []error
	digest := map[string]string{}
	for _, r := range res.Runs {
		if r.Calibration && r.OK {
			digest[r.App] = r.Digest
		}
	}
	for _, r := range res.Runs {
		switch {
		case !r.OK:
			errs = append(errs, fmt.Errorf("%s: %s", r.QuotaCase, strings.SplitN(r.Error, "\n", 2)[0]))
		case r.Digest != digest[r.App]:
			errs = append(errs, fmt.Errorf("%s: digest %s, the unbounded job's is %s", r.QuotaCase, r.Digest, digest[r.App]))
		case r.Quota > 0 && r.LogPeakBytes > r.Quota:
			errs = append(errs, fmt.Errorf("%s: a PE's log reached %d bytes, over the quota of %d", r.QuotaCase, r.LogPeakBytes, r.Quota))
		}
	}
	return errors.Join(errs...)
}

func (p *Progress) doneQuota(r QuotaRun) {
	what := fmt.Sprintf("%.2f ms/step, dumped %s, blocked %d ms", r.StepMS, bytesStr(float64(r.LogDumpedBytes)), r.LogBlockedMS)
	if r.QuotaCase.Failure {
		what += fmt.Sprintf(", recovery %.0f ms", r.RegainedMS)
	}
	p.finished(r.QuotaCase.String(), what, r.Run)
}

// QuotaMain is `gochare bench quota ...`: it runs the comparison with
// the executable exe and writes its outputs. It returns the exit status.
func QuotaMain(args []string, stdout io.Writer, exe string) (int, error) {
	fs := flag.NewFlagSet("bench quota", flag.ContinueOnError)
	fs.SetOutput(stdout)
	cf := addComparisonFlags(fs, "CI preset: the smallest jobs, 1 repetition, quotas of 100 and 25 %, one logger",
		"quota-results", "directory for quota.json, quota.csv, quota.md and quota-overhead.png", 2, "leanmd,stencil3d")
	fractions := fs.String("fractions", "", "quotas in percent of the unbounded high-water mark (default 100,50,10)")
	loggers := fs.String("loggers", "", "logger counts of the forward jobs (default 1,2)")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	cfg, err := QuotaPreset(cf.preset())
	if err != nil {
		return 2, err
	}
	if err := cf.apply(&cfg.JobSet, exe); err != nil {
		return 2, err
	}
	for _, o := range []struct {
		flag string
		val  string
		dst  *[]int
	}{{"--fractions", *fractions, &cfg.Fractions}, {"--loggers", *loggers, &cfg.Loggers}} {
		if o.val == "" {
			continue
		}
		if *o.dst, err = parseInts(o.flag, o.val); err != nil {
			return 2, err
		}
	}
	if err := cfg.validate(); err != nil {
		return 2, err
	}
	return runComparison(stdout, cf, "quota", cfg.JobSet, cfg.jobs(),
		func(ctx context.Context, p *Progress) (*QuotaResults, error) { return EvaluateQuota(ctx, cfg, p) }, WriteQuota)
}

// WriteQuota writes every output of res into dir and returns the files'
// paths.
func WriteQuota(res *QuotaResults, dir string) ([]string, error) {
	return writeOutputs(dir, res, []output[*QuotaResults]{
		{"quota.json", writeQuotaJSON},
		{"quota.csv", writeQuotaCSV},
		{"quota.md", writeQuotaMarkdown},
		{"quota-overhead.png", plotQuotaOverhead},
	})
}

func writeQuotaJSON(w io.Writer, res *QuotaResults) error {
	out := *res
	out.Summary = slices.Clone(res.Summary)
	for i := range out.Summary {
		s := &out.Summary[i]
		zeroNaN(&s.StepMS, &s.Overhead, &s.DumpedBytes, &s.BlockedMS, &s.RecoveryMS, &s.FetchedBytes)
	}
	return writeIndentedJSON(w, &out)
}

// zeroNaN sets the NaN figures of statistics of no run, which JSON
// cannot hold, to 0 (their N says there was no run).
func zeroNaN(stats ...*Stat) {
	for _, s := range stats {
		for _, f := range []*float64{&s.Median, &s.Min, &s.Max} {
			if math.IsNaN(*f) || math.IsInf(*f, 0) {
				*f = 0
			}
		}
	}
}

func colorRGB(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 255} }

func fractionName(f int) string {
	if f == 0 {
		return "unbounded"
	}
	return fmt.Sprintf("%d %%", f)
}

func writeQuotaCSV(w io.Writer, res *QuotaResults) error {
	rows := [][]string{{"app", "loggers", "fraction", "quota_bytes", "step_ms_median", "overhead_median", "overhead_min", "overhead_max",
		"dumped_bytes_median", "blocked_ms_median", "peak_bytes", "recovery_ms_median", "fetched_bytes_median"}}
	for _, s := range res.Summary {
		rows = append(rows, []string{s.App, strconv.Itoa(s.Loggers), strconv.Itoa(s.Fraction), i64(s.Quota), g(s.StepMS.Median),
			g(s.Overhead.Median), g(s.Overhead.Min), g(s.Overhead.Max), g(s.DumpedBytes.Median), g(s.BlockedMS.Median), i64(s.PeakBytes),
			g(s.RecoveryMS.Median), g(s.FetchedBytes.Median)})
	}
	return writeCSV(w, rows)
}

func writeQuotaMarkdown(w io.Writer, res *QuotaResults) error {
	var b strings.Builder
	cfg := res.Config
	fmt.Fprintf(&b, "Preset `%s`: %d PE processes per job, partialdet, %d repetition(s); %d CPUs, load average at start %s; started %s.\n\n",
		cfg.Preset, cfg.PEs, cfg.Reps, res.Host.CPUs, res.Host.LoadAvg, res.Started.Format(time.RFC3339))
	b.WriteString("| app | configuration | unbounded high-water mark (largest PE) |\n|---|---|---:|\n")
	for _, a := range cfg.Apps {
		fmt.Fprintf(&b, "| %s | `%s`, checkpoint every %d steps, PE 1 killed at step %d | %d B (%s) |\n", a.Name, strings.Join(a.Args, " "),
			a.CheckpointEvery, a.KillStep, res.HighWater[a.Name], bytesStr(float64(res.HighWater[a.Name])))
	}
	failed := failedJobs(res.Runs, func(r QuotaRun) (string, Run) { return r.QuotaCase.String(), r.Run })
	fmt.Fprintf(&b, "\n%d jobs, %d finished, %d failed.\n\n", len(res.Runs), len(res.Runs)-len(failed), len(failed))
	b.WriteString("Median (min – max) over repetitions. Overhead: time per step over the unbounded job's with the same loggers in the same repetition. " +
		"Dumped, blocked: summed over the PEs. Peak: the largest PE's log memory (entry bytes). " +
		fmt.Sprintf("Recovery (with %d logger(s)): PE 1 killed → progress at the failure regained; fetched: the log entries the survivors fetched back from the loggers.\n\n", cfg.Loggers[0]))
	b.WriteString("| app | loggers | quota | ms/step | overhead | dumped | blocked ms | peak | recovery ms | fetched |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range res.Summary {
		q := fractionName(s.Fraction)
		if s.Quota > 0 {
			q += " (" + bytesStr(float64(s.Quota)) + ")"
		}
		over, rec, fetched := pct(s.Overhead), "–", "–"
		if s.Fraction == 0 {
			over = "–"
		}
		if s.Loggers == cfg.Loggers[0] {
			rec, fetched = rng(s.RecoveryMS, "%.0f"), bytesStr(s.FetchedBytes.Median)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.App, s.Loggers, q, rng(s.StepMS, "%.2f"), over,
			bytesStr(s.DumpedBytes.Median), rng(s.BlockedMS, "%.0f"), bytesStr(float64(s.PeakBytes)), rec, fetched)
	}
	writeFailedJobs(&b, failed)
	_, err := io.WriteString(w, b.String())
	return err
}

// plotQuotaOverhead draws the forward overhead over the unbounded log, in
// percent, per application and logger count (groups) and quota (bars).
func plotQuotaOverhead(w io.Writer, res *QuotaResults) error {
	p := plot.New()
	p.Title.Text = "Log quota: forward overhead vs the unbounded log (median)"
	p.Y.Label.Text = "overhead (%)"
	var groups []string
	for _, a := range res.Config.Apps {
		for _, l := range res.Config.Loggers {
			groups = append(groups, fmt.Sprintf("%s, %d logger(s)", a.Name, l))
		}
	}
	fr := res.Config.Fractions
	var series []barSeries
	for i, f := range fr {
		vals := make(plotter.Values, len(groups))
		j := 0
		for _, a := range res.Config.Apps {
			for _, l := range res.Config.Loggers {
				for _, s := range res.Summary {
					if s.App == a.Name && s.Loggers == l && s.Fraction == f {
						vals[j] = 100 * finite(s.Overhead.Median)
					}
				}
				j++
			}
		}
		shade := uint8(60 + 150*i/max(len(fr)-1, 1))
		series = append(series, barSeries{fmt.Sprintf("quota %d %%", f), colorRGB(40, shade, 200-shade/2), vals})
	}
	if err := addBars(p, vg.Points(18), series); err != nil {
		return err
	}
	p.Add(plotter.NewGrid())
	p.Y.Max = math.Max(p.Y.Max*1.3, 5)
	p.Legend.Top = true
	p.NominalX(groups...)
	return savePNG(w, p, 6*vg.Inch, 3.2*vg.Inch)
}
