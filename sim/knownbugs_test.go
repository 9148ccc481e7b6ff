package sim

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var strictFlag = flag.Bool("strict", false, "fail on the known bugs too")

// knownBug is a bug of the runtime the simulator found and that is not
// fixed yet: a sweep counts the runs that fail with its signature
// instead of failing (with -strict it fails), so that a new bug stands
// out. Each has the seeds that found it: TestKnownBugSeeds replays them
// and skips, naming the bug, while it is there. Once it is fixed, its
// seeds pass: drop the entry (and keep the seeds in regressionSeeds).
type knownBug struct {
	name  string
	seeds []uint64
	// base: the seeds are of BaseScenario; gen: of GenScenario;
	// beforeLogLimit: of the scenarios as drawn before LogLimit was
	base, gen, beforeLogLimit bool
	// eventLogger: the seeds are of EventLoggerScenario.
	eventLogger bool
	// signature: the error holds all of these strings, and when (if
	// set) accepts the run.
	signature []string
	when      func(cfg Config, res Result) bool
}

func notesSay(res Result, s string) bool {
	for _, n := range res.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// knownBugs, most specific first.
var knownBugs = []knownBug{}

// knownBugOf returns the known bug whose signature a failed run has.
func knownBugOf(cfg Config, res Result, err error) (knownBug, bool) {
	if err == nil || !errors.Is(err, ErrCheck) {
		return knownBug{}, false
	}
	msg := err.Error()
	for _, b := range knownBugs {
		all := b.when == nil || b.when(cfg, res)
		for _, s := range b.signature {
			all = all && strings.Contains(msg, s)
		}
		if all {
			return b, true
		}
	}
	return knownBug{}, false
}

// regressionSeeds found bugs that are fixed now; each must pass.
var regressionSeeds = []struct {
	bug   string
	seeds []uint64
	// base: the seeds are of BaseScenario; gen: of GenScenario;
	// beforeLogLimit: of Scenario (or GenScenario) as drawn before
	// LogLimit was (every seed found before it, so that it still runs
	// the scenario that found the bug)
	base, gen, beforeLogLimit bool
	// eventLogger: the seeds are of EventLoggerScenario.
	eventLogger bool
}{
	{"failure around a migration: restored tasks wait for messages that never arrive (a task's record reached its new PE before that PE handled Migrate; moves were settled only while the coordinator was still migrating)",
		[]uint64{25, 71, 179, 257, 380, 10064, 10549, 10854}, false, false, true, false},
	{"failure during a migration: a later migration imports a task already there", []uint64{12490, 55104}, false, false, true, false},
	{"failure during a migration: two messages for one reception position", []uint64{64932}, false, false, true, false},
	{"rollback to disk after a migration: a record given to a PE that does not host the task", []uint64{24852}, false, false, true, false},
	{"rollback after too many failures needs a lost checkpoint copy", []uint64{11635}, false, false, true, false},
	{"rollback after too many failures needs a lost checkpoint copy", []uint64{179}, true, false, true, false},
	{"failure after the tasks were created again: the main task restored from the checkpoint of the recreated tasks was not given Start again", []uint64{152, 1022}, false, false, true, false},
	{"a PE failed after the coordinator committed a checkpoint, before a slow PE had: the others resumed and recovered at once, and the slow PE got messages of the next period before its commit ('checkpoint with N messages buffered'); recovery now waits for every live PE's commit",
		[]uint64{301759, 304661, 305496}, false, false, false, false},
	{"the main task's PE failed while its last lines of output were on their way to the launcher: the restored main task printed them all again (output is now numbered per task, checkpointed, and written once)", []uint64{303606}, false, false, false, false},
	{"two migrations before a commit: a failure interrupted a sync point's migration or the checkpoint after it, the tasks came back there and the coordinator balanced again, so a later failure settled only the second migration's moves and tasks restored from the failed PE waited for what tasks that had left it in the first one sent there (fixed: a sync point balances once)",
		[]uint64{1870, 5261}, false, true, true, false},
	{"two migrations before a commit (as above), in the mini-apps",
		[]uint64{4022, 5261}, false, false, true, false},
	{"failure after the tasks were created again, then two more: a task restored at the first waited at the second for the recovery envelopes of a PE dead since the tasks were created again (the protocol made afresh at a rollback did not know the PEs already dead)", []uint64{10365}, false, false, true, false},
	{"failure after the tasks were created again, then two more: a task restored at the first waited at the second for the recovery envelopes of a PE dead since the tasks were created again (the protocol made afresh at a rollback did not know the PEs already dead)", []uint64{6251}, false, true, true, false},
	{"failure after the tasks were created again: the main task, created again on another PE and restored from that checkpoint, got Start again with the identity of the PE the mapping gives, not of the PE that sent it, and its recorded reception never came", []uint64{2877, 2905, 5030}, false, true, true, false},
	{"rollback to disk after a migration: a record given to a PE that does not host the task (each PE sent a task that had left a PE failed since back to that PE, where a recovery had placed it elsewhere; moves a failure settled now stay settled in PE.rollback)",
		[]uint64{23383, 16001}, false, false, true, false},
	{"failure during a migration: quiescence counters never balance, the job stalls (a restored task's replay sent a message to a task still on its way between two survivors; its new PE dropped it uncounted; now the PE keeps it until the task arrives, counts every envelope it drops as received, and the coordinator takes no checkpoint before the moved tasks arrived)",
		[]uint64{10859}, false, false, true, false},
	{"failure during a migration, then a second one: the job went quiet with only some tasks at a sync point (the next sync point balanced again before the first migration's checkpoint committed, and its moves replaced the first ones, which the second failure then did not settle; now the job takes that checkpoint first)",
		[]uint64{200590, 16463}, false, false, true, false},
	{"default checkpoint policy (LogLimit), few tasks: a task restored on a PE that had no sync task when the job passed a sync point without a checkpoint waited there alone (ErrNotAllAtSync), or while the others went on to the next one (a checkpoint with its messages buffered, now ErrSyncStepsDiffer): each PE guessed the passed steps from its own waiting tasks; now the coordinator sends them (Resume.Passed)",
		[]uint64{300564, 300678, 300897, 301474, 301873, 302195}, false, false, false, false},
	{"two buddies failed after the coordinator committed a checkpoint, before every live PE had, with no complete disk copy of it: the first failure's recovery sent every task back to the disk checkpoint, and the second failure's recovery then started over that rollback, which never ended (the job went quiet without Exit); a rollback now covers every PE that failed meanwhile",
		[]uint64{549}, false, false, false, true},
}

func TestRegressionSeeds(t *testing.T) {
	for _, r := range regressionSeeds {
		for _, seed := range r.seeds {
			name := fmt.Sprintf("%d", seed)
			if r.gen {
				name = "gen/" + name
			}
			t.Run(name, func(t *testing.T) {
				_, _, err := runSeed(t, seed, scenarioKind{base: r.base, gen: r.gen, beforeLogLimit: r.beforeLogLimit, eventLogger: r.eventLogger}, false)
				require.NoError(t, err, "seed %d found %q", seed, r.bug)
			})
		}
	}
}

// The seeds that found each known bug: skipped while the bug is there,
// an error if they fail otherwise.
func TestKnownBugSeeds(t *testing.T) {
	for _, b := range knownBugs {
		for _, seed := range b.seeds {
			t.Run(fmt.Sprintf("%d", seed), func(t *testing.T) {
				cfg, res, err := runSeed(t, seed, scenarioKind{base: b.base, gen: b.gen, beforeLogLimit: b.beforeLogLimit, eventLogger: b.eventLogger}, false)
				if err == nil {
					t.Logf("seed %d passes: is %q fixed? drop it from knownBugs", seed, b.name)
					return
				}
				if kb, ok := knownBugOf(cfg, res, err); ok && kb.name == b.name && !*strictFlag {
					t.Skipf("known bug: %s (seed %d)", b.name, seed)
				}
				t.Fatal(err)
			})
		}
	}
}
