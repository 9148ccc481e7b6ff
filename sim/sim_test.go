package sim

import (
	"flag"
	"fmt"
	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seedFlag           = flag.Uint64("seed", 0, "run this seed only (with -v: print the trace of its events)")
	seedsFlag          = flag.Int("seeds", 0, "number of seeds to run (default: a CI-sized sweep)")
	firstFlag          = flag.Uint64("first", 1, "first seed of the sweep")
	baseFlag           = flag.Bool("base", false, "with -seed: run the seed's BaseScenario")
	genFlag            = flag.Bool("gen", false, "run the seeds' GenScenario (a generated program of sim/gen as the workload)")
	loggersFlag        = flag.Bool("loggers", false, "run the seeds' LoggerScenario (loggers, one of which dies)")
	eventLoggerFlag    = flag.Bool("event-logger", false, "run the seeds' EventLoggerScenario (event loggers, 1-3 simultaneous kills)")
	failureBoundFlag   = flag.Bool("failure-bound", false, "run the seeds' FailureBoundScenario (f = 1, one or two kills)")
	cascadeFlag        = flag.Bool("cascade", false, "run the seeds' RollbackCascadeScenario (three rollbacks under None, the second interrupting the first)")
	beforeLogLimitFlag = flag.Bool("before-log-limit", false, "with -seed: run the seed's scenario as drawn before LogLimit was (ScenarioBeforeLogLimit; with -gen, GenScenarioBeforeLogLimit)")
)

// cleanRuns caches the failure-free run of each program.
var cleanRuns sync.Map // key string -> Result

func cleanRun(t testing.TB, cfg Config) Result {
	key := fmt.Sprint(cfg.App.Name, cfg.Args, cfg.PEs)
	if r, ok := cleanRuns.Load(key); ok {
		return r.(Result)
	}
	res, err := Run(Config{App: cfg.App, Args: cfg.Args, PEs: cfg.PEs})
	if err != nil || res.Err != nil || res.Hung {
		t.Fatalf("failure-free run of %s %q on %d PEs: %v %v", cfg.App.Name, cfg.Args, cfg.PEs, err, res.Err)
	}
	cleanRuns.Store(key, res)
	return res
}

// scenarioKind says which of a seed's scenarios to run.
type scenarioKind struct {
	// base: BaseScenario; gen: GenScenario; beforeLogLimit: Scenario or
	// GenScenario as drawn before LogLimit was; loggers: LoggerScenario;
	// cascade: RollbackCascadeScenario.
	base, gen, beforeLogLimit, loggers, eventLogger, cascade, failureBound bool
}

// runSeed runs one seed and checks it.
func runSeed(t testing.TB, seed uint64, kind scenarioKind, trace bool) (Config, Result, error) {
	cfg, replay := Scenario(seed), ""
	switch {
	case kind.base:
		cfg, replay = BaseScenario(seed), " -base"
	case kind.gen && kind.beforeLogLimit:
		cfg, replay = GenScenarioBeforeLogLimit(seed), " -gen -before-log-limit"
	case kind.gen:
		cfg, replay = GenScenario(seed), " -gen"
	case kind.beforeLogLimit:
		cfg, replay = ScenarioBeforeLogLimit(seed), " -before-log-limit"
	case kind.loggers:
		cfg, replay = LoggerScenario(seed), " -loggers"
	case kind.eventLogger:
		cfg, replay = EventLoggerScenario(seed), " -event-logger"
	case kind.cascade:
		cfg, replay = RollbackCascadeScenario(seed), " -cascade"
	case kind.failureBound:
		cfg, replay = FailureBoundScenario(seed), " -failure-bound"
	}
	if trace {
		cfg.Trace = os.Stdout
		fmt.Println("scenario:", cfg.Describe())
	}
	clean := cleanRun(t, cfg)
	res, err := Run(cfg)
	if err != nil {
		return cfg, res, err
	}
	res.Outcome, err = Check(cfg, res, clean)
	if err != nil {
		err = fmt.Errorf("seed %d: %s\n%w\nreplay: go test ./sim -run 'TestSim$' -seed %d%s -v", seed, cfg.Describe(), err, seed, replay)
	}
	return cfg, res, err
}

