package launcher

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stencilArgs is a Stencil3D job small enough for CI: 27 chunks on 4 PEs,
// a sync point every 10 sweeps.
var stencilArgs = []string{"run", "stencil3d", "--pes", "4", "--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "60", "--checkpoint-every", "10"}

var (
	digestLine   = regexp.MustCompile(`^job digest ([0-9a-f]+)$`)
	peStatsLine  = regexp.MustCompile(`msg="PE stats" pe=(\d+) .*determinants=(\d+) .*restored_tasks=(\d+) rolled_back_tasks=(\d+)`)
	jobStatsLine = regexp.MustCompile(`msg="job stats" ft=(\w+) .*determinants=(\d+) .*restored_tasks=(\d+) rolled_back_tasks=(\d+)`)
	regainedLine = regexp.MustCompile(`msg="recovery report: progress at the failure regained" step=(\d+) catch_up_ms=(\d+) since_failure_ms=(\d+)`)
	summaryLine  = regexp.MustCompile(`msg="recovery 1 of 1: restore (\d+) ms, catch-up to the failure point \(step (\d+)\) (\d+) ms, failure → progress regained (\d+) ms, replay and catch-up to the next checkpoint (\d+) ms"`)
)

// regained checks the launcher's report that the job got back to where it
// was when PE 1 died at step 27: a chunk completes a step only with the
// faces its neighbours sent after completing the step before, and every
// chunk of PE 1 has a neighbour on another PE, so the survivors had
// offered step 26; nobody passes the sync point at step 29 before its
// checkpoint. The summary at the end repeats the times.
func regained(t *testing.T, j *job) {
	t.Helper()
	m := j.waitLine(t, regainedLine, 5*time.Second)
	step, _ := strconv.Atoi(m[1])
	catchUp, _ := strconv.Atoi(m[2])
	since, _ := strconv.Atoi(m[3])
	require.GreaterOrEqual(t, step, 26, m[0])
	require.LessOrEqual(t, step, 29, m[0])
	require.GreaterOrEqual(t, since, catchUp, "failure → regained includes the catch-up: %s", m[0])
	sum := j.waitLine(t, summaryLine, 5*time.Second)
	require.Equal(t, m[1], sum[2], sum[0])
	require.Equal(t, m[2], sum[3], sum[0])
	require.Equal(t, m[3], sum[4], sum[0])
}

type peStats struct{ determinants, restored, rolledBack int }

// stats reads the per-PE counters the launcher logs at the end.
func (j *job) stats(t *testing.T) map[int]peStats {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[int]peStats{}
	for _, l := range j.lines {
		if m := peStatsLine.FindStringSubmatch(l); m != nil {
			pe, _ := strconv.Atoi(m[1])
			d, _ := strconv.Atoi(m[2])
			r, _ := strconv.Atoi(m[3])
			b, _ := strconv.Atoi(m[4])
			out[pe] = peStats{d, r, b}
		}
	}
	return out
}

func cleanDigest(t *testing.T, args []string) string {
	t.Helper()
	j := startJob(t, args...)
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	return j.waitLine(t, digestLine, time.Second)[1]
}

// A real SIGKILL under each protocol: the job ends with the failure-free
// digest. Under the message-logging protocols the survivors do not roll
// back and the dead PE's tasks are restored on every survivor; under
// partialdet no determinant is ever recorded.
func TestRecoveryAfterSIGKILL(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	for _, ft := range []string{"partialdet", "fulldet", "none"} {
		t.Run(ft, func(t *testing.T) {
			j := startJob(t, append(stencilArgs, "--ft", ft, "--kill", "pe=1,at=step:27")...)
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 .*killed by signal 9`), time.Second)
			require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
			regained(t, j)
			job := j.waitLine(t, jobStatsLine, 5*time.Second)
			require.Equal(t, ft, job[1])
			st := j.stats(t)
			require.Len(t, st, 3, "the three survivors report their counters")
			if ft == "none" {
				require.NotEqual(t, "0", job[4], "checkpoint/restart rolls every task back")
				return
			}
			restoredOn := 0
			for pe, s := range st {
				require.Zero(t, s.rolledBack, "survivor PE %d must not roll back", pe)
				if s.restored > 0 {
					restoredOn++
				}
			}
			require.Equal(t, 3, restoredOn, "PE 1's tasks are restored on all three survivors")
			if ft == "partialdet" {
				require.Equal(t, "0", job[2], "Stencil3D needs no determinant")
			} else {
				require.NotEqual(t, "0", job[2])
			}
		})
	}
}

// A second PE dies while the first recovery replays, and two PEs that are
// not each other's buddy die at the same step: both runs end with the
// failure-free digest.
func TestRecoveryFromTwoFailures(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	for name, kills := range map[string][]string{
		"during recovery": {"pe=1,at=step:37", "pe=2,at=step:39"},
		"non-buddy pair":  {"pe=1,at=step:25", "pe=3,at=step:25"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string(nil), stencilArgs...)
			for _, k := range kills {
				args = append(args, "--kill", k)
			}
			j := startJob(t, args...)
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			for _, k := range kills {
				pe := regexp.MustCompile(`pe=(\d)`).FindStringSubmatch(k)[1]
				j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %s .*killed by signal 9`, pe)), time.Second)
			}
			require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
		})
	}
}

