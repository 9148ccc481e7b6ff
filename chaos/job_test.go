package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func fakeJob(t *testing.T, scenario string, pes int) jobSpec {
	t.Setenv(roleEnv, "launcher")
	t.Setenv(scenarioEnv, scenario)
	t.Setenv(pesEnv, strconv.Itoa(pes))
	return jobSpec{Exe: os.Args[0], Deadline: 2 * time.Minute, RunTime: time.Second}
}

// gone reports that process pid has ended (it no longer exists, or is a
// zombie waiting for its new parent to reap it).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// TestJobRecoveryKill: the campaign kills PE 0 at the start, then PE 1 as
// soon as the launcher announces the first failure; the job then ends
// normally.
func TestJobRecoveryKill(t *testing.T) {
	spec := fakeJob(t, "recovery", 2)
	spec.Failures = []Failure{
		{PE: 0, Signal: SigKill, Trigger: AtTime, Fraction: 0},
		{PE: 1, Signal: SigKill, Trigger: AtRecovery, Recovery: 1},
	}
	res, err := runJob(context.Background(), spec)
	require.NoError(t, err)
	require.False(t, res.TimedOut, "%q", res.Output)
	require.Zero(t, res.ExitCode)
	require.Equal(t, 2, res.FailureNotices)
	require.Empty(t, res.Missed)
	require.Len(t, res.Injected, 2, "%q", res.Injected)
	require.Contains(t, res.Injected[0], "SIGKILL pe 0 at 0%")
	require.Contains(t, res.Injected[1], "SIGKILL pe 1 0 ms after failure 1")
	require.Len(t, res.PIDs, 2)
	require.Positive(t, res.RunTime)
	d, err := Digest(res.Stdout)
	require.NoError(t, err)
	require.Equal(t, "feed", d)
}

// TestJobLoggerThenPE: the campaign finds the logger's pid in the
// launcher's "started loggers" line, kills it at a moment, and kills a PE
// once the launcher announces the logger's failure; the job then ends.
func TestJobLoggerThenPE(t *testing.T) {
	spec := fakeJob(t, "logger", 2)
	spec.Loggers = 1
	spec.Failures = []Failure{
		{PE: 0, Logger: true, Signal: SigKill, Trigger: AtTime, Fraction: 0},
		{PE: 1, Signal: SigKill, Trigger: AtLoggerFailure, DelayMS: 10},
		{PE: 0, Signal: SigKill, Trigger: AtRecovery, Recovery: 1},
	}
	res, err := runJob(context.Background(), spec)
	require.NoError(t, err)
	require.False(t, res.TimedOut, "%q", res.Output)
	require.Zero(t, res.ExitCode)
	require.Empty(t, res.Missed)
	require.Len(t, res.LoggerPIDs, 1)
	require.Equal(t, 1, res.LoggerFailureNotices)
	require.Equal(t, 2, res.FailureNotices, "the logger's failure is not a PE's")
	require.Len(t, res.Injected, 3, "%q", res.Injected)
	require.Contains(t, res.Injected[0], fmt.Sprintf("SIGKILL logger 0 at 0%% of the failure-free run time (pid %d)", res.LoggerPIDs[0]))
	require.Contains(t, res.Injected[1], fmt.Sprintf("SIGKILL pe 1 10 ms after a logger's failure is announced (pid %d)", res.PIDs[1]))
	require.Contains(t, res.Injected[2], "SIGKILL pe 0 0 ms after failure 1")
	require.True(t, gone(res.LoggerPIDs[0]))
}