// TestSim runs the whole job, PEs, transport and coordinator, under
// thousands of seeds: each draws a program, a protocol, checkpoints,
// load balancing, a lossy network and faults; every run must end with
// the failure-free results (or the documented error of an unrecoverable
// failure).
func TestSim(t *testing.T) {
	if *seedFlag != 0 {
		cfg, res, err := runSeed(t, *seedFlag, scenarioKind{base: *baseFlag, gen: *genFlag, beforeLogLimit: *beforeLogLimitFlag, loggers: *loggersFlag, eventLogger: *eventLoggerFlag, cascade: *cascadeFlag, failureBound: *failureBoundFlag}, testing.Verbose())
		if kb, ok := knownBugOf(cfg, res, err); ok && !*strictFlag {
			t.Skipf("known bug %q:\n%v", kb.name, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: outcome %v, %d events, ended at %v, %d recoveries, dead %v", *seedFlag, res.Outcome, res.Steps, res.End, res.Recoveries, res.Dead)
		return
	}
	n := *seedsFlag
	if n == 0 {
		n = defaultSeeds
		if testing.Short() {
			n /= 10
		}
	}
	type result struct {
		seed uint64
		cfg  Config
		res  Result
		err  error
	}
	seeds := make(chan uint64)
	results := make(chan result)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				cfg, res, err := runSeed(t, s, scenarioKind{gen: *genFlag, loggers: *loggersFlag, eventLogger: *eventLoggerFlag, cascade: *cascadeFlag, failureBound: *failureBoundFlag}, false)
				results <- result{s, cfg, res, err}
			}
		}()
	}
	go func() {
		for s := *firstFlag; s < *firstFlag+uint64(n); s++ {
			seeds <- s
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	start := time.Now()
	var failed, unrecoverable, faults, recoveries int
	// Runs with a log limit, the sync points they passed without a
	// checkpoint and those that checkpointed as a log reached it.
	var limited, passed, skipped, checkpointed, passedAgain int
	// Runs in which a logger died, and the sync points that checkpointed
	// because one had.
	var loggersDied, forced int
	known := map[string][]uint64{}
	var events uint64
	for r := range results {
		events += r.res.Steps
		if r.res.LoggersDead > 0 {
			loggersDied++
			for _, n := range r.res.Notes {
				if strings.Contains(n, "checkpoints: a logger failed") {
					forced++
				}
			}
		}
		recoveries += r.res.Recoveries
		if r.cfg.LogLimit > 0 {
			limited++
			for _, st := range r.res.Stats {
				passedAgain += st.PassedAgain
			}
			for _, n := range r.res.Notes {
				switch {
				case strings.Contains(n, "passed without a checkpoint"):
					passed++
				case strings.Contains(n, "skipped: the largest sender log"):
					skipped++
				case strings.Contains(n, "checkpoints: PE"):
					checkpointed++
				}
			}
		}
		for _, d := range r.res.Dead {
			if d {
				faults++
			}
		}
		if kb, ok := knownBugOf(r.cfg, r.res, r.err); ok && !*strictFlag {
			known[kb.name] = append(known[kb.name], r.seed)
			continue
		}
		if r.err != nil {
			failed++
			if failed <= 5 {
				t.Error(r.err)
			} else {
				t.Errorf("seed %d: %s", r.seed, firstLines(r.err.Error(), 3))
			}
			continue
		}
		if r.res.Outcome == Unrecoverable {
			unrecoverable++
		}
	}
	t.Logf("%d seeds from %d in %v: %d failed, %d stopped as unrecoverable, %d PEs killed, %d recoveries, %d events",
		n, *firstFlag, time.Since(start).Round(time.Millisecond), failed, unrecoverable, faults, recoveries, events)
	t.Logf("%d runs with a log limit: %d sync points passed without a checkpoint, %d skipped ahead, %d checkpointed as a log reached the limit; re-executing tasks passed %d sync points again by themselves (on the PEs alive at the end)",
		limited, passed, skipped, checkpointed, passedAgain)
	if loggersDied > 0 {
		t.Logf("%d runs in which a logger died: %d sync points checkpointed because one had", loggersDied, forced)
	}
	for name, seeds := range known {
		slices.Sort(seeds)
		t.Logf("known bug %q: %d seeds, e.g. %v", name, len(seeds), seeds[:min(len(seeds), 10)])
	}
}

// TestSimGenerated is TestSim with a generated program of sim/gen as
// every seed's workload (-gen), over a quarter as many seeds: ordered,
// commutative and order-dependent handlers, reductions, broadcasts and
// multicasts that no mini-app combines.
func TestSimGenerated(t *testing.T) {
	if *seedFlag != 0 || *genFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-gen for generated programs)")
	}
	*genFlag, *seedsFlag = true, defaultSeeds/4
	defer func() { *genFlag, *seedsFlag = false, 0 }()
	TestSim(t)
}

