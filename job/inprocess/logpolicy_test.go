package inprocess_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// Under the default policy (no checkpoint period, a log limit) a job whose
// PEs log several times the limit checkpoints whenever a log reaches it:
// the log a PE holds stays below the limit plus what it sends between two
// sync points, sync points below the limit resume without a checkpoint,
// and the result is the reference one.
func TestLogLimitBoundsTheSenderLog(t *testing.T) {
	const (
		pes        = 2
		iterations = 100
		limit      = 1 << 20
	)
	args := []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", "100"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var debug strings.Builder
	res, err := inprocess.Run(ctx, stencil3d.App, args, pes, nil,
		inprocess.WithProtocol(logging.KindPartialDet), inprocess.WithLogLimit(limit), inprocess.WithDebug(&debug))
	require.NoError(t, err)
	require.Equal(t, 0, res.Status)
	require.Contains(t, res.Output, "reference: match")
	checkpoints := strings.Count(debug.String(), "staged and copied to buddies")
	for pe, s := range res.Stats {
		logged := s.Protocol.LoggedBytes
		perPeriod := logged / iterations * job.DefaultSyncEvery
		require.Greater(t, logged, 4*limit, "PE %d logs several times the limit over the run", pe)
		require.Less(t, s.Protocol.PeakLogBytes, limit+perPeriod, "PE %d's largest log", pe)
	}
	syncPoints := iterations / job.DefaultSyncEvery
	require.Greater(t, checkpoints, 2, "the initial checkpoint and more")
	require.Less(t, checkpoints, 1+syncPoints, "some sync points resumed without a checkpoint")
}

// A PE that fails after sync points the coordinator resumed without a
// checkpoint: its tasks, restored from the checkpoint before them, reach
// those sync points again while re-executing and resume by themselves, as
// the first time; the job ends with the reference result. Under PartialDet
// (replay) and with more failures than f (every task rolled back).
func TestLogLimitRecoveryCrossesResumedSyncPoints(t *testing.T) {
	args := []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", "100"}
	for _, kill := range []uint64{35, 75} {
		for _, pes := range []int{2, 3} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			var debug strings.Builder
			opts := []inprocess.Option{inprocess.WithProtocol(logging.KindPartialDet), inprocess.WithLogLimit(3 << 20), inprocess.WithDebug(&debug), inprocess.WithKill(1, kill)}
			res, err := inprocess.Run(ctx, stencil3d.App, args, pes, nil, opts...)
			cancel()
			require.NoError(t, err, "kill at step %d, %d PEs:\n%s", kill, pes, debug.String())
			require.Equal(t, 0, res.Status)
			require.Contains(t, res.Output, "reference: match", "kill at step %d, %d PEs", kill, pes)
			var restored int
			for _, s := range res.Stats {
				restored += s.Restored
			}
			require.Positive(t, restored, "kill at step %d, %d PEs: tasks were restored", kill, pes)
		}
	}
}

// A task restored on a PE that had no task at the sync points the job
// passed without a checkpoint (here PE 2 of 3, as the job has 2 tasks):
// that PE learnt the steps passed from the coordinator's Resume, not from
// tasks of its own, and the restored task passes them by itself while it
// re-executes. (When each PE took the step from its own waiting tasks,
// the task waited there alone and the job stopped with ErrNotAllAtSync.)
func TestLogLimitRestoreOnAPEWithoutSyncTasks(t *testing.T) {
	args := []string{"--grid", "32,16,16", "--chunk", "16,16,16", "--iterations", "100"}
	restoredOn2 := false
	for _, failed := range []int{0, 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var debug strings.Builder
		opts := []inprocess.Option{inprocess.WithProtocol(logging.KindFullDet), inprocess.WithLogLimit(1 << 30), inprocess.WithDebug(&debug), inprocess.WithKill(failed, 75)}
		res, err := inprocess.Run(ctx, stencil3d.App, args, 3, nil, opts...)
		cancel()
		require.NoError(t, err, "PE %d killed:\n%s", failed, debug.String())
		require.Equal(t, 0, res.Status)
		require.Contains(t, res.Output, "reference: match", "PE %d killed", failed)
		require.Equal(t, 1, strings.Count(debug.String(), "staged and copied to buddies"), "only the initial checkpoint: every sync point passed without one")
		restoredOn2 = restoredOn2 || res.Stats[2].Restored > 0
	}
	require.True(t, restoredOn2, "a task was restored on PE 2, which had none")
}
