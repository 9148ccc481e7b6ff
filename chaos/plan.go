package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrConfig marks a campaign configuration that cannot run.
var ErrConfig = errors.New("chaos: bad configuration")

// Kind is a failure scenario of a run.
type Kind string

const (
	// KindStep: one PE (PE 0 included) is SIGKILLed when one of its tasks
	// offers a random sync-point step, from 1 to the application's last.
	KindStep Kind = "step"
	// KindTwo: two different PEs are SIGKILLed, each at its own random
	// step (the same step, or steps close together, make two failures at
	// once).
	KindTwo Kind = "two"
	// KindRecovery: one PE is SIGKILLed at a random step and a second one
	// while the job recovers from the first failure (at once, or up to
	// 200 ms after the launcher announced it).
	KindRecovery Kind = "recovery"
	// KindCheckpoint: one PE is SIGKILLed at a step where the job takes a
	// checkpoint (the run gets a checkpoint period if it had none).
	KindCheckpoint Kind = "checkpoint"
	// KindExternal: the campaign SIGKILLs a PE's process at a random
	// moment of the run, as `kill -9 PID` would.
	KindExternal Kind = "external"
	// KindStop: the campaign SIGSTOPs a PE at a random moment and never
	// resumes it: a hung PE, which the job must detect as failed.
	KindStop Kind = "stop"
	// KindPause: the campaign SIGSTOPs a PE at a random moment and resumes
	// it 0.5-8 s later: a PE that stalls, which must not break the job
	// (whether or not the job declared it dead meanwhile: the pause may
	// outlast the launcher's 5 s heartbeat bound).
	KindPause Kind = "pause"
	// KindLogger: the campaign SIGKILLs one of the run's loggers at a
	// random moment.
	KindLogger Kind = "logger"
	// KindLoggerPE: the campaign SIGKILLs a logger at a random moment,
	// then a PE at once or up to a second after the launcher announced
	// the logger's failure.
	KindLoggerPE Kind = "logger-pe"
	// KindLoggerStop: the campaign SIGSTOPs a logger at a random moment
	// and never resumes it: a hung logger, which the job must detect.
	KindLoggerStop Kind = "logger-stop"
	// KindMany: two or three PEs SIGKILLed at once (all at one step, or
	// the first at a step and the others as that recovery starts); no two
	// of them buddies unless the run writes its checkpoints to disk. With
	// an event logger, when the protocol allows one.
	KindMany Kind = "many"
)

// AllKinds are the failure kinds, in the order tables list them.
var AllKinds = []Kind{KindStep, KindTwo, KindRecovery, KindCheckpoint, KindExternal, KindStop, KindPause,
	KindLogger, KindLoggerPE, KindLoggerStop, KindMany}

// PEKinds are the kinds that fail PEs only, which need no logger: the
// full preset's.
var PEKinds = AllKinds[:7]

// needsLoggers reports a kind that fails a logger.
func (k Kind) needsLoggers() bool {
	return k == KindLogger || k == KindLoggerPE || k == KindLoggerStop
}

// LoggerSetup is a run's logger flags.
type LoggerSetup string

const (
	// LoggersNone: no logger process.
	LoggersNone LoggerSetup = "none"
	// LoggersPlain: --loggers K, loggers that hold nothing a recovery
	// needs (any protocol).
	LoggersPlain LoggerSetup = "plain"
	// LoggersEvent: --loggers K --event-logger (fulldet, partialdet).
	LoggersEvent LoggerSetup = "event"
	// LoggersQuota: --loggers K --log-quota Q (fulldet, partialdet), Q a
	// fraction of the largest sender log's high-water mark in the same
	// configuration without the quota (Run.QuotaFraction).
	LoggersQuota LoggerSetup = "quota"
	// LoggersBoth: --loggers K --event-logger --log-quota Q.
	LoggersBoth LoggerSetup = "both"
)

// AllLoggerSetups are the logger setups, in the order tables list them.
var AllLoggerSetups = []LoggerSetup{LoggersNone, LoggersPlain, LoggersEvent, LoggersQuota, LoggersBoth}

// EventLogger reports a setup with --event-logger.
func (s LoggerSetup) EventLogger() bool { return s == LoggersEvent || s == LoggersBoth }

// Quota reports a setup with --log-quota.
func (s LoggerSetup) Quota() bool { return s == LoggersQuota || s == LoggersBoth }

// allowed reports whether the launcher takes the setup under protocol:
// the event logger and the quota need a protocol that logs.
func (s LoggerSetup) allowed(protocol string) bool {
	return protocol != "none" || !(s.EventLogger() || s.Quota())
}

