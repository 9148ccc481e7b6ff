package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// With a log quota at a quarter of the unbounded log's high-water mark,
// every PE keeps its log under the quota by dumping to the loggers, and
// the job's output is the unbounded one; with a logger that dies the
// PEs dump to the other one; with every logger dead the job stops with
// an error that says so.
func TestLogQuotaInProcess(t *testing.T) {
	const tasks, hops, pes = 16, 400, 2
	app := scheduler.StepApp(tasks, hops)
	runWith := func(opts ...inprocess.Option) (inprocess.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		return inprocess.Run(ctx, app, nil, pes, nil, append(opts, inprocess.WithProtocol(logging.KindFullDet))...)
	}
	ref, err := runWith()
	require.NoError(t, err)
	peak := 0
	for _, s := range ref.Stats {
		peak = max(peak, s.Protocol.PeakLogBytes)
	}
	require.Greater(t, peak, 4096)
	quota := peak / 4

	for _, tc := range []struct {
		name string
		dies func(logger, dumps int) bool
	}{
		{"loggers live", nil},
		{"logger 0 dies", func(l, n int) bool { return l == 0 && n == 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runWith(inprocess.WithLogQuota(quota, 2, tc.dies))
			require.NoError(t, err)
			require.Equal(t, ref.Output, res.Output)
			for r, s := range res.Stats {
				require.LessOrEqual(t, s.Protocol.PeakLogBytes, quota, "PE %d", r)
				require.Greater(t, s.LogDumpedBytes, 0, "PE %d", r)
				require.Equal(t, s.Protocol.LoggedBytes, ref.Stats[r].Protocol.LoggedBytes, "PE %d logs what it logs unbounded", r)
			}
		})
	}
	// A PE killed mid-run: the survivor resends what the restored tasks
	// need, fetching the entries it dumped back from the loggers.
	for _, tc := range []struct {
		name string
		opts []inprocess.Option
	}{
		{"PE 1 killed", []inprocess.Option{inprocess.WithKill(1, hops/2)}},
		{"PE 0 killed, checkpoints", []inprocess.Option{inprocess.WithKill(0, hops*3/4), inprocess.WithCheckpointEvery(hops / 3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runWith(append(tc.opts, inprocess.WithLogQuota(quota, 2, nil))...)
			require.NoError(t, err)
			require.Equal(t, ref.Output, res.Output)
			fetched := 0
			for _, s := range res.Stats {
				fetched += s.LogFetchedBytes
			}
			require.Positive(t, fetched, "the survivor fetched entries back")
		})
	}
	t.Run("a needed logger died", func(t *testing.T) {
		// Logger 1 holds PE 1's dumps and dies; PE 0 is killed, and PE 1
		// needs them: the job stops with an error that says so.
		_, err := runWith(inprocess.WithKill(0, hops/2), inprocess.WithLogQuota(quota, 2, func(l, n int) bool { return l == 1 && n == 4 }))
		require.ErrorIs(t, err, logging.ErrLogEntriesLost)
	})
	t.Run("every logger dies", func(t *testing.T) {
		_, err := runWith(inprocess.WithLogQuota(quota, 2, func(l, n int) bool { return n == 2 }))
		require.ErrorIs(t, err, logging.ErrNoLoggerLeft)
	})
	t.Run("bad configuration", func(t *testing.T) {
		_, err := runWith(inprocess.WithLogQuota(quota, 0, nil))
		require.ErrorIs(t, err, scheduler.ErrLogQuota)
		_, err = runWith(inprocess.WithLogQuota(-1, 1, nil))
		require.ErrorIs(t, err, scheduler.ErrLogQuota)
	})
}