// TestSimLoggers is TestSim with loggers, one of which dies (-loggers,
// LoggerScenario), over a tenth as many seeds: the job goes on after a
// logger's death; under a logging protocol the next sync point
// checkpoints, and a PE that fails before that checkpoint commits rolls
// every task back to the checkpoint (or, when a survivor finds the loss
// first, stops the job with logging.ErrLogEntriesLost, an unrecoverable
// outcome), one that fails after it is recovered.
func TestSimLoggers(t *testing.T) {
	if *seedFlag != 0 || *loggersFlag || *eventLoggerFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-loggers for loggers)")
	}
	*loggersFlag, *seedsFlag = true, defaultSeeds/10
	defer func() { *loggersFlag, *seedsFlag = false, 0 }()
	TestSim(t)
}

// A seed replays the same run, event for event.
func TestSimReplays(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := Scenario(seed)
		a, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.Digest != b.Digest || a.Steps != b.Steps {
			t.Errorf("seed %d: two runs differ: %d events (digest %x), then %d (digest %x)", seed, a.Steps, a.Digest, b.Steps, b.Digest)
		}
	}
}

// Under LoggerScenario's log quota the PEs dump to the simulated loggers,
// a survivor fetches back what restored tasks need, and every run ends
// with the failure-free results or a documented stop; some runs dump,
// and some fetch.
func TestSimLogQuota(t *testing.T) {
	if *seedFlag != 0 || *loggersFlag || *eventLoggerFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-loggers for loggers)")
	}
	runs, dumped, fetched, stopped := 0, 0, 0, 0
	for seed := uint64(1); seed <= 120 && runs < 30; seed++ {
		if LoggerScenario(seed).LogQuota == 0 {
			continue
		}
		runs++
		_, res, err := runSeed(t, seed, scenarioKind{loggers: true}, false)
		if err != nil {
			t.Fatal(err)
		}
		d, f := 0, 0
		for _, s := range res.Stats {
			d += s.LogDumpedBytes
			f += s.LogFetchedBytes
		}
		if d > 0 {
			dumped++
		}
		if f > 0 {
			fetched++
		}
		if res.Outcome == Unrecoverable {
			stopped++
		}
	}
	t.Logf("%d runs under a quota: %d dumped, %d fetched entries back, %d stopped as documented", runs, dumped, fetched, stopped)
	if dumped == 0 || fetched == 0 {
		t.Fatalf("%d runs: %d dumped, %d fetched: the quota is not exercised", runs, dumped, fetched)
	}
}

// TestSimEventLogger is TestSim with event loggers (-event-logger,
// EventLoggerScenario) over a twentieth as many seeds: one, two and three PEs
// killed at once, sometimes a logger too; every run ends with the
// failure-free results, or, where a task was restored without the records
// of a logger that died since the checkpoint, with logging.ErrEventLogLost.
func TestSimEventLogger(t *testing.T) {
	if *seedFlag != 0 || *eventLoggerFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-event-logger for event loggers)")
	}
	*eventLoggerFlag, *seedsFlag = true, defaultSeeds/20
	defer func() { *eventLoggerFlag, *seedsFlag = false, 0 }()
	TestSim(t)
}

