package sim

import (
	"bytes"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
)

// faultOn returns a tamper that applies fault to the nth observation of
// kind on PE rank (from 1) and takes it as many times as fault says.
func faultOn(rank int, kind scheduler.ObservationKind, nth int, fault func(o *scheduler.Observation) int) func(int, *scheduler.Observation) int {
	seen := 0
	return func(r int, o *scheduler.Observation) int {
		if r != rank || o.Kind != kind {
			return 1
		}
		seen++
		if seen != nth {
			return 1
		}
		return fault(o)
	}
}

func runStencil(t *testing.T, cfg Config) Result {
	t.Helper()
	wl := stencil()
	cfg.App, cfg.Args = wl.App, wl.Args
	if cfg.PEs == 0 {
		cfg.PEs = 3
	}
	res, err := Run(cfg)
	require.NoError(t, err)
	return res
}

// The final histories are read from what the PEs tell: a run with
// failures, migrations and replay passes, and holds what the checks
// read.
func TestHistoriesOfARun(t *testing.T) {
	clean := runStencil(t, Config{})
	require.NoError(t, clean.Err)
	cfg := Config{Protocol: logging.KindFullDet, CheckpointEvery: 1, Balancer: "greedy",
		Faults: []Fault{{PE: 1, AtStep: 4}}}
	res := runStencil(t, cfg)
	_, err := Check(cfg, res, clean)
	require.NoError(t, err)
	require.Equal(t, 1, res.Recoveries)
	migrated := 0
	for _, st := range res.Stats {
		migrated += st.MigratedIn
	}
	require.Positive(t, migrated, "tasks moved: the final placement is not the failure-free run's")
	require.Equal(t, len(clean.States), len(res.States))
	require.Greater(t, len(clean.States), 8, "every chunk, the main task and the reducers")
	require.Empty(t, res.HandledTwice)
	require.Empty(t, res.Orphans)
	require.Empty(t, res.Misplaced)
	handled := 0
	for ref, n := range clean.Deeds {
		if ref.Collection == 1 {
			require.Positive(t, n.Handled, "chunk %v", ref)
		}
		handled += n.Handled
	}
	require.Greater(t, res.Observed, handled, "the failed run re-executed what the failure undid")
}

// Each check of the final histories fails when what it checks is
// broken: a handler run twice for one message, a message handled that
// its sender's final execution did not send, or sent with other
// contents, a task set from a record no PE made.
func TestHistoryChecksCatch(t *testing.T) {
	clean := runStencil(t, Config{})
	require.NoError(t, clean.Err)
	check := func(cfg Config) error {
		res := runStencil(t, cfg)
		require.NoError(t, res.Err)
		_, err := Check(cfg, res, clean)
		return err
	}
	require.NoError(t, check(Config{Protocol: logging.KindPartialDet, CheckpointEvery: 2}))

	// A handler runs twice for the 20th message PE 1 handles.
	err := check(Config{Protocol: logging.KindPartialDet, CheckpointEvery: 2,
		tamper: faultOn(1, scheduler.ObserveHandle, 20, func(*scheduler.Observation) int { return 2 })})
	require.ErrorIs(t, err, ErrCheck)
	require.ErrorContains(t, err, "handled twice")

	// A message handled whose send its sender's history lacks.
	err = check(Config{Protocol: logging.KindPartialDet, CheckpointEvery: 2,
		tamper: faultOn(2, scheduler.ObserveSend, 30, func(*scheduler.Observation) int { return 0 })})
	require.ErrorIs(t, err, ErrCheck)
	require.ErrorContains(t, err, "orphan")
	require.ErrorContains(t, err, "did not send")

	// A message handled that its sender sent with other contents.
	err = check(Config{Protocol: logging.KindPartialDet, CheckpointEvery: 2,
		tamper: faultOn(0, scheduler.ObserveSend, 30, func(o *scheduler.Observation) int {
			o.Message.Payload = append(bytes.Clone(o.Message.Payload), 1)
			return 1
		})})
	require.ErrorIs(t, err, ErrCheck)
	require.ErrorContains(t, err, "other contents")

	// A failure: PE 1's tasks are restored from records another PE
	// kept; one of those records never made.
	faulty := Config{Protocol: logging.KindFullDet, CheckpointEvery: 1, Faults: []Fault{{PE: 1, AtStep: 4}}}
	require.NoError(t, check(faulty))
	faulty.tamper = func(r int, o *scheduler.Observation) int {
		if r == 1 && o.Kind == scheduler.ObservePack {
			return 0
		}
		return 1
	}
	err = check(faulty)
	require.ErrorIs(t, err, ErrCheck)
	require.ErrorContains(t, err, "from a record no PE made")
}

