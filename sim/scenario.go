package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/apps/lulesh"
	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/sim/gen"
)

// Workload is a program the simulator runs: an application, its
// arguments (small, so that thousands of runs fit in a test), and the
// number of steps its tasks go through (to place faults at sync points).
type Workload struct {
	Name  string
	App   actor.App
	Args  []string
	Steps uint64
	// Vary, if set, returns the arguments instead of Args, drawn from the
	// seed's source: a program family (e.g. a program seed).
	Vary func(rng *rand.Rand) []string
	// OrderDependentStates says that the program's final states depend
	// on the order its order-dependent receptions took, which two
	// failure-free runs may take differently (see Config).
	OrderDependentStates bool
	// StepLog is about how much the sender logs of all PEs together grow
	// by in one step under fulldet or partialdet (measured: a PE's log at
	// successive sync points, times the PE count): the scale of the log
	// limits Scenario draws.
	StepLog int
}

// Workloads are the programs scenarios choose from. A new one is a new
// row (which changes the scenario of most seeds: find the known bugs'
// seeds again). The generated programs of sim/gen are not a row but
// GenWorkload, which GenScenario puts in the seed's scenario instead.
var Workloads = []Workload{
	{Name: "stencil3d", App: stencil3d.App, Args: []string{"--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "6"}, Steps: 6, StepLog: 8500},
	{Name: "stencil3d-long", App: stencil3d.App, Args: []string{"--grid", "8,8,4", "--chunk", "4,4,4", "--iterations", "12"}, Steps: 12, StepLog: 4250},
	{Name: "leanmd", App: leanmd.App, Args: []string{"--cells", "2,2,2", "--kaway", "1,1,1", "--atoms", "4", "--steps", "6", "--migrate-every", "3"}, Steps: 6, StepLog: 62000},
	{Name: "lulesh", App: lulesh.App, Args: []string{"--size", "6", "--chunk", "3,3,3", "--iterations", "6"}, Steps: 6, StepLog: 19500},
}

// GenWorkload is the family of generated programs of sim/gen: the seed
// picks the program (its handlers, collections, reductions, broadcasts
// and multicasts) as well as the rest of the scenario.
var GenWorkload = Workload{Name: "gen", App: gen.App, Steps: 6, Vary: func(r *rand.Rand) []string {
	return []string{"--seed", strconv.Itoa(1 + r.IntN(100000)), "--steps", "6"}
}, OrderDependentStates: true, StepLog: 6000}

// GenScenario is Scenario(seed) with a generated program (GenWorkload)
// as the workload.
func GenScenario(seed uint64) Config { return genScenario(seed, true) }

func genScenario(seed uint64, logLimit bool) Config {
	cfg, _ := scenario(seed)
	cfg.App, cfg.Args = GenWorkload.App, GenWorkload.Vary(newRand(seed, 6))
	cfg.OrderDependentStates = GenWorkload.OrderDependentStates
	for i, f := range cfg.Faults {
		if f.AtStep > GenWorkload.Steps {
			cfg.Faults[i].AtStep = 1 + (f.AtStep-1)%GenWorkload.Steps
		}
	}
	if logLimit {
		setLogLimit(&cfg, GenWorkload, drawLogLimit(&cfg))
	}
	return cfg
}

// Scenario derives a run's Config from its seed: the workload, the PE
// count, the protocol, checkpoints and balancing, the network (with
// connection breaks) and the faults, whether checkpoints go to disk, and
// whether sync points checkpoint only once a sender log is large enough
// (LogLimit). Trace is left for the caller.
func Scenario(seed uint64) Config {
	cfg, wl := scenario(seed)
	scale := drawLogLimit(&cfg)
	if scale > 0 && cfg.PEs > 2 && newRand(seed, 8).IntN(3) == 0 {
		// Some PEs host no sync task: they must learn from the
		// coordinator which sync points the job passed, for the tasks
		// that may be restored on them.
		cfg.App, cfg.Args = FewTasks.App, FewTasks.Args
		for i, f := range cfg.Faults {
			if f.AtStep > FewTasks.Steps {
				cfg.Faults[i].AtStep = 1 + (f.AtStep-1)%FewTasks.Steps
			}
		}
		wl = FewTasks
	}
	setLogLimit(&cfg, wl, scale)
	return cfg
}

// LoggerScenario is Scenario(seed) with one or two loggers, one of which
// dies at a random time in the first 400 ms; under a logging protocol,
// the coordinator reckons that entries were dumped to it (Dumping), and
// half the time the PEs do dump, under a quota (LogQuota). The
// draws come from a source of their own: the rest is the seed's Scenario.
func LoggerScenario(seed uint64) Config {
	cfg := Scenario(seed)
	rng := newRand(seed, 10)
	cfg.Loggers = 1 + rng.IntN(2)
	cfg.Dumping = cfg.Protocol != logging.KindNone
	cfg.LoggerFaults = []LoggerFault{{Logger: rng.IntN(cfg.Loggers), At: time.Duration(rng.Int64N(int64(400 * time.Millisecond)))}}
	if cfg.Dumping && rng.IntN(2) == 0 {
		// Half of them dump for real, with a quota of a few steps of log.
		cfg.LogQuota = 8 << 10
	}
	return cfg
}

// EventLoggerScenario is Scenario(seed) under FullDet or PartialDet with
// one or two event loggers (Config.EventLogger) on 4 to 6 PEs, and one,
// two or three PEs killed at the same time: in half the runs no two of
// them buddies (every other PE, where there are enough), so that every
// checkpoint survives in memory and the failed PEs' tasks replay; in the
// others any, with the checkpoints on disk too when two or more die. In
// a quarter of the runs a logger dies too, at a random time in the first
// 400 ms. The loggers' links are slow at times (LoggerSlowAtTimes). The
// draws come from a source of their own.
func EventLoggerScenario(seed uint64) Config {
	cfg := Scenario(seed)
	rng := newRand(seed, 13)
	cfg.PEs = 4 + rng.IntN(3)
	cfg.Protocol = []logging.Kind{logging.KindFullDet, logging.KindPartialDet}[rng.IntN(2)]
	cfg.Loggers = 1 + rng.IntN(2)
	cfg.EventLogger = true
	cfg.EventLoggerLink = LoggerSlowAtTimes
	kills := 1 + rng.IntN(3)
	at := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
	cfg.Faults = nil
	victims := rng.Perm(cfg.PEs)[:kills]
	if spread := rng.IntN(2) == 0; spread && cfg.PEs >= 2*kills {
		// No two buddies (a PE's buddy is the next one, migrate.Buddy).
		first := rng.IntN(cfg.PEs)
		for i := range victims {
			victims[i] = (first + 2*i) % cfg.PEs
		}
	} else if kills > 1 {
		cfg.Disk = true
	}
	for _, pe := range victims {
		cfg.Faults = append(cfg.Faults, Fault{PE: pe, At: at})
	}
	if rng.IntN(4) == 0 {
		cfg.LoggerFaults = []LoggerFault{{Logger: rng.IntN(cfg.Loggers), At: time.Duration(rng.Int64N(int64(400 * time.Millisecond)))}}
	}
	return cfg
}

// FailureBoundScenario is Scenario(seed) under FullDet or PartialDet
// with f = 1 (Config.Failures, gochare run --failures 1) on 3 or 4 PEs,
// and one or two PEs killed, each at a step or at a time: one failure
// since the last checkpoint is recovered by replaying the failed PE's
// tasks, and a second one since that checkpoint rolls every task back to
// it (logging.CheckFailures), which a checkpoint between the two
// avoids. The draws come from a source of their own; the network,
// workload and checkpoints are the seed's Scenario's.
func FailureBoundScenario(seed uint64) Config {
	cfg := Scenario(seed)
	rng := newRand(seed, 15)
	cfg.PEs = 3 + rng.IntN(2)
	cfg.Protocol = []logging.Kind{logging.KindFullDet, logging.KindPartialDet}[rng.IntN(2)]
	cfg.Failures = 1
	cfg.Faults = nil
	for _, pe := range rng.Perm(cfg.PEs)[:1+rng.IntN(2)] {
		f := Fault{PE: pe, AtStep: 1 + uint64(rng.IntN(6))}
		if rng.IntN(3) == 0 {
			f = Fault{PE: pe, At: time.Duration(rng.Int64N(int64(300 * time.Millisecond)))}
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	return cfg
}

// RollbackCascadeScenario is a cascade of rollbacks under None (the
// chaos campaigns' "many" kind, made to strike at the moments that
// matter): LeanMD on 5 PEs with a checkpoint every 2 steps, also on
// disk; a PE dies at a step, its buddy's successor (not its buddy) right
// after it handled the first Rollback, so that rollback is interrupted
// and replaced by a second, and a third PE, the first one's ward, once
// the tasks run again after the second (at the same step, or after a
// Resume or a quiescence probe), before the next checkpoint: a third
// rollback from the same checkpoint, in memory, whose plan names only
// that PE's tasks. The ranks are rotated by the seed; the network is the
// seed's Scenario's.
func RollbackCascadeScenario(seed uint64) Config {
	rng := newRand(seed, 14)
	wl := Workloads[2] // leanmd
	cfg := Config{Seed: seed, App: wl.App, Args: wl.Args, PEs: 5, Protocol: logging.KindNone,
		CheckpointEvery: 2, Disk: true, Net: Scenario(seed).Net}
	shift := rng.IntN(cfg.PEs)
	rank := func(pe int) int { return (pe + shift) % cfg.PEs }
	step := 3 + uint64(rng.IntN(3))
	third := Fault{PE: rank(0), AtStep: step}
	switch rng.IntN(3) {
	case 1:
		third = Fault{PE: rank(0), AfterEvent: "Resume", Nth: 1 + int(step)/2 + rng.IntN(2)}
	case 2:
		third = Fault{PE: rank(0), AfterEvent: "Probe", Nth: 1 + rng.IntN(40)}
	}
	cfg.Faults = []Fault{{PE: rank(1), AtStep: step}, {PE: rank(4), AfterEvent: "Rollback", Nth: 1}, third}
	return cfg
}

// FewTasks is the workload a third of the runs of 3 or 4 PEs with a log
// limit take instead of theirs (Scenario): stencil3d with 2 chunks, so
// that some PEs host no task of a collection with sync points.
var FewTasks = Workload{Name: "stencil3d-2", App: stencil3d.App, Args: []string{"--grid", "8,4,4", "--chunk", "4,4,4", "--iterations", "12"}, Steps: 12, StepLog: 2100}

// ScenarioBeforeLogLimit is Scenario as it was drawn before LogLimit was
// (the seeds of the bugs found before, regressionSeeds).
func ScenarioBeforeLogLimit(seed uint64) Config {
	cfg, _ := scenario(seed)
	return cfg
}

// GenScenarioBeforeLogLimit is GenScenario as it was drawn before
// LogLimit was.
func GenScenarioBeforeLogLimit(seed uint64) Config { return genScenario(seed, false) }

func scenario(seed uint64) (Config, Workload) {
	cfg, wl := baseScenario(seed)
	// Later additions draw from sources of their own, so that a seed
	// keeps the rest of the scenario it had: add, never change the order
	// of the draws of BaseScenario.
	extra := newRand(seed, 5)
	if extra.IntN(4) == 0 {
		cfg.Net.Flaps = 1 + extra.IntN(5)
	}
	cfg.Disk = cfg.CheckpointEvery > 0 && extra.IntN(6) == 0
	return cfg, wl
}

// drawLogLimit gives half the runs under a logging protocol the
// launcher's default checkpoint policy (job.Config.LogLimit): their sync
// points (every CheckpointEvery steps, 1 to 3 if the run had none)
// checkpoint only once a PE's sender log reached the limit, and pass
// without a checkpoint otherwise. It returns the limit's scale (0: no
// limit), 1/2 to 6 (log-uniform), for setLogLimit: in most runs some sync
// points checkpoint and others do not, the first checkpoint comes after
// one to several passed ones, and a failure restores tasks from a
// checkpoint older than sync points the job passed. A run given a sync
// period here also writes its checkpoints to disk one time in six, as
// those with one of their own do. The draws come from a source of their
// own (see scenario).
func drawLogLimit(cfg *Config) (scale float64) {
	rng := newRand(cfg.Seed, 7)
	if cfg.Protocol == logging.KindNone || rng.IntN(2) == 0 {
		return 0
	}
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = 1 + uint64(rng.IntN(3))
		cfg.Disk = rng.IntN(6) == 0
	}
	return math.Exp(math.Log(0.5) + rng.Float64()*math.Log(12))
}

// setLogLimit sets the log limit of a run of workload wl to scale times
// what a PE logs in one sync period (Workload.StepLog).
func setLogLimit(cfg *Config, wl Workload, scale float64) {
	if scale <= 0 {
		return
	}
	perPeriod := float64(wl.StepLog) / float64(cfg.PEs) * float64(cfg.CheckpointEvery)
	cfg.LogLimit = max(1, int(perPeriod*scale))
}

// BaseScenario is Scenario as the simulator first drew it: no connection
// breaks, no disk checkpoints (the seeds of the first bugs it found).
func BaseScenario(seed uint64) Config {
	cfg, _ := baseScenario(seed)
	return cfg
}

func baseScenario(seed uint64) (Config, Workload) {
	rng := newRand(seed, 0)
	wl := Workloads[rng.IntN(len(Workloads))]
	cfg := Config{Seed: seed, App: wl.App, Args: wl.Args, PEs: 2 + rng.IntN(3)}
	if wl.Vary != nil {
		cfg.Args = wl.Vary(newRand(seed, 6))
	}
	cfg.Protocol = []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet}[rng.IntN(3)]
	if rng.IntN(5) > 0 {
		cfg.CheckpointEvery = 1 + uint64(rng.IntN(3))
		switch rng.IntN(6) {
		case 0, 1:
			cfg.Balancer = "greedy"
		case 2:
			cfg.Balancer = "refine"
		}
	}
	cfg.Net = NetConfig{MinDelay: time.Duration(5+rng.IntN(100)) * time.Microsecond}
	cfg.Net.MaxDelay = cfg.Net.MinDelay + time.Duration(50+rng.IntN(3000))*time.Microsecond
	if rng.IntN(2) == 0 {
		cfg.Net.SlowEvery = 20 + rng.IntN(200)
	}
	if rng.IntN(3) > 0 {
		cfg.Net.Loss = rng.Float64() * 0.05
	}
	if rng.IntN(2) == 0 {
		cfg.Net.Dup = rng.Float64() * 0.03
	}
	cfg.Faults = faults(rng, cfg.PEs, wl.Steps)
	return cfg, wl
}

// faults draws 0 to 3 faults on distinct PEs (never all of them).
func faults(rng *rand.Rand, pes int, steps uint64) []Fault {
	n := []int{0, 1, 1, 1, 1, 2, 2, 2, 3, 3}[rng.IntN(10)]
	n = min(n, pes-1)
	var out []Fault
	for _, pe := range rng.Perm(pes)[:n] {
		f := Fault{PE: pe}
		if rng.IntN(6) == 0 {
			f.Kind = Freeze
		}
		switch rng.IntN(3) {
		case 0:
			f.At = time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
		case 1:
			f.AfterEvent = FaultEvents[rng.IntN(len(FaultEvents))]
			f.Nth = 1 + rng.IntN(3)
			if rng.IntN(2) == 0 {
				f.At = time.Duration(rng.Int64N(int64(time.Second)))
			}
		case 2:
			f.AtStep = 1 + uint64(rng.IntN(int(steps)))
		}
		out = append(out, f)
	}
	return out
}

// Describe says what a Config runs, in one line.
func (c Config) Describe() string {
	var faults []string
	for _, f := range c.Faults {
		faults = append(faults, f.String())
	}
	sync := fmt.Sprintf("checkpoint every %d", c.CheckpointEvery)
	if c.LogLimit > 0 {
		sync = fmt.Sprintf("sync point every %d, checkpoint once a log holds %d bytes", c.CheckpointEvery, c.LogLimit)
	}
	for _, f := range c.LoggerFaults {
		faults = append(faults, f.String())
	}
	loggers := ""
	if c.Loggers > 0 {
		loggers = fmt.Sprintf(", %d loggers (dumping %v)", c.Loggers, c.Dumping)
		if c.LogQuota > 0 {
			loggers += fmt.Sprintf(", log quota %d bytes", c.LogQuota)
		}
	}
	protocol := c.Protocol.String()
	if c.Failures != 0 {
		protocol += fmt.Sprintf(" f=%d", c.Failures)
	}
	return fmt.Sprintf("%s %q on %d PEs%s, %s, %s, balancer %q, disk %v, net %+v, faults [%s]",
		c.App.Name, c.Args, c.PEs, loggers, protocol, sync, c.Balancer, c.Disk || c.CheckpointDir != "", c.Net, strings.Join(faults, "; "))
}

// timing matches the output lines that report times, which differ
// between any two runs.
var timing = regexp.MustCompile(`(?i)elapsed|time per step|^FOM|^\{`)

// Results returns the lines of a job's output that must equal the
// failure-free run's: all but those that report times.
func Results(output []string) []string {
	var out []string
	for _, l := range output {
		if !timing.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}