// Protocols are the --ft values, in the order tables list them.
var Protocols = []string{"none", "fulldet", "partialdet"}

// Signal names a signal the campaign or the launcher sends to a PE.
type Signal string

const (
	SigKill Signal = "KILL"
	SigStop Signal = "STOP"
)

// Trigger says when a failure happens.
type Trigger string

const (
	// AtStep: when one of the PE's tasks offers sync-point step Step.
	AtStep Trigger = "step"
	// AtRecovery: DelayMS after the launcher announces failure number
	// Recovery (1 for the first) of the job.
	AtRecovery Trigger = "recovery"
	// AtTime: Fraction of the failure-free run's time (from the moment its
	// PEs were started to its end) after this run's PEs were started.
	AtTime Trigger = "time"
	// AtCheckpoint: as soon as the coordinator starts checkpoint Epoch
	// (1 is the checkpoint of the tasks as created); the launcher injects
	// it (pe=R,at=checkpoint:E).
	AtCheckpoint Trigger = "checkpoint"
	// AtLoggerFailure: DelayMS after the launcher announces the failure
	// of a logger (the first of the job).
	AtLoggerFailure Trigger = "logger-failure"
)

// Failure is one planned failure of a run.
type Failure struct {
	// PE is the rank of the PE, or with Logger the number of the logger,
	// that fails.
	PE       int     `json:"pe"`
	Logger   bool    `json:"logger,omitempty"`
	Signal   Signal  `json:"signal"`
	Trigger  Trigger `json:"trigger"`
	Step     uint64  `json:"step,omitempty"`
	Recovery int     `json:"recovery,omitempty"`
	DelayMS  int     `json:"delay_ms,omitempty"`
	Fraction float64 `json:"fraction,omitempty"`
	Epoch    uint64  `json:"epoch,omitempty"`
	// ResumeMS, for SIGSTOP: SIGCONT this long after (0: never).
	ResumeMS int `json:"resume_ms,omitempty"`
}

func (f Failure) String() string {
	s := "SIG" + string(f.Signal) + " pe " + strconv.Itoa(f.PE)
	if f.Logger {
		s = "SIG" + string(f.Signal) + " logger " + strconv.Itoa(f.PE)
	}
	switch f.Trigger {
	case AtStep:
		s += fmt.Sprintf(" at step %d", f.Step)
	case AtRecovery:
		s += fmt.Sprintf(" %d ms after failure %d is announced", f.DelayMS, f.Recovery)
	case AtTime:
		s += fmt.Sprintf(" at %.0f%% of the failure-free run time", 100*f.Fraction)
	case AtCheckpoint:
		s += fmt.Sprintf(" as checkpoint %d starts", f.Epoch)
	case AtLoggerFailure:
		s += fmt.Sprintf(" %d ms after a logger's failure is announced", f.DelayMS)
	}
	if f.Signal == SigStop {
		if f.ResumeMS > 0 {
			s += fmt.Sprintf(", SIGCONT %.1f s later", float64(f.ResumeMS)/1000)
		} else {
			s += ", never resumed"
		}
	}
	return s
}

// LauncherKills says which failures the launcher's --kill flag can inject
// itself; the campaign injects the others. A kill at a step always goes
// to the launcher (pe=R,at=step:S).
type LauncherKills struct {
	// Recovery: the launcher takes pe=R,at=recovery:N (kill PE R when the
	// coordinator starts recovery number N).
	Recovery bool
	// Signal: the launcher takes signal=STOP (stop instead of kill); stops
	// are then planned at a step instead of a moment.
	Signal bool
}

// Spec returns the --kill value that makes the launcher inject f, or false
// when the campaign must inject it.
func (l LauncherKills) Spec(f Failure) (string, bool) {
	switch {
	case f.Logger:
		return "", false
	case f.Trigger == AtCheckpoint:
		return fmt.Sprintf("pe=%d,at=checkpoint:%d", f.PE, f.Epoch), true
	case f.Trigger == AtStep && f.Signal == SigKill:
		return fmt.Sprintf("pe=%d,at=step:%d", f.PE, f.Step), true
	case f.Trigger == AtStep && f.Signal == SigStop && f.ResumeMS == 0 && l.Signal:
		return fmt.Sprintf("pe=%d,at=step:%d,signal=STOP", f.PE, f.Step), true
	case f.Trigger == AtRecovery && f.Signal == SigKill && f.DelayMS == 0 && l.Recovery:
		return fmt.Sprintf("pe=%d,at=recovery:%d", f.PE, f.Recovery), true
	}
	return "", false
}

