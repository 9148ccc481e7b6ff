package scale

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

func TestPEGrid(t *testing.T) {
	for n, want := range map[int][3]int{1: {1, 1, 1}, 8: {2, 2, 2}, 12: {3, 2, 2}, 1024: {16, 8, 8}, 131072: {64, 64, 32}, 7: {7, 1, 1}} {
		require.Equal(t, want, PEGrid(n), "%d PEs", n)
	}
}

// Under weak scaling a PE creates as many determinants and logs as many
// bytes per step at every job size (the model runs every PE); the
// records it piggybacks and stores grow with the job, since a record
// travels on until it is stored on f PEs besides its creator.
func TestWeakScalingPerPE(t *testing.T) {
	var prev Figures
	for i, n := range []int{8, 64} {
		pat, err := WeakStencil(n, [3]int{1, 1, 2}, [3]int{8, 8, 8})
		require.NoError(t, err)
		f, err := Measure(pat, logging.KindFullDet, 4, false)
		require.NoError(t, err)
		require.Equal(t, 12.0, f.Determinants.Mean, "two chunks, six faces each per step")
		require.Equal(t, f.Determinants.Mean, f.Determinants.Max)
		if i > 0 {
			require.Equal(t, prev.Determinants, f.Determinants)
			require.Equal(t, prev.LogBytes, f.LogBytes)
			require.Greater(t, f.Stored.Mean, prev.Stored.Mean, "more PEs: more determinants reach each one")
		}
		prev = f
	}
}

// After a failure every survivor sends one recovery envelope to each
// restored task, and the restored tasks replay to the end of the period
// (Measure fails otherwise); the survivors resend the logged messages
// that went to the failed PE's tasks: its neighbours' faces, whatever
// the job's size.
func TestFailureRecovery(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
		var resent int
		for i, n := range []int{8, 27} {
			pat, err := NewStencil(n, [3]int{n, 3, 3}, [3]int{8, 8, 8})
			require.NoError(t, err)
			f, err := Measure(pat, kind, 3, true)
			require.NoError(t, err)
			require.Equal(t, 9, f.Relocated, "a PE holds a 1x3x3 slab")
			require.Equal(t, (n-1)*f.Relocated, f.Recovery.RecoveryEnvelopes)
			require.Positive(t, f.ReplayRounds)
			// Each restored chunk gets its six faces of each of the three
			// steps again, but those its slab sent itself (the four in y
			// and z).
			require.Equal(t, 9*2*3, f.Recovery.Resent, "%d PEs", n)
			if i > 0 {
				require.Equal(t, resent, f.Recovery.Resent)
			}
			resent = f.Recovery.Resent
		}
	}
}

// The real coordinator exchanges three messages with each PE per
// checkpoint and per failure (checkpoint: TakeCheckpoint, Commit,
// Begin out and Staged, BuddyStored, Committed in; failure: Recover,
// NoticeFailure, WatchProgress out and Restored, BuddyStored, Reached
// in), and two per quiescence round: every one of them a message to or
// from every PE.
func TestCoordinatorMessages(t *testing.T) {
	for _, n := range []int{4, 64, 1000} {
		r, err := CoordinatorFailure(n, 2, n/2, logging.KindPartialDet)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"TakeCheckpoint": n, "CommitCheckpoint": n, "Begin": n}, r.Checkpoint.Out)
		require.Equal(t, map[string]int{"Staged": n, "BuddyStored": n, "Committed": n}, r.Checkpoint.In)
		require.Equal(t, map[string]int{"Probe": n}, r.Quiescence.Out)
		require.Equal(t, map[string]int{"Idle": n}, r.Quiescence.In)
		require.Equal(t, map[string]int{"Recover": n - 1, "NoticeFailure": n - 1, "WatchProgress": n - 1}, r.Recovery.Out)
		require.Equal(t, map[string]int{"Restored": n - 1, "BuddyStored": n - 1, "Reached": n - 1}, r.Recovery.In)
		require.Equal(t, 2, r.Relocated)
	}
	_, err := CoordinatorFailure(1, 2, 0, logging.KindPartialDet)
	require.ErrorIs(t, err, ErrConfig)
}

// A restored task delivers once every survivor's recovery envelope is
// in (RecoveryIntake checks it and fails otherwise).
func TestRecoveryIntake(t *testing.T) {
	for _, n := range []int{3, 64} {
		_, err := RecoveryIntake(n, logging.KindPartialDet)
		require.NoError(t, err)
	}
	_, err := RecoveryIntake(2, logging.KindPartialDet)
	require.ErrorIs(t, err, ErrConfig)
}

func TestBadPatterns(t *testing.T) {
	_, err := NewStencil(9, [3]int{2, 2, 2}, [3]int{8, 8, 8})
	require.ErrorIs(t, err, ErrConfig, "fewer chunks than PEs")
	_, err = NewLeanMD(4, [3]int{2, 2, 2}, [3]int{2, 2, 1}, 10)
	require.ErrorIs(t, err, ErrConfig, "fewer cells than the k-away factor needs")
	_, err = NewLulesh(4, [3]int{1, 1, 2}, 4)
	require.ErrorIs(t, err, ErrConfig)
}
