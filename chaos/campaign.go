package chaos

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Baseline is the failure-free run of one configuration (Run.Key).
type Baseline struct {
	Key     string  `json:"key"`
	Command string  `json:"command"`
	Class   Class   `json:"class"` // Right when it ended with status 0 and a digest
	Detail  string  `json:"detail,omitempty"`
	Digest  string  `json:"digest"`
	Seconds float64 `json:"seconds"`
	// RunSeconds is the time from the start of its PEs to its end, on
	// which failures at a moment are placed.
	RunSeconds float64 `json:"run_seconds"`
	// LogPeakBytes is the largest PE's sender log high-water mark (the
	// job stats' largest_log_peak_bytes), of which a quota is a fraction.
	LogPeakBytes int64  `json:"log_peak_bytes,omitempty"`
	Log          string `json:"log,omitempty"`
}

// Record is the outcome of one run.
type Record struct {
	Run
	// Command is the job's gochare command line; the failures in
	// Injected were done by the campaign on top of it.
	Command string `json:"command"`
	// Replay is the gochare chaos command that runs this run alone.
	Replay string `json:"replay"`
	Class  Class  `json:"class"`
	Detail string `json:"detail,omitempty"`
	// Designed names the documented case an Error is (DesignedError): the
	// job stopped saying why; "" for an error that is none.
	Designed string  `json:"designed,omitempty"`
	Seconds  float64 `json:"seconds"`
	Digest   string  `json:"digest"`
	Expected string  `json:"expected"`
	ExitCode int     `json:"exit_code"`
	// Injected lists what the campaign did to the job; Missed the planned
	// failures that did not happen (the job ended first, or a PE never
	// reached its step).
	Injected []string `json:"injected,omitempty"`
	Missed   []string `json:"missed,omitempty"`
	// FailureNotices counts the launcher's "PE failed" lines (before the
	// deadline, for a hang).
	FailureNotices int `json:"failure_notices"`
	// EarlyFailureNotices counts the launcher's notices of PEs that
	// failed before the job began (started again, or left out).
	EarlyFailureNotices int `json:"early_failure_notices,omitempty"`
	// LoggerFailureNotices counts the launcher's notices of a logger's
	// failure (the job goes on).
	LoggerFailureNotices int `json:"logger_failure_notices,omitempty"`
	// Note is an observation that explains a non-success.
	Note string `json:"note,omitempty"`
	// Log is the file with the job's whole output (non-successes, with
	// --out).
	Log string `json:"log,omitempty"`
}

// Missing reports a run where some planned failure did not happen.
func (r Record) Missing() bool { return len(r.Missed) > 0 }

// Host describes the machine a campaign ran on.
type Host struct {
	Name         string `json:"name"`
	CPUs         int    `json:"cpus"`
	LoadAvgStart string `json:"loadavg_start,omitempty"`
	LoadAvgEnd   string `json:"loadavg_end,omitempty"`
}

// Result is a campaign, as far as it went.
type Result struct {
	Config      Config     `json:"config"`
	Command     string     `json:"command"`
	Started     time.Time  `json:"started"`
	Finished    time.Time  `json:"finished"`
	Host        Host       `json:"host"`
	Planned     int        `json:"planned"`
	Interrupted bool       `json:"interrupted"`
	Baselines   []Baseline `json:"baselines"`
	Records     []Record   `json:"records"`
}

// Counts tallies records by class.
type Counts struct {
	Runs, Right, Wrong, Error, Hang, Missing int
}

func (c *Counts) add(r Record) {
	c.Runs++
	switch r.Class {
	case Right:
		c.Right++
	case Wrong:
		c.Wrong++
	case Error:
		c.Error++
	case Hang:
		c.Hang++
	}
	if r.Missing() {
		c.Missing++
	}
}

// Totals tallies every record.
func (res *Result) Totals() Counts {
	var c Counts
	for _, r := range res.Records {
		c.add(r)
	}
	return c
}

// Options are how a campaign runs, apart from what it runs.
type Options struct {
	// Exe is the gochare executable; Program the name commands are
	// printed with.
	Exe     string
	Program string
	// Indices are the runs to do (nil: 0..Config.Runs-1).
	Indices []int
	// Out is the directory the campaign writes as it goes ("" none).
	Out string
	// Command is the campaign's own command line, for the record.
	Command string
	// Dump: on a hang, ask for goroutine dumps before killing.
	Dump     bool
	Progress *Progress
}