func (l LauncherKills) String() string {
	var s []string
	if l.Recovery {
		s = append(s, "recovery")
	}
	if l.Signal {
		s = append(s, "signal")
	}
	return strings.Join(s, ",")
}

// ParseLauncherKills reads --launcher-kills: a comma-separated list of
// recovery and signal (empty: none).
func ParseLauncherKills(v string) (LauncherKills, error) {
	var l LauncherKills
	for _, s := range splitList(v) {
		switch s {
		case "recovery":
			l.Recovery = true
		case "signal":
			l.Signal = true
		default:
			return l, fmt.Errorf("%w: --launcher-kills %q: want recovery and/or signal", ErrConfig, s)
		}
	}
	return l, nil
}

// App is one application's job in a campaign.
type App struct {
	Name string `json:"name"`
	// Args are the application's flags, step count included.
	Args []string `json:"args"`
	// LastStep is the last sync-point step the application offers with
	// these flags (a kill planned later would never fire).
	LastStep uint64 `json:"last_step"`
	// Periods are the --checkpoint-every values runs may use besides the
	// default (no periodic checkpoint).
	Periods []int `json:"periods"`
}

// Config is a campaign.
type Config struct {
	Preset    string   `json:"preset"`
	Seed      uint64   `json:"seed"`
	Runs      int      `json:"runs"`
	Apps      []App    `json:"apps"`
	Protocols []string `json:"protocols"`
	PEs       []int    `json:"pes"`
	Kinds     []Kind   `json:"kinds"`
	// Loggers are the logger setups runs draw from (none: no logger,
	// except in runs of a kind that fails a logger, which get plain
	// loggers where no listed setup has one).
	Loggers []LoggerSetup `json:"loggers,omitempty"`
	// LauncherKills are the failures handed to the launcher.
	LauncherKills LauncherKills `json:"launcher_kills"`
	// A run's deadline is TimeoutFactor × its failure-free run's wall time
	// + TimeoutSlack; past it, the run is a hang.
	TimeoutFactor float64       `json:"timeout_factor"`
	TimeoutSlack  time.Duration `json:"timeout_slack"`
	// BaselineTimeout bounds a failure-free run.
	BaselineTimeout time.Duration `json:"baseline_timeout"`
	// Failures, if above 0, is the failure bound f of the runs under
	// fulldet or partialdet without an event logger (gochare run
	// --failures; 0: the runtime's default).
	Failures int `json:"failures,omitempty"`
}

// maxFailures is the largest f gochare run --failures takes
// (logging.MaxFailures; this package imports the standard library only).
const maxFailures = 8

// lastStep is the last sync-point step an application offers: stencil3d
// offers steps 0..iterations-2 (none after its last sweep), leanmd
// 1..steps-1, lulesh 0..iterations-1.
func lastStep(app string, steps int) uint64 {
	switch app {
	case "stencil3d":
		return uint64(max(steps-2, 0))
	default:
		return uint64(max(steps-1, 0))
	}
}

func stencil3d(grid, chunk string, iterations int, periods ...int) App {
	return App{Name: "stencil3d", Args: []string{"--grid", grid, "--chunk", chunk, "--iterations", strconv.Itoa(iterations)},
		LastStep: lastStep("stencil3d", iterations), Periods: periods}
}

func leanmd(cells, kaway string, atoms, steps int, periods ...int) App {
	args := []string{"--cells", cells}
	if kaway != "" {
		args = append(args, "--kaway", kaway)
	}
	args = append(args, "--atoms", strconv.Itoa(atoms), "--steps", strconv.Itoa(steps))
	return App{Name: "leanmd", Args: args, LastStep: lastStep("leanmd", steps), Periods: periods}
}

func lulesh(size int, chunk string, iterations int, periods ...int) App {
	return App{Name: "lulesh", Args: []string{"--size", strconv.Itoa(size), "--chunk", chunk, "--iterations", strconv.Itoa(iterations)},
		LastStep: lastStep("lulesh", iterations), Periods: periods}
}

// Presets are the preset names.
var Presets = []string{"full", "ci", "loggers"}

