package sim

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
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
	// base: the seeds are of BaseScenario
	base bool
	// all the substrings the error must hold
	signature []string
}

var knownBugs = []knownBug{
	{
		// A PE fails around a load-balancing migration (after the moves,
		// before or while the next checkpoint is taken): the restored
		// tasks replay and wait for recorded messages whose senders'
		// logs are gone. Same bug as scheduler's
		// TestFailureDuringMigrationIsRecovered hang.
		name:      "replay after a migration waits for messages that never arrive",
		seeds:     []uint64{25, 71, 179, 257, 380},
		signature: []string{"quiescent with only some tasks at a sync point", "replaying"},
	},
	{
		// A PE fails before the first checkpoint commits (its tasks are
		// created again, generation 1), then another fails: after its
		// recovery the job goes quiet, tasks holding messages of a later
		// key than the one they expect.
		name:      "second failure after the tasks were created again: quiescent without Exit",
		seeds:     []uint64{152, 1022},
		signature: []string{"quiescent but no task called Exit"},
	},
	{
		// More failures since the last checkpoint than the protocol
		// survives: every task rolls back, but the rollback relies on a
		// checkpoint copy that a failed PE held; the job stops with a
		// PE's error instead of recovering or reporting the documented
		// unrecoverable error.
		name:      "rollback after too many failures needs a lost checkpoint copy",
		seeds:     []uint64{179},
		base:      true,
		signature: []string{"holds no checkpoint copy"},
	},
}

// knownBugOf returns the known bug whose signature err has, if any.
func knownBugOf(err error) (knownBug, bool) {
	if err == nil || !errors.Is(err, ErrCheck) {
		return knownBug{}, false
	}
	msg := err.Error()
	for _, b := range knownBugs {
		all := true
		for _, s := range b.signature {
			all = all && strings.Contains(msg, s)
		}
		if all {
			return b, true
		}
	}
	return knownBug{}, false
}

// The seeds that found each known bug: skipped while the bug is there,
// an error if they fail otherwise.
func TestKnownBugSeeds(t *testing.T) {
	for _, b := range knownBugs {
		for _, seed := range b.seeds {
			t.Run(fmt.Sprintf("%d", seed), func(t *testing.T) {
				_, _, err := runSeed(t, seed, b.base, false)
				if err == nil {
					t.Logf("seed %d passes: is %q fixed? drop it from knownBugs", seed, b.name)
					return
				}
				if kb, ok := knownBugOf(err); ok && kb.name == b.name && !*strictFlag {
					t.Skipf("known bug: %s (seed %d)", b.name, seed)
				}
				t.Fatal(err)
			})
		}
	}
}
