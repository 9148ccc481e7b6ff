package logtest

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
)

var (
	crashesFlag = flag.Int("crashes", 0, "crashes per run in the seed sweep (default: two, one for every third seed)")
	seedFlag    = flag.Int64("seed", -1, "run only this simulator seed (with -v, trace it)")
	seedsFlag   = flag.Int("seeds", 0, "simulator seeds per protocol (default 10000, 300 under -race)")
)

var kinds = []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet}

func seedCount() int {
	switch {
	case *seedsFlag > 0:
		return *seedsFlag
	case raceEnabled:
		return 300
	}
	return 10000
}

// sweepConfig is the run of one sweep seed: two crashes (f = 2), the second
// often during the first one's recovery, except every third seed, which
// crashes once with the default f = 1.
func sweepConfig(kind logging.Kind, seed uint64) Config {
	cfg := DefaultConfig(kind, seed)
	switch {
	case *crashesFlag > 0:
		cfg.Crashes = *crashesFlag
	case seed%3 == 0:
		cfg.Crashes = 1
	default:
		cfg.Crashes = 2
	}
	return cfg
}

func TestSimulatorSeeds(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			if *seedFlag >= 0 {
				result, err := runTraced(t, sweepConfig(kind, uint64(*seedFlag)))
				require.NoError(t, err, "seed %d", *seedFlag)
				t.Logf("%+v", result)
				return
			}
			var crashed, twice, duringRecovery, failures int
			for seed := range uint64(seedCount()) {
				result, err := Run(sweepConfig(kind, seed))
				if err != nil {
					failures++
					if failures <= 5 {
						t.Errorf("%v seed %d: %v\nreplay: go test ./logging/logtest -run 'TestSimulatorSeeds/%v' -seed %d -crashes %d -v",
							kind, seed, err, kind, seed, sweepConfig(kind, seed).Crashes)
					}
					continue
				}
				if result.Crashes > 0 {
					crashed++
				}
				if result.Crashes > 1 {
					twice++
				}
				if result.CrashesDuringRecovery > 0 {
					duringRecovery++
				}
			}
			t.Logf("%v: %d seeds, %d crashed, %d crashed twice, %d crashed during a recovery, %d failed",
				kind, seedCount(), crashed, twice, duringRecovery, failures)
			require.Zero(t, failures, "failing seeds")
			require.Greater(t, crashed, seedCount()/2, "most runs crash")
			if *crashesFlag != 1 {
				require.Greater(t, twice, seedCount()/3, "many runs crash twice")
				if kind != logging.KindNone {
					require.Greater(t, duringRecovery, seedCount()/20, "some runs crash during a recovery")
				}
			}
		})
	}
}

// runTraced runs cfg with every event logged to t.
func runTraced(t *testing.T, cfg Config) (Result, error) {
	cfg.Trace = t.Logf
	return Run(cfg)
}

func TestWrongAnnotationIsCaught(t *testing.T) {
	found := 0
	for seed := range uint64(500) {
		cfg := DefaultConfig(logging.KindPartialDet, seed)
		cfg.OrderDependent = false
		cfg.WrongAnnotation = true
		_, err := Run(cfg)
		if err != nil {
			require.ErrorIs(t, err, ErrViolation)
			require.ErrorContains(t, err, "digest")
			found++
		}
	}
	require.Positive(t, found, "a non-commuting region declared commutative must produce a digest mismatch")
	t.Logf("%d of 500 seeds caught the wrong annotation", found)
}

func TestFullDetReplaysEvenAWrongAnnotation(t *testing.T) {
	for seed := range uint64(300) {
		cfg := DefaultConfig(logging.KindFullDet, seed)
		cfg.OrderDependent = false
		cfg.WrongAnnotation = true
		_, err := Run(cfg)
		require.NoError(t, err, "seed %d: FullDet replays in exact order", seed)
	}
}

// TestDeterministicProgramMatchesFailureFreeRun: without order-dependent
// handlers the final state does not depend on the schedule, so a run with
// crashes must end exactly as the same seed without crashes.
func TestDeterministicProgramMatchesFailureFreeRun(t *testing.T) {
	for _, kind := range kinds {
		for seed := range uint64(200) {
			cfg := DefaultConfig(kind, seed)
			cfg.OrderDependent = false
			crashed, err := Run(cfg)
			require.NoError(t, err)
			cfg.Crashes = 0
			clean, err := Run(cfg)
			require.NoError(t, err)
			require.Equal(t, clean.Digests, crashed.Digests, "%v seed %d", kind, seed)
		}
	}
}

func TestSingleFailureWithDefaultF(t *testing.T) {
	for _, kind := range kinds[1:] {
		for seed := range uint64(500) {
			cfg := DefaultConfig(kind, seed)
			cfg.Crashes, cfg.Failures = 1, 1
			_, err := Run(cfg)
			require.NoError(t, err, "%v seed %d", kind, seed)
		}
	}
}

func TestBadConfigIsRejected(t *testing.T) {
	cfg := DefaultConfig(logging.KindNone, 1)
	cfg.Crashes = cfg.PEs
	_, err := Run(cfg)
	require.True(t, errors.Is(err, ErrConfig))
}