// Preset returns the named campaign: full (jobs of a few seconds, 3-5 PEs,
// every kind of PE failure, no logger), ci (the smallest jobs on 3 PEs,
// one run per application × protocol, a PE stopped, a logger killed, some
// runs with loggers: short enough for `go test -race`) or loggers (full's
// jobs made longer, every logger setup, loggers killed or stopped, several
// PEs killed at once, PEs killed).
func Preset(name string) (Config, error) {
	c := Config{Preset: name, Seed: 1, Protocols: slices.Clone(Protocols), TimeoutFactor: 10, TimeoutSlack: 30 * time.Second, BaselineTimeout: 3 * time.Minute,
		// A kill as a recovery begins goes to the launcher, which fires it
		// at that very moment; the campaign's own ones come 1-200 ms later.
		LauncherKills: LauncherKills{Recovery: true}}
	switch name {
	case "full":
		c.Runs = 100
		c.PEs = []int{3, 4, 5}
		c.Kinds = slices.Clone(PEKinds)
		c.Apps = []App{
			stencil3d("64,64,64", "16,16,16", 60, 7, 20),
			leanmd("3,3,3", "", 40, 30, 4, 10),
			lulesh(12, "6,6,6", 60, 7, 20),
		}
	case "loggers":
		c.Runs = 24
		c.PEs = []int{3, 4, 5}
		c.Kinds = []Kind{KindLogger, KindLoggerPE, KindLoggerStop, KindMany, KindStep, KindRecovery, KindExternal}
		// Every run has loggers: the runs without are the full preset's.
		c.Loggers = []LoggerSetup{LoggersPlain, LoggersEvent, LoggersQuota, LoggersBoth}
		// A logger stopped before it joined holds the job's start for
		// the launcher's 30 s join timeout.
		c.TimeoutSlack = 60 * time.Second
		// Full's jobs, longer (1.5-3 s on a 2-core VM), so that a
		// logger stopped in the first half of a job with a tuned
		// heartbeat bound (1 s) is caught while it runs.
		c.Apps = []App{
			stencil3d("64,64,64", "16,16,16", 200, 20, 50),
			leanmd("3,3,3", "", 40, 40, 10, 20),
			lulesh(12, "6,6,6", 200, 20, 50),
		}
	case "ci":
		c.Runs = 9
		c.PEs = []int{3}
		c.Kinds = []Kind{KindStep, KindTwo, KindRecovery, KindCheckpoint, KindExternal, KindStop, KindLogger}
		// Loggers in some runs, at the cost of a few logger processes
		// (and, with a quota, one more failure-free run to measure it).
		c.Loggers = []LoggerSetup{LoggersNone, LoggersEvent, LoggersQuota, LoggersBoth}
		c.TimeoutSlack = 60 * time.Second
		c.Apps = []App{
			stencil3d("32,32,32", "8,8,8", 16, 4),
			leanmd("3,3,3", "1,1,1", 20, 8, 3),
			lulesh(12, "6,6,6", 16, 4),
		}
	default:
		return c, fmt.Errorf("%w: unknown preset %q (%s)", ErrConfig, name, strings.Join(Presets, ", "))
	}
	return c, nil
}

// Validate reports a configuration that cannot be planned.
func (c Config) Validate() error {
	switch {
	case len(c.Apps) == 0:
		return fmt.Errorf("%w: no application", ErrConfig)
	case len(c.Protocols) == 0:
		return fmt.Errorf("%w: no protocol", ErrConfig)
	case len(c.PEs) == 0:
		return fmt.Errorf("%w: no PE count", ErrConfig)
	case len(c.Kinds) == 0:
		return fmt.Errorf("%w: no failure kind", ErrConfig)
	case c.Runs < 0:
		return fmt.Errorf("%w: %d runs", ErrConfig, c.Runs)
	case c.TimeoutFactor <= 0 || c.TimeoutSlack < 0 || c.BaselineTimeout <= 0:
		return fmt.Errorf("%w: timeouts must be positive", ErrConfig)
	}
	for _, p := range c.Protocols {
		if !slices.Contains(Protocols, p) {
			return fmt.Errorf("%w: protocol %q: want none, fulldet or partialdet", ErrConfig, p)
		}
	}
	for _, n := range c.PEs {
		// Two failures must leave a survivor.
		if n < 3 {
			return fmt.Errorf("%w: %d PEs: at least 3 (two failures must leave a survivor)", ErrConfig, n)
		}
	}
	if c.Failures != 0 {
		if c.Failures < 0 || c.Failures > maxFailures {
			return fmt.Errorf("%w: --failures %d: want 1 to %d", ErrConfig, c.Failures, maxFailures)
		}
		for _, n := range c.PEs {
			if c.Failures >= n {
				return fmt.Errorf("%w: --failures %d with %d PEs: f must be below the PE count", ErrConfig, c.Failures, n)
			}
		}
	}
	for _, k := range c.Kinds {
		if !slices.Contains(AllKinds, k) {
			return fmt.Errorf("%w: failure kind %q: want one of %s", ErrConfig, k, kindList(AllKinds))
		}
	}
	for _, s := range c.Loggers {
		if !slices.Contains(AllLoggerSetups, s) {
			return fmt.Errorf("%w: logger setup %q: want one of %s", ErrConfig, s, kindList(AllLoggerSetups))
		}
	}
	for _, a := range c.Apps {
		if a.LastStep < 1 {
			return fmt.Errorf("%w: %s offers no sync-point step to kill at", ErrConfig, a.Name)
		}
		for _, k := range a.Periods {
			if k < 1 || uint64(k) > a.LastStep {
				return fmt.Errorf("%w: %s: checkpoint period %d: want 1..%d", ErrConfig, a.Name, k, a.LastStep)
			}
		}
		if len(a.Periods) == 0 && slices.Contains(c.Kinds, KindCheckpoint) {
			return fmt.Errorf("%w: %s has no checkpoint period for the %s kind", ErrConfig, a.Name, KindCheckpoint)
		}
	}
	return nil
}

