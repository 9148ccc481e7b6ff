package launcher

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/stretchr/testify/require"
)

// A PE killed while the launcher collects the PEs' stats at the job's end
// is said (the late-failure line), and the launcher stops waiting for
// its stats. Before, collectStats read the process's report and
// dropped it: the kill went unannounced and the launcher waited out its
// 3 s deadline (the chaos campaign's "kill with no failure announced").
func TestPEKilledWhileStatsAreCollectedIsSaid(t *testing.T) {
	var logs bytes.Buffer
	c := newCoordinator(coordinatorConfig{Size: 3, Spawned: []bool{true, true, true}, Log: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	for r := range 3 {
		c.peers[r] = &peer{rank: r}
	}
	// A process killed by SIGKILL, for its exit state.
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	killed := cmd.ProcessState
	// An ended one, for a PE that leaves normally after its stats.
	ok := exec.Command("true")
	require.NoError(t, ok.Run())

	c.events <- evMessage{rank: 0, peer: c.peers[0], msg: &controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Stats{Stats: &controlpb.PEStats{Delivered: 5}}}}
	c.events <- processExited{rank: 0, pid: 100, state: ok.ProcessState}
	c.events <- processExited{rank: 2, pid: 102, state: killed}
	c.events <- evLost{rank: 2, peer: c.peers[2], err: io.EOF}
	c.events <- evMessage{rank: 1, peer: c.peers[1], msg: &controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Stats{Stats: &controlpb.PEStats{Delivered: 7}}}}

	done := make(chan struct{})
	go func() {
		c.collectStats(context.Background(), []bool{true, true, true})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("collectStats did not return")
	}
	require.Contains(t, logs.String(), `msg="PE failed after the job's exit was requested; the job ends as decided" pe=2`)
	require.NotContains(t, logs.String(), "pe=0 detail", "a PE that ended by itself is no failure")
	require.Contains(t, logs.String(), `msg="job stats" ft=none stats_from_pes=2 handled=12 `)
	require.Contains(t, logs.String(), `msg="PE stats missing: the job stats below leave out these PEs, which exited without them or did not send them in time" pes=[2]`)
}

// The job's totals never pass off the counters of some PEs as the
// job's: a live PE whose stats do not come within the wait is named,
// and the totals say how many PEs they sum.
func TestMissingStatsAreSaid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := newCoordinator(coordinatorConfig{Size: 3, Spawned: []bool{true, true, true}, Log: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
		for r := range 3 {
			c.peers[r] = &peer{rank: r}
		}
		c.events <- evMessage{rank: 0, peer: c.peers[0], msg: &controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Stats{Stats: &controlpb.PEStats{Delivered: 5, LoggedBytes: 100}}}}
		c.events <- evMessage{rank: 2, peer: c.peers[2], msg: &controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Stats{Stats: &controlpb.PEStats{Delivered: 7, LoggedBytes: 50}}}}
		start := time.Now()
		c.collectStats(context.Background(), []bool{true, true, true})
		require.Equal(t, statsWait, time.Since(start), "PE 1 is waited for, up to statsWait")
		require.Contains(t, logs.String(), `pes=[1]`)
		require.Contains(t, logs.String(), `msg="job stats" ft=none stats_from_pes=2 handled=12 determinants=0 piggybacked_bytes=0 log_bytes=150 `)
	})
}

// A PE's process may be seen to exit before its counters, sent just
// before, are read from its connection: the wait for them ends with the
// connection, not the process.
func TestStatsAfterTheExitAreCounted(t *testing.T) {
	var logs bytes.Buffer
	c := newCoordinator(coordinatorConfig{Size: 2, Spawned: []bool{true, true}, Log: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	for r := range 2 {
		c.peers[r] = &peer{rank: r}
	}
	ended := exec.Command("true")
	require.NoError(t, ended.Run())
	for r := range 2 {
		c.events <- processExited{rank: r, pid: 100 + r, state: ended.ProcessState}
	}
	for r := range 2 {
		c.events <- evMessage{rank: r, peer: c.peers[r], msg: &controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Stats{Stats: &controlpb.PEStats{Delivered: 5, LoggedBytes: 100}}}}
		c.events <- evLost{rank: r, peer: c.peers[r], err: io.EOF}
	}
	c.collectStats(context.Background(), []bool{true, true})
	require.Contains(t, logs.String(), `msg="job stats" ft=none stats_from_pes=2 handled=10 determinants=0 piggybacked_bytes=0 log_bytes=200 `)
	require.NotContains(t, logs.String(), "PE stats missing")
}
