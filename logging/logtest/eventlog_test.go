package logtest

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
)

// elSweepConfig is the run of one event logger sweep seed: 5 PEs, one or
// two loggers, one to three PE crashes (for a third of the seeds all at
// once, named by one failure notice), and a logger crash for one seed in
// five.
func elSweepConfig(kind logging.Kind, seed uint64) Config {
	cfg := DefaultConfig(kind, seed)
	cfg.PEs, cfg.Tasks = 5, 8
	cfg.EventLogger = true
	cfg.Loggers = 1 + int(seed/6%2)
	cfg.Crashes = 1 + int(seed%3)
	cfg.Simultaneous = seed/3%2 == 0
	if seed%5 == 4 {
		cfg.LoggerCrashes = 1
	}
	if *crashesFlag > 0 {
		cfg.Crashes = *crashesFlag
	}
	return cfg
}

// TestSimulatorEventLoggerSeeds runs FullDet and PartialDet with event
// loggers under crashes, reordering and duplication: any number of PE
// crashes since a checkpoint is recovered (three at once included) with
// the failure-free digest, and a run stops only where a PE fails after a
// logger in one checkpoint period (the job rolls back there) or a
// restored task waits for a dead logger's answer (the job stops).
func TestSimulatorEventLoggerSeeds(t *testing.T) {
	for _, kind := range kinds[1:] {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			if *seedFlag >= 0 {
				result, err := runTraced(t, elSweepConfig(kind, uint64(*seedFlag)))
				require.NoError(t, err, "seed %d", *seedFlag)
				t.Logf("%+v", result)
				return
			}
			seeds := max(seedCount()/5, 200)
			var failures, thrice, thriceAtOnce, joint, stopped, loggerSurvived, loggerAfterPE, recovered int
			var withEL logging.Stats
			for seed := range uint64(seeds) {
				cfg := elSweepConfig(kind, seed)
				result, err := Run(cfg)
				if err == nil && result.Stopped != nil && result.LoggerCrashes == 0 {
					err = fmt.Errorf("stopped without a logger failure: %w", result.Stopped)
				}
				if err != nil {
					failures++
					if failures <= 5 {
						t.Errorf("%v seed %d: %v\nreplay: go test ./logging/logtest -run 'TestSimulatorEventLoggerSeeds/%v' -seed %d -v",
							kind, seed, err, kind, seed)
					}
					continue
				}
				if result.Stopped != nil {
					require.ErrorIs(t, result.Stopped, logging.ErrEventLogLost)
					stopped++
					continue
				}
				if result.Crashes > 0 {
					recovered++
				}
				if result.LoggerCrashes > 0 {
					loggerSurvived++
					if result.Crashes > 0 {
						loggerAfterPE++
					}
				}
				if result.Crashes == 3 {
					thrice++
					if cfg.Simultaneous && result.JointNotices > 0 {
						thriceAtOnce++
					}
				}
				if result.JointNotices > 0 {
					joint++
				}
				withEL.PiggybackedBytes += result.Stats.PiggybackedBytes
				withEL.EventLogRecords += result.Stats.EventLogRecords
			}
			t.Logf("%v: %d seeds, %d recovered from crashes, %d from three (%d named by one notice), %d joint notices; %d survived a logger crash (%d of them with PE crashes), %d stopped at a PE and a logger failure in one period; %d failed; %d piggybacked bytes, %d records logged",
				kind, seeds, recovered, thrice, thriceAtOnce, joint, loggerSurvived, loggerAfterPE, stopped, failures, withEL.PiggybackedBytes, withEL.EventLogRecords)
			require.Zero(t, failures, "failing seeds")
			require.Greater(t, recovered, seeds/2, "most runs recover from crashes")
			require.Positive(t, thriceAtOnce, "some runs recover from three crashes named by one failure notice")
			require.Positive(t, loggerSurvived, "some runs end correctly after a logger crash")
			require.Positive(t, loggerAfterPE, "some runs end correctly with PE crashes and a logger crash")
			require.Positive(t, stopped, "some runs see a PE and a logger fail in one period")
			require.Positive(t, withEL.EventLogRecords, "records go to the loggers")
		})
	}
}

// TestEventLoggerCutsPiggyback: with an event logger, fewer records ride
// on application envelopes than under f = 2 in failure-free runs (the
// simulator delays the loggers' acknowledgements like envelopes, so this
// is no measure of the cut on a real job: docs/benchmarks.md), and the
// result is the same.
func TestEventLoggerCutsPiggyback(t *testing.T) {
	for _, kind := range kinds[1:] {
		var with, without int
		for seed := range uint64(100) {
			cfg := DefaultConfig(kind, seed)
			cfg.Crashes = 0
			cfg.OrderDependent = false
			base, err := Run(cfg)
			require.NoError(t, err)
			cfg.EventLogger = true
			el, err := Run(cfg)
			require.NoError(t, err)
			require.Equal(t, base.Digests, el.Digests, "%v seed %d", kind, seed)
			without += base.Stats.PiggybackedDeterminants + base.Stats.ProgressRecords
			with += el.Stats.PiggybackedDeterminants + el.Stats.ProgressRecords
		}
		t.Logf("%v: %d records piggybacked with the event logger, %d without (%.1f %%)", kind, with, without, 100*float64(with)/float64(without))
		require.Positive(t, without)
		require.Less(t, with, without, "%v: the event logger cuts the piggyback", kind)
	}
}