func kindList[T ~string](ks []T) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// Run is one planned job of a campaign.
type Run struct {
	Index           int    `json:"index"`
	App             string `json:"app"`
	Protocol        string `json:"protocol"`
	PEs             int    `json:"pes"`
	CheckpointEvery int    `json:"checkpoint_every"` // 0: the default (no periodic checkpoint)
	// Disk: checkpoints also go to disk (--checkpoint-dir), so that the
	// loss of a PE and its buddy falls back to the latest disk checkpoint.
	Disk bool `json:"disk,omitempty"`
	// Setup and Loggers are the run's logger flags (Setup "" or none:
	// no logger); QuotaFraction, with a quota, is --log-quota as a
	// fraction of the largest log_peak_bytes of the same configuration
	// without the quota (Unbounded), and LogQuota the bytes it comes to,
	// set by the campaign once that run measured them.
	Setup         LoggerSetup `json:"logger_setup,omitempty"`
	Loggers       int         `json:"loggers,omitempty"`
	QuotaFraction float64     `json:"quota_fraction,omitempty"`
	LogQuota      int64       `json:"log_quota,omitempty"`
	// HeartbeatTimeout, if set, is the run's --heartbeat-timeout (a
	// tuned flag of some logger-stop runs, so that the stopped logger is
	// caught while the job runs); the failure-free run keeps the default.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	Kind             Kind          `json:"kind"`
	Failures         []Failure     `json:"failures"`
}

// Key names the run's failure-free configuration, whose digest it must
// end with.
func (r Run) Key() string {
	k := fmt.Sprintf("%s/%s/pes=%d/every=%d", r.App, r.Protocol, r.PEs, r.CheckpointEvery)
	if r.Loggers > 0 {
		k += fmt.Sprintf("/loggers=%d", r.Loggers)
		if r.Setup.EventLogger() {
			k += "/event"
		}
		if r.Setup.Quota() {
			k += fmt.Sprintf("/quota=%.2f", r.QuotaFraction)
		}
	}
	return k
}

// Unbounded is the failure-free configuration of a run with a quota
// without it, whose largest sender log's high-water mark the quota is a
// fraction of.
func (r Run) Unbounded() Run {
	u := Run{Index: r.Index, App: r.App, Protocol: r.Protocol, PEs: r.PEs, CheckpointEvery: r.CheckpointEvery, Disk: r.Disk, Loggers: r.Loggers, Setup: LoggersPlain}
	if r.Setup.EventLogger() {
		u.Setup = LoggersEvent
	}
	return u
}

func (r Run) String() string {
	every := "default checkpoints"
	if r.CheckpointEvery > 0 {
		every = fmt.Sprintf("checkpoint every %d", r.CheckpointEvery)
	}
	if r.Disk {
		every += " (and on disk)"
	}
	tuned := ""
	if r.HeartbeatTimeout > 0 {
		tuned = ", heartbeat timeout " + r.HeartbeatTimeout.String()
	}
	return fmt.Sprintf("#%d %s %s %d PEs %s%s%s, %s", r.Index, r.App, r.Protocol, r.PEs, every, r.loggerString(), tuned, r.Kind)
}

// loggerString describes the run's logger flags ("" for none).
func (r Run) loggerString() string {
	if r.Loggers == 0 {
		return ""
	}
	s := fmt.Sprintf(", %d logger", r.Loggers)
	if r.Loggers > 1 {
		s += "s"
	}
	if r.Setup.EventLogger() {
		s += ", event logger"
	}
	if r.Setup.Quota() {
		s += fmt.Sprintf(", log quota %.0f%% of the peak", 100*r.QuotaFraction)
		if r.LogQuota > 0 {
			s += fmt.Sprintf(" (%d bytes)", r.LogQuota)
		}
	}
	return s
}