// A checkpoint written to disk by a job on 4 PEs restarts on 3 PEs and
// ends with the same digest.
func TestRestartFromDiskOnAnotherPECount(t *testing.T) {
	dir := t.TempDir()
	// The restarted jobs resume at iteration 50 and have 24 to go, time
	// enough for the kill 5 ms after the resumption to fire.
	args := []string{"run", "stencil3d", "--grid", "32,32,32", "--chunk", "8,8,8", "--iterations", "74", "--checkpoint-every", "25"}
	first := startJob(t, append(args, "--pes", "4", "--checkpoint-dir", dir)...)
	require.Equal(t, 0, first.wait(t, 2*time.Minute), first.output())
	want := first.waitLine(t, digestLine, time.Second)[1]

	again := startJob(t, append(args, "--pes", "3", "--restart", dir)...)
	require.Equal(t, 0, again.wait(t, 2*time.Minute), again.output())
	again.waitLine(t, regexp.MustCompile(`restarted from disk checkpoint.* epoch=3`), time.Second)
	require.Equal(t, want, again.waitLine(t, digestLine, time.Second)[1])

	// A restarted job resumes rather than begins: times after its start
	// count from then, and a time-based kill fires.
	killed := startJob(t, append(args, "--pes", "3", "--restart", dir, "--kill", "pe=1,after=5ms")...)
	require.Equal(t, 0, killed.wait(t, 2*time.Minute), killed.output())
	killed.waitLine(t, regexp.MustCompile(`job resumes from the disk checkpoint`), time.Second)
	m := killed.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 .*killed by signal 9.* after_begin_ms=(\d+)`), time.Second)
	ms, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Less(t, ms, 60_000, "after_begin_ms counts from the resumption: %s", m[0])
	require.Equal(t, want, killed.waitLine(t, digestLine, time.Second)[1])

	// Another application's checkpoint is refused before any PE starts.
	bad := startJob(t, "run", "stencil3d", "--pes", "2", "--grid", "16,16,16", "--chunk", "8,8,8", "--restart", dir)
	require.NotEqual(t, 0, bad.wait(t, time.Minute))
	bad.waitLine(t, regexp.MustCompile(`--restart: collection \d+ has \d+ tasks in the checkpoint`), time.Second)
}

// The load balancer moves tasks between PE processes at sync points; the
// digest is that of the run without moves, and still is with a PE killed
// after tasks moved.
func TestMigrationByLoadBalancer(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	for _, lb := range []string{"greedy", "refine"} {
		t.Run(lb, func(t *testing.T) {
			j := startJob(t, append(stencilArgs, "--lb", lb, "--kill", "pe=3,at=step:44")...)
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
			if lb == "greedy" {
				j.waitLine(t, regexp.MustCompile(`load balancing \(greedy\): [1-9]\d* tasks move`), time.Second)
			}
		})
	}
}

// --trace writes one Chrome trace with every PE's handlers and the
// launcher's checkpoint and recovery phases.
func TestTraceFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trace.json")
	j := startJob(t, append(stencilArgs, "--kill", "pe=1,at=step:15", "--trace", file)...)
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var trace struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(b, &trace))
	handlersOn := map[int]int{}
	names := map[string]bool{}
	for _, e := range trace.TraceEvents {
		if e.Cat == "handler" {
			handlersOn[e.PID]++
		}
		names[e.Name] = true
	}
	for _, pe := range []int{0, 2, 3} {
		require.Positive(t, handlersOn[pe], "handlers of surviving PE %d", pe)
	}
	for _, n := range []string{"checkpoint 1", "PE 1 failed", "restore", "catch-up to the failure point", "replay and catch-up",
		// The phases of a sync point and its checkpoint, on the PEs.
		"runtime.takeCheckpoint", "runtime.receiveCheckpoint", "runtime.commitCheckpoint", "runtime.resume"} {
		require.True(t, names[n], "trace has %q", n)
	}
	// And what the launcher told the PEs and heard from them.
	for _, prefix := range []string{"send job.Probe", "send job.TakeCheckpoint", "send job.CommitCheckpoint", "send job.Resume",
		"PE 0: *controlpb.ToCoordinator_Idle", "PE 0: *controlpb.ToCoordinator_Staged", "PE 0: *controlpb.ToCoordinator_Committed"} {
		found := false
		for n := range names {
			found = found || strings.HasPrefix(n, prefix)
		}
		require.True(t, found, "trace has %q...", prefix)
	}
	_, err = os.Stat(peTraceFile(file, 0))
	require.True(t, os.IsNotExist(err), "PE files are merged and removed")
}

// A PE and its buddy die at the same moment (SIGKILLed back to back, from
// outside): both in-memory copies of some checkpoint are gone. With
// --checkpoint-dir every task goes back to the latest disk checkpoint, on
// the two survivors, and the job ends with the failure-free digest, under
// each protocol; without it the job stops with an error that says so.
func TestBuddyPairFailureFallsBackToDisk(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	run := func(t *testing.T, extra ...string) *job {
		j := startJob(t, append(append([]string(nil), stencilArgs...), extra...)...)
		pids := parsePids(t, j.waitLine(t, pidsLine, time.Minute)[1])
		// After the third checkpoint (of step 19), which is on disk.
		j.waitLine(t, regexp.MustCompile(`checkpoint 3 staged`), time.Minute)
		require.NoError(t, syscall.Kill(pids[1], syscall.SIGKILL))
		require.NoError(t, syscall.Kill(pids[2], syscall.SIGKILL))
		return j
	}
	for _, ft := range []string{"partialdet", "none"} {
		t.Run(ft, func(t *testing.T) {
			j := run(t, "--ft", ft, "--checkpoint-dir", t.TempDir())
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			// Epoch 3 if its files were all written before the kills, else
			// epoch 2.
			j.waitLine(t, regexp.MustCompile(`recovery from disk: every task goes back to a disk checkpoint.* epoch=[23] `), time.Second)
			require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
		})
	}
	j := run(t)
	require.Equal(t, 1, j.wait(t, 3*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`unrecoverable from memory: .*; no disk checkpoint to fall back to \(run with --checkpoint-dir`), time.Second)
}