// The final states are compared task by task: a changed state, a task
// missing, are caught; a task behind (the job ended while it
// re-executed what a failure undid) is not a difference, and only in a
// run where a PE died; the wall time of Start in the main task is the
// one part of a state not compared.
func TestStateCheckCatches(t *testing.T) {
	clean := runStencil(t, Config{})
	require.NoError(t, clean.Err)
	res := runStencil(t, Config{Protocol: logging.KindPartialDet, CheckpointEvery: 2, Balancer: "refine"})
	_, err := Check(Config{}, res, clean)
	require.NoError(t, err)

	with := func(change func(states map[migrate.TaskRef][]byte, deeds map[migrate.TaskRef]Deeds)) Result {
		r := res
		r.States, r.Deeds = maps.Clone(res.States), maps.Clone(res.Deeds)
		for ref, s := range r.States {
			r.States[ref] = bytes.Clone(s)
		}
		change(r.States, r.Deeds)
		return r
	}
	chunk := migrate.TaskRef{Collection: 1, Lin: 3}
	main := migrate.TaskRef{Collection: 0, Lin: 0}
	require.Contains(t, res.States, chunk)

	changed := with(func(s map[migrate.TaskRef][]byte, _ map[migrate.TaskRef]Deeds) { s[chunk][len(s[chunk])/2] ^= 1 })
	_, err = Check(Config{}, changed, clean)
	require.ErrorIs(t, err, ErrCheck)
	require.ErrorContains(t, err, "final task states differ")
	_, err = Check(Config{OrderDependentStates: true}, changed, clean)
	require.NoError(t, err, "a program whose states depend on the order of receptions")

	missing := with(func(s map[migrate.TaskRef][]byte, _ map[migrate.TaskRef]Deeds) { delete(s, chunk) })
	_, err = Check(Config{}, missing, clean)
	require.ErrorContains(t, err, "is on no live PE")

	behind := with(func(s map[migrate.TaskRef][]byte, d map[migrate.TaskRef]Deeds) {
		s[chunk][len(s[chunk])/2] ^= 1
		d[chunk] = Deeds{Sent: d[chunk].Sent, Handled: d[chunk].Handled - 1}
	})
	_, err = Check(Config{}, behind, clean)
	require.ErrorContains(t, err, "final task states differ", "no PE died: no task can be behind")
	behind.Dead = []bool{false, true, false}
	_, err = Check(Config{}, behind, clean)
	require.NoError(t, err)

	startedAt := with(func(s map[migrate.TaskRef][]byte, _ map[migrate.TaskRef]Deeds) {
		require.Equal(t, appkitMain, string(s[main][:len(appkitMain)]))
		s[main][len(appkitMain)+1] ^= 1
	})
	_, err = Check(Config{}, startedAt, clean)
	require.ErrorContains(t, err, "final task states differ", "the check sees the main task's state")
	// The run masked its own wall time of Start.
	require.Equal(t, res.States[main], maskStartTime(bytes.Clone(res.States[main])))
	require.Equal(t, clean.States[main], res.States[main])
}