// Execute runs the campaign: each run after the failure-free run of its
// configuration (done once per configuration). It records every run, in
// opts.Out as it goes, and stops early only when ctx is done (the result
// then says Interrupted).
func Execute(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Exe == "" {
		return nil, fmt.Errorf("%w: no gochare executable", ErrConfig)
	}
	if opts.Program == "" {
		opts.Program = "gochare"
	}
	indices := opts.Indices
	if indices == nil {
		for i := range cfg.Runs {
			indices = append(indices, i)
		}
	}
	res := &Result{Config: cfg, Command: opts.Command, Started: time.Now().UTC(), Planned: len(indices), Host: hostInfo()}
	rec, err := newRecorder(opts.Out, res)
	if err != nil {
		return nil, err
	}
	c := &campaign{cfg: cfg, opts: opts, res: res, rec: rec, baselines: map[string]*Baseline{}}
	opts.Progress.start(len(indices))
	for _, i := range indices {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		run := cfg.Plan(i)
		opts.Progress.begin(run)
		r, ok := c.do(ctx, run)
		if !ok {
			res.Interrupted = true
			break
		}
		res.Records = append(res.Records, r)
		opts.Progress.done(r, res.Totals())
		if err := rec.record(r); err != nil {
			return res, err
		}
	}
	opts.Progress.finish()
	res.Finished = time.Now().UTC()
	res.Host.LoadAvgEnd = loadAvg()
	return res, rec.finish()
}

type campaign struct {
	cfg       Config
	opts      Options
	res       *Result
	rec       *recorder
	baselines map[string]*Baseline
}

// baseline returns the failure-free run of run's configuration, running
// it the first time. ok is false when ctx ended it.
func (c *campaign) baseline(ctx context.Context, run Run) (*Baseline, bool) {
	key := run.Key()
	if b, ok := c.baselines[key]; ok {
		return b, true
	}
	args := c.cfg.BaselineArgs(run)
	b := &Baseline{Key: key, Command: shellJoin(c.opts.Program, args)}
	jr, err := runJob(ctx, jobSpec{Exe: c.opts.Exe, Args: args, Deadline: c.cfg.BaselineTimeout, Dump: c.opts.Dump, Loggers: run.Loggers})
	if err != nil {
		b.Class, b.Detail = Error, err.Error()
	} else {
		if jr.Interrupted {
			return nil, false
		}
		b.Seconds, b.RunSeconds = jr.Wall.Seconds(), jr.RunTime.Seconds()
		b.LogPeakBytes, _ = LogPeakBytes(jr.Stderr)
		digest, derr := Digest(jr.Stdout)
		b.Digest = digest
		switch {
		case jr.TimedOut:
			b.Class, b.Detail = Hang, "no end before the deadline; last line before it: "+lastLine(jr.Stderr[:jr.StderrAtDeadline])
		case jr.ExitCode != 0:
			b.Class, b.Detail = Error, fmt.Sprintf("exit status %d: %s", jr.ExitCode, LastError(jr.Stderr))
		case derr != nil:
			b.Class, b.Detail = Error, derr.Error()
		default:
			b.Class = Right
		}
		if b.Class != Right {
			b.Log = c.rec.log("baseline-"+strings.NewReplacer("/", "_", "=", "").Replace(key), b.Command, nil, jr.Output)
		}
	}
	c.baselines[key] = b
	c.res.Baselines = append(c.res.Baselines, *b)
	c.opts.Progress.baseline(*b)
	c.rec.baseline(*b)
	return b, true
}