// TestSimRollbackCascade is TestSim over RollbackCascadeScenario
// (-cascade): three rollbacks under None, the first interrupted by a
// second failure, the third after the second completed. A PE that had
// adopted a task in the first kept its record in its own copy after the
// second placed the task elsewhere, and the third, whose plan no longer
// named it, restored it twice: the job went quiescent with messages sent
// to the other copy (about one seed in four, before the fix).
func TestSimRollbackCascade(t *testing.T) {
	if *seedFlag != 0 || *cascadeFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-cascade for the rollback cascade)")
	}
	*cascadeFlag, *seedsFlag = true, max(defaultSeeds/20, 20)
	defer func() { *cascadeFlag, *seedsFlag = false, 0 }()
	TestSim(t)
}

// Under EventLoggerScenario some runs recover three PEs killed at once
// by replay (no two buddies: no rollback), with the failure-free results,
// and under FullDet the PEs' records go to the event loggers.
func TestSimEventLoggerThreeKills(t *testing.T) {
	if *seedFlag != 0 || *eventLoggerFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-event-logger for event loggers)")
	}
	replayed := 0
	for seed := uint64(1); seed <= 400 && replayed < 5; seed++ {
		cfg := EventLoggerScenario(seed)
		if len(cfg.Faults) != 3 || cfg.Disk || len(cfg.LoggerFaults) > 0 {
			continue
		}
		_, res, err := runSeed(t, seed, scenarioKind{eventLogger: true}, false)
		require.NoError(t, err)
		dead, logged := 0, 0
		for p, d := range res.Dead {
			if d {
				dead++
			} else {
				logged += res.Stats[p].Protocol.EventLogRecords
			}
		}
		if dead == 3 && !notesSay(res, "rolls back") && res.Recoveries > 0 {
			replayed++
		}
		if cfg.Protocol == logging.KindFullDet {
			// Under PartialDet the mini-apps' PEs make no record: none
			// of their handlers is order-dependent (logging.Config.
			// OrderFree).
			require.Positive(t, logged, "seed %d: records go to the event logger", seed)
		}
	}
	require.GreaterOrEqual(t, replayed, 5, "runs recover three simultaneous kills by replay")
}

// TestSimFailureBound runs FailureBoundScenario (-failure-bound): f = 1
// on every PE and the coordinator, one or two kills. Every run ends with
// the failure-free results; some recover two kills since one checkpoint
// by rolling every task back (the coordinator's note says why), and
// some recover every kill by replaying only the failed PEs' tasks.
func TestSimFailureBound(t *testing.T) {
	if *seedFlag != 0 || *failureBoundFlag || *seedsFlag != 0 {
		t.Skip("TestSim runs these flags (-failure-bound for f = 1)")
	}
	n := uint64(max(defaultSeeds/10, 30))
	var rolledBack, replayed int
	for seed := uint64(1); seed <= n; seed++ {
		cfg, res, err := runSeed(t, seed, scenarioKind{failureBound: true}, false)
		if kb, ok := knownBugOf(cfg, res, err); ok {
			t.Logf("seed %d: known bug %q", seed, kb.name)
			continue
		}
		require.NoError(t, err)
		tooMany := slices.ContainsFunc(res.Notes, func(l string) bool {
			return strings.Contains(l, "more PE failures since the last checkpoint than the protocol survives") && strings.Contains(l, "(f=1); every task rolls back")
		})
		restored, rolled := 0, 0
		for _, st := range res.Stats {
			restored += st.Restored
			rolled += st.RolledBack
		}
		switch {
		case tooMany:
			rolledBack++
		case restored > 0 && rolled == 0:
			replayed++
		}
	}
	t.Logf("%d seeds: %d rolled every task back at a second failure since a checkpoint, %d recovered by replaying only the failed PEs' tasks", n, rolledBack, replayed)
	require.Positive(t, rolledBack, "some runs fail twice between two checkpoints")
	require.Positive(t, replayed, "some runs recover by replaying only the failed PEs' tasks")
}
