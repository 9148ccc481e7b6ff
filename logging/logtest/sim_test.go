package logtest

import (
	"errors"
	"flag"
	"testing"

	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
)

var (
	twoCrashFlag = flag.Bool("twocrash", false, "run the seed sweep with two crashes per run (known failures, see TestSimulatorSeeds)")
	seedFlag     = flag.Int64("seed", -1, "run only this simulator seed (with -v, trace it)")
	seedsFlag    = flag.Int("seeds", 0, "simulator seeds per protocol (default 10000, 300 under -race)")
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

func TestSimulatorSeeds(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			if *seedFlag >= 0 {
				cfg := DefaultConfig(kind, uint64(*seedFlag))
				if !*twoCrashFlag {
					cfg.Crashes = 1
				}
				result, err := runTraced(t, cfg)
				require.NoError(t, err, "seed %d", *seedFlag)
				t.Logf("%+v", result)
				return
			}
			crashes, failures := 0, 0
			for seed := range uint64(seedCount()) {
				cfg := DefaultConfig(kind, seed)
				if !*twoCrashFlag {
					cfg.Crashes = 1
				}
				result, err := Run(cfg)
				if err != nil {
					failures++
					if failures <= 5 {
						t.Errorf("%v seed %d: %v\nreplay: go test ./logging/logtest -run 'TestSimulatorSeeds/%v' -seed %d -v",
							kind, seed, err, kind, seed)
					}
					continue
				}
				crashes += result.Crashes
			}
			require.Zero(t, failures, "failing seeds")
			require.Greater(t, crashes, seedCount()/2, "most runs crash")
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

// TestReplayedRegionRespectsCausalOrder replays the seed that found a
// restored task taking a region message before the region message whose
// handler's send led to it (an orphan in the failure-free re-execution).
func TestReplayedRegionRespectsCausalOrder(t *testing.T) {
	cfg := DefaultConfig(logging.KindPartialDet, 7987)
	cfg.Crashes = 1
	result, err := Run(cfg)
	require.NoError(t, err)
	require.Equal(t, 1, result.Crashes)
}