// do runs one planned run. ok is false when ctx ended it.
func (c *campaign) do(ctx context.Context, run Run) (Record, bool) {
	r := Record{Run: run, Replay: shellJoin(c.opts.Program, c.cfg.ReplayArgs(run.Index))}
	if run.Setup.Quota() {
		// The quota is a fraction of the unbounded run's high-water mark.
		unbounded, ok := c.baseline(ctx, run.Unbounded())
		if !ok {
			return r, false
		}
		if unbounded.Class != Right || unbounded.LogPeakBytes <= 0 {
			r.Command = shellJoin(c.opts.Program, c.cfg.BaselineArgs(run))
			r.Class, r.Detail = Error, fmt.Sprintf("not run: the failure-free run of %s measured no log high-water mark for the quota (%s %s)", unbounded.Key, unbounded.Class, unbounded.Detail)
			return r, true
		}
		run.LogQuota = max(1, int64(math.Ceil(run.QuotaFraction*float64(unbounded.LogPeakBytes))))
		r.Run = run
	}
	args, injected := c.cfg.Args(run)
	r.Command = shellJoin(c.opts.Program, args)
	base, ok := c.baseline(ctx, run)
	if !ok {
		return r, false
	}
	r.Expected = base.Digest
	if base.Class != Right {
		r.Class, r.Detail = Error, fmt.Sprintf("not run: the failure-free run of %s failed (%s)", base.Key, base.Detail)
		return r, true
	}
	deadline := time.Duration(c.cfg.TimeoutFactor*float64(time.Duration(base.Seconds*float64(time.Second)))) + c.cfg.TimeoutSlack
	if run.Disk {
		dir := c.cfg.DiskDir(run)
		os.RemoveAll(dir)
		defer os.RemoveAll(dir)
	}
	jr, err := runJob(ctx, jobSpec{
		Exe: c.opts.Exe, Args: args, Deadline: deadline, Failures: injected,
		RunTime: time.Duration(base.RunSeconds * float64(time.Second)), Dump: c.opts.Dump, Loggers: run.Loggers,
	})
	if err != nil {
		r.Class, r.Detail = Error, err.Error()
		return r, true
	}
	if jr.Interrupted {
		return r, false
	}
	r.Seconds, r.ExitCode, r.FailureNotices, r.EarlyFailureNotices = jr.Wall.Seconds(), jr.ExitCode, jr.FailureNotices, jr.EarlyFailureNotices
	r.LoggerFailureNotices = jr.LoggerFailureNotices
	r.Injected, r.Missed = jr.Injected, jr.Missed
	r.Class, r.Digest, r.Detail = Classify(jr.Outcome, base.Digest)
	if r.Class == Error {
		r.Designed = DesignedError(r.Detail, run, r.FailureNotices, r.LoggerFailureNotices)
	}
	// The launcher's own kills at a step: did each PE reach its step?
	for _, f := range run.Failures {
		if _, byLauncher := c.cfg.LauncherKills.Spec(f); byLauncher && f.Trigger == AtStep && !slices.Contains(jr.SelfKills, f.PE) {
			r.Missed = append(r.Missed, fmt.Sprintf("%s: the PE never reached the step", f))
		}
	}
	r.Note = note(run, r, jr)
	// A failure that never happened because a line the campaign waits
	// for never came is kept with its whole output too.
	unseen := slices.ContainsFunc(r.Missed, func(m string) bool { return strings.Contains(m, "line never came") })
	if r.Class != Right || unseen {
		r.Log = c.rec.log(fmt.Sprintf("run-%05d", run.Index), r.Command, r.Injected, jr.Output)
	}
	return r, true
}

// note explains a non-success where the record itself can: a failure
// before the job began, a hang with a stopped PE that the launcher never
// declared failed.
func note(run Run, r Record, jr jobResult) string {
	if r.Class == Error && jr.EarlyInjection {
		return "the campaign's failure came before the job began (before the initial checkpoint was committed)"
	}
	if r.Class != Hang {
		return ""
	}
	for _, f := range run.Failures {
		if f.Signal != SigStop || f.ResumeMS != 0 || !slices.ContainsFunc(r.Injected, func(s string) bool { return strings.Contains(s, f.String()) }) {
			continue
		}
		if f.Logger && jr.LoggerFailureNotices == 0 {
			return fmt.Sprintf("logger %d was stopped and never declared failed", f.PE)
		}
		if !f.Logger && jr.FailureNotices == 0 {
			return fmt.Sprintf("PE %d was stopped and never declared failed (the launcher detects no stopped spawned PE)", f.PE)
		}
	}
	return ""
}

// shellJoin renders a command a shell reads back as the same words.
func shellJoin(program string, args []string) string {
	words := append([]string{program}, args...)
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]{}!#~") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

func hostInfo() Host {
	h := Host{CPUs: runtime.NumCPU(), LoadAvgStart: loadAvg()}
	h.Name, _ = os.Hostname()
	return h
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