// Streams of the seeded random source: one per run, and one per block of
// runs for each stratified choice.
const (
	streamRun   = 1 << 40
	streamCell  = 2 << 40
	streamKinds = 3 << 40
	// streamLoggers: the logger setup of run i and its loggers' failures,
	// drawn apart so that a configuration with loggers plans the same
	// PE failures as one without.
	streamLoggers = 4 << 40
)

// blockPerm returns the shuffled order of n choices for block b.
func blockPerm(seed, stream uint64, b, n int) []int {
	return rand.New(rand.NewPCG(seed, stream|uint64(b))).Perm(n)
}

// Plan returns run i of the campaign. It depends only on the seed, i and
// the configuration's lists (not on Runs), so a run can be replayed alone.
// Application × protocol and the failure kind are stratified: every block
// of len(Apps)×len(Protocols) runs visits each pair once, every block of
// len(Kinds) runs each kind once, in seeded orders; the rest is drawn
// from run i's own random source.
func (c Config) Plan(i int) Run {
	cells := len(c.Apps) * len(c.Protocols)
	cell := blockPerm(c.Seed, streamCell, i/cells, cells)[i%cells]
	app := c.Apps[cell/len(c.Protocols)]
	run := Run{Index: i, App: app.Name, Protocol: c.Protocols[cell%len(c.Protocols)]}
	run.Kind = c.Kinds[blockPerm(c.Seed, streamKinds, i/len(c.Kinds), len(c.Kinds))[i%len(c.Kinds)]]

	r := rand.New(rand.NewPCG(c.Seed, streamRun|uint64(i)))
	run.PEs = c.PEs[r.IntN(len(c.PEs))]
	// A third of the runs keep the default flags (no periodic checkpoint),
	// the others use one of the application's periods.
	if len(app.Periods) > 0 && r.IntN(3) != 0 {
		run.CheckpointEvery = app.Periods[r.IntN(len(app.Periods))]
	}
	// Half the runs with periodic checkpoints also write them to disk.
	run.Disk = run.CheckpointEvery > 0 && r.IntN(2) == 0
	step := func() uint64 { return 1 + r.Uint64N(app.LastStep) }
	pe := func() int { return r.IntN(run.PEs) }
	other := func(not int) int { return (not + 1 + r.IntN(run.PEs-1)) % run.PEs }
	kill := func(p int, s uint64) Failure { return Failure{PE: p, Signal: SigKill, Trigger: AtStep, Step: s} }
	switch run.Kind {
	case KindStep:
		run.Failures = []Failure{kill(pe(), step())}
	case KindTwo:
		first := pe()
		run.Failures = []Failure{kill(first, step()), kill(other(first), step())}
	case KindRecovery:
		first := pe()
		second := Failure{PE: other(first), Signal: SigKill, Trigger: AtRecovery, Recovery: 1}
		if r.IntN(2) == 1 {
			second.DelayMS = 1 + r.IntN(200)
		}
		run.Failures = []Failure{kill(first, step()), second}
	case KindCheckpoint:
		if run.CheckpointEvery == 0 {
			run.CheckpointEvery = app.Periods[r.IntN(len(app.Periods))]
		}
		k := uint64(run.CheckpointEvery)
		// Half: while checkpoint E is taken (1, the tasks as created, to
		// the last). Half: at a step whose sync point the runtime takes,
		// as the PE's first task offers it, before the checkpoint starts.
		if epochs := 1 + (app.LastStep+1)/k; r.IntN(2) == 0 {
			run.Failures = []Failure{{PE: pe(), Signal: SigKill, Trigger: AtCheckpoint, Epoch: 1 + r.Uint64N(epochs)}}
		} else {
			run.Failures = []Failure{kill(pe(), k*(1+r.Uint64N((app.LastStep+1)/k))-1)}
		}
	case KindExternal:
		run.Failures = []Failure{{PE: pe(), Signal: SigKill, Trigger: AtTime, Fraction: r.Float64()}}
	case KindStop:
		f := Failure{PE: pe(), Signal: SigStop, Trigger: AtTime, Fraction: r.Float64()}
		if s := step(); c.LauncherKills.Signal {
			f.Trigger, f.Fraction, f.Step = AtStep, 0, s
		}
		run.Failures = []Failure{f}
	case KindPause:
		run.Failures = []Failure{{PE: pe(), Signal: SigStop, Trigger: AtTime, Fraction: 0.8 * r.Float64(), ResumeMS: 500 + r.IntN(7500)}}
	case KindMany:
		var pes []int
		pes, run.Disk = manyPEs(r, run.PEs, run.Disk)
		first := kill(pes[0], step())
		run.Failures = []Failure{first}
		together := r.IntN(2) == 0
		for _, p := range pes[1:] {
			if together {
				run.Failures = append(run.Failures, kill(p, first.Step))
			} else {
				run.Failures = append(run.Failures, Failure{PE: p, Signal: SigKill, Trigger: AtRecovery, Recovery: 1})
			}
		}
	}

	rl := rand.New(rand.NewPCG(c.Seed, streamLoggers|uint64(i)))
	run.Setup, run.Loggers, run.QuotaFraction = c.loggerSetup(run, rl)
	if !run.Kind.needsLoggers() {
		return run
	}
	logger := Failure{PE: rl.IntN(run.Loggers), Logger: true, Signal: SigKill, Trigger: AtTime, Fraction: rl.Float64()}
	switch run.Kind {
	case KindLogger:
		run.Failures = []Failure{logger}
	case KindLoggerPE:
		then := Failure{PE: rl.IntN(run.PEs), Signal: SigKill, Trigger: AtLoggerFailure}
		if rl.IntN(2) == 1 {
			then.DelayMS = 1 + rl.IntN(1000)
		}
		run.Failures = []Failure{logger, then}
	case KindLoggerStop:
		logger.Signal = SigStop
		run.Failures = []Failure{logger}
		// The default bound (5 s) catches a logger stopped in a job of
		// a second or two only if its PEs wait for it (a quota); half
		// the runs tune it down so that it is caught while the job runs.
		if rl.IntN(2) == 0 {
			run.HeartbeatTimeout = time.Second
		}
	}
	return run
}