func FuzzSimulator(f *testing.F) {
	f.Add(uint64(1), uint8(2), uint8(2))
	f.Add(uint64(77), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, kind, crashes uint8) {
		cfg := DefaultConfig(logging.Kind(kind%3), seed)
		cfg.Crashes = int(crashes % 3)
		_, err := Run(cfg)
		require.NoError(t, err)
	})
}

// TestStabilityCheckIsPerGroup checks the stability check itself, on
// protocols changed to piggyback less: an envelope may rely on the
// determinants carried by an earlier envelope of its Ready to the same PE
// (the group arrives together and in order), and on nothing else.
func TestStabilityCheckIsPerGroup(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(logging.Ready) logging.Ready
		caught bool
	}{
		{"once per destination", carryOnce(func(to logging.PEID) logging.PEID { return to }), false},
		{"once per Ready whatever the destination", carryOnce(func(logging.PEID) logging.PEID { return 0 }), true},
		{"by the last envelope to the destination", carryLast, true},
	} {
		for _, kind := range kinds[1:] {
			caught := 0
			for seed := range uint64(300) {
				cfg := DefaultConfig(kind, seed)
				cfg.mutateReady = c.mutate
				_, err := Run(cfg)
				if err == nil {
					continue
				}
				require.True(t, c.caught, "%s, %v seed %d: %v", c.name, kind, seed, err)
				require.ErrorIs(t, err, ErrViolation)
				if strings.Contains(err.Error(), "depending on unstable determinant") {
					caught++
				}
			}
			if c.caught {
				require.Positive(t, caught, "%s, %v: no envelope caught relying on a determinant it was not given", c.name, kind)
			}
			t.Logf("%s, %v: %d of 300 seeds caught", c.name, kind, caught)
		}
	}
}

// carryOnce returns a change that keeps, on each message envelope of a
// Ready, only the determinants that no earlier message envelope of the
// Ready carried to a destination of the same group (group(to) names it).
func carryOnce(group func(to logging.PEID) logging.PEID) func(logging.Ready) logging.Ready {
	return func(ready logging.Ready) logging.Ready {
		carried := map[logging.PEID]map[logging.Determinant]bool{}
		envs := slices.Clone(ready.Envelopes)
		for i, env := range envs {
			if env.Kind != logging.EnvelopeMessage || env.To == env.From {
				continue
			}
			g := group(env.To)
			if carried[g] == nil {
				carried[g] = map[logging.Determinant]bool{}
			}
			var kept []logging.Determinant
			for _, d := range env.Determinants {
				if !carried[g][d] {
					carried[g][d] = true
					kept = append(kept, d)
				}
			}
			envs[i].Determinants = kept
		}
		ready.Envelopes = envs
		return ready
	}
}

// carryLast moves the determinants of the message envelopes of a Ready to
// one PE onto the last of them.
func carryLast(ready logging.Ready) logging.Ready {
	last := map[logging.PEID]int{}
	moved := map[logging.PEID][]logging.Determinant{}
	envs := slices.Clone(ready.Envelopes)
	for i, env := range envs {
		if env.Kind == logging.EnvelopeMessage && env.To != env.From {
			last[env.To] = i
			moved[env.To] = append(moved[env.To], env.Determinants...)
			envs[i].Determinants = nil
		}
	}
	for to, i := range last {
		envs[i].Determinants = moved[to]
	}
	ready.Envelopes = envs
	return ready
}

// TestRegressionSeeds replays seeds that reproduce protocol bugs found by
// the sweep: each fails with its fix reverted. A change to the simulator
// moves every run, so after one, revert each fix, sweep for seeds that fail
// again (-seeds, -crashes) and put them here (last done when PEs started
// transmitting once per slice).
func TestRegressionSeeds(t *testing.T) {
	for _, c := range []struct {
		kind    logging.Kind
		seed    uint64
		crashes int
		bug     string
	}{
		// Fix: Message.Requires and dependenciesMet (first found by seed 7987).
		{logging.KindPartialDet, 45259, 1, "a replayed region took a message before the region message whose handler's send led to it"},
		// Fix: recovery epochs (first found by seed 2702).
		{logging.KindFullDet, 134, 2, "a recovery envelope of the first failure satisfied the wait for the second one's"},
		// Fix: recovery envelopes carry the unstable determinants and
		// progress records (first found by seeds 3841, 8222 and 3928).
		{logging.KindFullDet, 19273, 2, "a recovery envelope handed over a determinant without the unstable ones it depends on"},
		{logging.KindFullDet, 14776, 3, "fixed by the change for 19273 (fails without it)"},
		{logging.KindPartialDet, 142217, 2, "fixed by the change for 19273 (fails without it)"},
	} {
		cfg := DefaultConfig(c.kind, c.seed)
		cfg.Crashes = c.crashes
		result, err := Run(cfg)
		require.NoError(t, err, "%v seed %d: %s", c.kind, c.seed, c.bug)
		require.Equal(t, c.crashes, result.Crashes, "%v seed %d", c.kind, c.seed)
	}
}