// TestJobHang: a job past its deadline is a hang; its PEs are asked for
// goroutine dumps, then everything is killed: no process is left.
func TestJobHang(t *testing.T) {
	spec := fakeJob(t, "hang", 2)
	// Long enough for the fake launcher to start its two PEs and print
	// its lines on a loaded machine (under -race, each is a new process
	// of this test binary).
	spec.Deadline = 10 * time.Second
	spec.Dump = true
	// A PE stopped for good still dumps (it gets SIGCONT after SIGQUIT).
	spec.Failures = []Failure{{PE: 1, Signal: SigStop, Trigger: AtTime, Fraction: 0}}
	res, err := runJob(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Len(t, res.PIDs, 2)
	require.Equal(t, 2, res.StderrAtDeadline, "%q", res.Stderr)
	require.Zero(t, res.FailureNotices, "the PEs ended by the campaign after the deadline are not failures of the job")
	require.Equal(t, 2, strings.Count(strings.Join(res.Stderr, "\n"), "SIGQUIT: quit"), "both PEs dump their goroutines: %q %q", res.Injected, res.Output)
	for _, pid := range res.PIDs {
		require.Eventually(t, func() bool { return gone(pid) }, time.Minute, 20*time.Millisecond, "PE pid %d left running", pid)
	}
	c, _, detail := Classify(res.Outcome, "feed")
	require.Equal(t, Hang, c)
	require.Contains(t, detail, "job begins", "the last line before the deadline")
}

// TestJobPause: a PE stopped and continued; the fake PE ends when it is
// continued, so the job ends only if the campaign resumed it.
func TestJobPause(t *testing.T) {
	spec := fakeJob(t, "pause", 1)
	spec.Failures = []Failure{{PE: 0, Signal: SigStop, Trigger: AtTime, Fraction: 0, ResumeMS: 100}}
	spec.Deadline = 5 * time.Second
	res, err := runJob(context.Background(), spec)
	require.NoError(t, err)
	require.False(t, res.TimedOut, "%q %q %q", res.Injected, res.Missed, res.Output)
	require.Zero(t, res.ExitCode)
	require.Len(t, res.Injected, 2, "%q", res.Injected)
	require.Contains(t, res.Injected[0], "SIGSTOP pe 0")
	require.Contains(t, res.Injected[1], "SIGCONT pe 0")
}

// TestJobSignalsOnlyTheLaunchersChildren: a pid in the launcher's list that
// is not its child is never signalled.
func TestJobSignalsOnlyTheLaunchersChildren(t *testing.T) {
	impostor := exec.Command(os.Args[0])
	impostor.Env = append(os.Environ(), roleEnv+"=pe")
	require.NoError(t, impostor.Start())
	t.Cleanup(func() {
		impostor.Process.Kill()
		impostor.Wait()
	})
	spec := fakeJob(t, "impostor", 1)
	t.Setenv(impostorEnv, strconv.Itoa(impostor.Process.Pid))
	spec.Failures = []Failure{
		{PE: 0, Signal: SigKill, Trigger: AtTime, Fraction: 0},
		{PE: 1, Signal: SigKill, Trigger: AtTime, Fraction: 0},
	}
	res, err := runJob(context.Background(), spec)
	require.NoError(t, err)
	require.False(t, res.TimedOut)
	require.Len(t, res.Missed, 1, "%q", res.Missed)
	require.Contains(t, res.Missed[0], "SIGKILL pe 0")
	require.Contains(t, res.Missed[0], "the process is gone")
	require.Len(t, res.Injected, 1)
	require.Contains(t, res.Injected[0], "SIGKILL pe 1")
	require.NoError(t, impostor.Process.Signal(syscall.Signal(0)), "the impostor was signalled")
	require.False(t, gone(impostor.Process.Pid))
}

// TestJobMissed: a failure planned after the job's end is reported as
// missed, and one at a recovery that never comes too.
func TestJobMissed(t *testing.T) {
	spec := fakeJob(t, "recovery", 1)
	spec.RunTime = time.Hour
	spec.Failures = []Failure{
		{PE: 0, Signal: SigKill, Trigger: AtTime, Fraction: 0},
		{PE: 0, Signal: SigStop, Trigger: AtTime, Fraction: 0.99},
		{PE: 0, Signal: SigKill, Trigger: AtRecovery, Recovery: 2},
	}
	res, err := runJob(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Injected, 1)
	require.Len(t, res.Missed, 2, "%q", res.Missed)
	for _, m := range res.Missed {
		require.Contains(t, m, "the job ended first")
	}
}

// TestJobInterrupted: a cancelled context stops the job and says so.
func TestJobInterrupted(t *testing.T) {
	spec := fakeJob(t, "hang", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := runJob(ctx, spec)
	require.NoError(t, err)
	require.True(t, res.Interrupted)
	require.False(t, res.TimedOut)
	for _, pid := range res.PIDs {
		require.Eventually(t, func() bool { return gone(pid) }, time.Minute, 20*time.Millisecond)
	}
}