// manyPEs draws the PEs of a KindMany run, 2 or 3 of n (leaving one):
// no two of them buddies (neighbours in ring order) unless disk, whose
// checkpoints on disk survive the loss of both copies in memory. When n
// PEs have no such set, disk comes back true: the run writes its
// checkpoints to disk.
func manyPEs(r *rand.Rand, n int, disk bool) ([]int, bool) {
	k := min(2+r.IntN(2), n-1)
	if disk {
		return r.Perm(n)[:k], true
	}
	if k <= n/2 {
		// A random order, each PE taken unless a neighbour is: tried a
		// bounded number of times.
		for range 100 {
			var pes []int
			for _, p := range r.Perm(n) {
				if !slices.Contains(pes, (p+1)%n) && !slices.Contains(pes, (p+n-1)%n) {
					pes = append(pes, p)
				}
				if len(pes) == k {
					return pes, false
				}
			}
		}
	}
	return r.Perm(n)[:k], true
}

// loggerSetup draws the logger flags of run from the configuration's
// setups the protocol allows: with at least one logger when the run's
// kind fails a logger (plain loggers if no listed setup has one), with
// an event logger for KindMany where one is listed. Quotas are 10-100 %
// of the unbounded high-water mark, in steps of 5 %.
func (c Config) loggerSetup(run Run, r *rand.Rand) (LoggerSetup, int, float64) {
	var pool []LoggerSetup
	for _, s := range c.Loggers {
		if s.allowed(run.Protocol) && (s != LoggersNone || !run.Kind.needsLoggers()) {
			pool = append(pool, s)
		}
	}
	if run.Kind == KindMany {
		if ev := slices.DeleteFunc(slices.Clone(pool), func(s LoggerSetup) bool { return !s.EventLogger() }); len(ev) > 0 {
			pool = ev
		}
	}
	switch {
	case len(pool) > 0:
	case run.Kind.needsLoggers():
		pool = []LoggerSetup{LoggersPlain}
	default:
		return "", 0, 0
	}
	s := pool[r.IntN(len(pool))]
	if s == LoggersNone {
		return "", 0, 0
	}
	loggers := 1 + r.IntN(2)
	var fraction float64
	if s.Quota() {
		fraction = float64(2+r.IntN(19)) / 20
	}
	return s, loggers, fraction
}

// appByName returns the configuration's application.
func (c Config) appByName(name string) (App, bool) {
	i := slices.IndexFunc(c.Apps, func(a App) bool { return a.Name == name })
	if i < 0 {
		return App{}, false
	}
	return c.Apps[i], true
}

