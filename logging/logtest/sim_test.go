package logtest

import (
	"errors"
	"flag"
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

// TestRegressionSeeds replays the seeds that found protocol bugs.
func TestRegressionSeeds(t *testing.T) {
	for _, c := range []struct {
		kind    logging.Kind
		seed    uint64
		crashes int
		bug     string
	}{
		{logging.KindPartialDet, 7987, 1, "a replayed region took a message before the region message whose handler's send led to it"},
		{logging.KindFullDet, 2702, 2, "a recovery envelope of the first failure satisfied the wait for the second one's"},
		{logging.KindFullDet, 3841, 2, "a recovery envelope handed over a determinant without the unstable ones it depends on"},
		{logging.KindFullDet, 8222, 2, "fixed by the change for 3841 (fails without it)"},
		{logging.KindPartialDet, 3928, 2, "fixed by the change for 3841 (fails without it)"},
	} {
		cfg := DefaultConfig(c.kind, c.seed)
		cfg.Crashes = c.crashes
		result, err := Run(cfg)
		require.NoError(t, err, "%v seed %d: %s", c.kind, c.seed, c.bug)
		require.Equal(t, c.crashes, result.Crashes, "%v seed %d", c.kind, c.seed)
	}
}