// BaselineArgs are the gochare arguments of the run's failure-free job.
func (c Config) BaselineArgs(r Run) []string {
	app, _ := c.appByName(r.App)
	args := []string{"run", r.App, "--pes", strconv.Itoa(r.PEs), "--ft", r.Protocol}
	if r.CheckpointEvery > 0 {
		args = append(args, "--checkpoint-every", strconv.Itoa(r.CheckpointEvery))
	}
	if c.Failures > 0 && r.Protocol != "none" && !r.Setup.EventLogger() {
		args = append(args, "--failures", strconv.Itoa(c.Failures))
	}
	if r.Disk {
		args = append(args, "--checkpoint-dir", c.DiskDir(r))
	}
	if r.Loggers > 0 {
		args = append(args, "--loggers", strconv.Itoa(r.Loggers))
		if r.Setup.EventLogger() {
			args = append(args, "--event-logger")
		}
		if r.Setup.Quota() {
			// Not measured yet (a run not done): a value the launcher
			// refuses, never a run without the quota.
			quota := "unmeasured"
			if r.LogQuota > 0 {
				quota = strconv.FormatInt(r.LogQuota, 10)
			}
			args = append(args, "--log-quota", quota)
		}
	}
	args = append(args, "--json")
	return append(args, app.Args...)
}

// DiskDir is the checkpoint directory of a run with Disk set: one per
// seed and run, under the system's temporary directory, emptied before
// the run and removed after it.
func (c Config) DiskDir(r Run) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("gochare-chaos-%d-%d", c.Seed, r.Index))
}

// Args are the gochare arguments of the run, with the failures the
// launcher injects as --kill flags, and the failures left to the
// campaign.
func (c Config) Args(r Run) (args []string, campaign []Failure) {
	app, _ := c.appByName(r.App)
	args = c.BaselineArgs(r)
	args = args[:len(args)-len(app.Args)]
	if r.HeartbeatTimeout > 0 {
		args = append(args, "--heartbeat-timeout", r.HeartbeatTimeout.String())
	}
	for _, f := range r.Failures {
		if spec, ok := c.LauncherKills.Spec(f); ok {
			args = append(args, "--kill", spec)
		} else {
			campaign = append(campaign, f)
		}
	}
	return append(args, app.Args...), campaign
}

// ReplayArgs are the `gochare chaos` arguments that run run i of this
// campaign alone: the preset, the seed and every list that differs from
// the preset's.
func (c Config) ReplayArgs(i int) []string {
	args := []string{"chaos", "--preset", c.Preset, "--seed", strconv.FormatUint(c.Seed, 10)}
	p, err := Preset(c.Preset)
	if err == nil {
		var names, pnames []string
		for _, a := range c.Apps {
			names = append(names, a.Name)
		}
		for _, a := range p.Apps {
			pnames = append(pnames, a.Name)
		}
		if !slices.Equal(names, pnames) {
			args = append(args, "--apps", strings.Join(names, ","))
		}
		if !slices.Equal(c.Protocols, p.Protocols) {
			args = append(args, "--ft", strings.Join(c.Protocols, ","))
		}
		if !slices.Equal(c.PEs, p.PEs) {
			args = append(args, "--pes", intList(c.PEs))
		}
		if !slices.Equal(c.Kinds, p.Kinds) {
			args = append(args, "--kinds", kindList(c.Kinds))
		}
		if !slices.Equal(c.Loggers, p.Loggers) {
			args = append(args, "--loggers", loggerList(c.Loggers))
		}
	}
	if p, err := Preset(c.Preset); err != nil || c.LauncherKills != p.LauncherKills {
		args = append(args, "--launcher-kills", c.LauncherKills.String())
	}
	if c.Failures > 0 {
		args = append(args, "--failures", strconv.Itoa(c.Failures))
	}
	return append(args, "--only", strconv.Itoa(i))
}

// loggerList names the logger setups ("none" for none).
func loggerList(ls []LoggerSetup) string {
	if len(ls) == 0 {
		return string(LoggersNone)
	}
	return kindList(ls)
}

func intList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ParseNumbers reads the value v of flag what: numbers >= 0 and ranges,
// "3,4,5", "3-5" or "0-99,140"; sorted, without repeats.
func ParseNumbers(what, v string) ([]int, error) {
	var out []int
	for _, s := range splitList(v) {
		lo, hi, isRange := strings.Cut(s, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%w: %s %q: want N, N,M,... or N-M", ErrConfig, what, v)
		}
		for n := a; n <= b; n++ {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s %q: no number", ErrConfig, what, v)
	}
	slices.Sort(out)
	return out, nil
}

// filterOrdered keeps the entries of all named in v, in all's order.
func filterOrdered[T ~string](all []T, v, what string) ([]T, error) {
	want := splitList(v)
	for _, w := range want {
		if !slices.Contains(all, T(w)) {
			names := make([]string, len(all))
			for i, a := range all {
				names[i] = string(a)
			}
			return nil, fmt.Errorf("%w: %s %q: want some of %s", ErrConfig, what, w, strings.Join(names, ","))
		}
	}
	var out []T
	for _, a := range all {
		if slices.Contains(want, string(a)) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: empty list", ErrConfig, what)
	}
	return out, nil
}
