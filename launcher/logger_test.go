package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

var loggerPidsLine = regexp.MustCompile(`msg="started loggers" loggers=\d+ pids="?\[([0-9 ]+)\]`)

// leanmdLoggerArgs is a LeanMD run of some seconds on 3 PEs.
var leanmdDigest = regexp.MustCompile(`^digest: ([0-9a-f]{16})$`)

// leanmdDigests caches the failure-free digest of each LeanMD command.
var leanmdDigests sync.Map // strings.Join(args, " ") -> string

// leanmdDigestOf runs args (once per test process) and returns the
// digest LeanMD prints.
func leanmdDigestOf(t *testing.T, args []string) string {
	t.Helper()
	key := strings.Join(args, " ")
	if d, ok := leanmdDigests.Load(key); ok {
		return d.(string)
	}
	j := startJob(t, args...)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	d := j.waitLine(t, leanmdDigest, time.Second)[1]
	leanmdDigests.Store(key, d)
	return d
}

var leanmdLoggerArgs = []string{"run", "leanmd", "--pes", "3", "--cells", "3,3,3", "--steps", "100"}

// A logger SIGKILLed while the job runs is reported (how it ended, that
// the job goes on), and the job ends with the failure-free result; a PE
// killed after it is still recovered.
func TestKilledLoggerDoesNotChangeTheResult(t *testing.T) {
	want := leanmdDigestOf(t, leanmdLoggerArgs)
	j := startJob(t, append(leanmdLoggerArgs, "--loggers", "2")...)
	pes := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	require.Len(t, loggers, 2)
	j.waitLine(t, regexp.MustCompile(`job begins`), time.Minute)
	victim := loggers[1]
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`logger failed; the job goes on" detail="logger 1 \(pid %d on \S+\) was killed by signal 9.*loggers_left=1`, victim)), 30*time.Second)
	j.waitLine(t, regexp.MustCompile(`logger 1 failed \(1 of 2 left\): no log entry is dumped in this job, the job goes on`), 10*time.Second)
	require.NoError(t, syscall.Kill(pes[1], syscall.SIGKILL))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE 1 \(pid %d.*killed by signal 9`, pes[1])), 30*time.Second)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
	require.NotRegexp(t, `logger 0 .*failed`, j.output(), "the other logger lives to the end")
	for _, pid := range append(pes, loggers...) {
		require.True(t, gone(pid), "pid %d still running after the job ended", pid)
	}
}

// With --tls the launcher's loggers join over mutual TLS as the PEs do,
// and a killed one is said and changes nothing.
func TestLoggersUnderTLS(t *testing.T) {
	want := leanmdDigestOf(t, leanmdLoggerArgs)
	j := startJob(t, append(leanmdLoggerArgs, "--loggers", "1", "--tls")...)
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`job begins`), time.Minute)
	require.NoError(t, syscall.Kill(loggers[0], syscall.SIGKILL))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`logger failed; the job goes on" detail="logger 0 \(pid %d on \S+\) was killed by signal 9`, loggers[0])), 30*time.Second)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
}

// A logger that stops (SIGSTOP) misses its heartbeats and is declared
// dead and killed, as a PE would be; the job goes on to its result.
func TestStoppedLoggerIsKilled(t *testing.T) {
	want := leanmdDigestOf(t, leanmdLoggerArgs)
	j := startJob(t, append(leanmdLoggerArgs, "--loggers", "1", "--heartbeat-timeout", "1s")...)
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`job begins`), time.Minute)
	require.NoError(t, syscall.Kill(loggers[0], syscall.SIGSTOP))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`logger failed; the job goes on" detail="logger 0 \(pid %d on \S+\) missed heartbeats: silent for \S+ \(bound 1s\); killed with SIGKILL`, loggers[0])), 30*time.Second)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
	require.True(t, gone(loggers[0]))
}

// A logger hung (stopped) late in a job, before the heartbeats catch it,
// holds the job's end for the launcher's grace: the launcher then kills
// it and says so, and the job ends with its result.
func TestLoggerHungAtTheEndIsSaid(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "2", "--loggers", "1", "--heartbeat-timeout", "1m", "--iterations", "10")
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`logger joined" logger=0`), 30*time.Second)
	require.NoError(t, syscall.Kill(loggers[0], syscall.SIGSTOP))
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
	j.waitLine(t, regexp.MustCompile(`level=WARN msg="logger did not end after the job's end; killed" logger=0`), time.Second)
	require.NotContains(t, j.output(), "logger failed")
	require.True(t, gone(loggers[0]))
}

// A logger declared dead just before the job's end (stopped, its
// heartbeats missed, and so every log full with no logger left) is
// reported once, as it failed: the exit of the process the launcher then
// killed is not reported again as a failure after the job's end.
func TestLoggerDeclaredDeadIsNotReportedAgainAtTheEnd(t *testing.T) {
	j := startJob(t, "run", "lulesh", "--pes", "2", "--ft", "fulldet", "--loggers", "1", "--log-quota", "20000", "--heartbeat-timeout", "1s",
		"--size", "12", "--chunk", "6,6,6", "--iterations", "400")
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`logger joined" logger=0`), 30*time.Second)
	require.NoError(t, syscall.Kill(loggers[0], syscall.SIGSTOP))
	require.Equal(t, 1, j.wait(t, 3*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`logger failed; the job goes on" detail="logger 0 \(pid \d+ on \S+\) missed heartbeats`), time.Second)
	j.waitLine(t, regexp.MustCompile(`^gochare: PE \d: logging: the sender log reached its quota and no logger is left to dump to`), time.Second)
	require.NotContains(t, j.output(), "logger failed after the job's end")
	require.True(t, gone(loggers[0]))
}

// gochare pe --logger joins a job started with --external; a logger
// with a number the job does not have is told why it is refused.
func TestLoggerStartedByHand(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "1", "--loggers", "1", "--external", "--iterations", "10")
	addr := j.waitLine(t, regexp.MustCompile(`--coordinator (\S+)`), 30*time.Second)[1]
	secret := j.waitLine(t, regexp.MustCompile(`GOCHARE_JOB_SECRET=([0-9a-f]+)`), time.Second)[1]
	j.waitLine(t, regexp.MustCompile(`gochare pe --logger --coordinator \S+ --rank L --size 1`), time.Second)
	run := func(args ...string) *exec.Cmd {
		c := exec.Command(testbin.Gochare(t), args...)
		c.Env = append(os.Environ(), "GOCHARE_JOB_SECRET="+secret)
		return c
	}
	out, err := run("pe", "--logger", "--coordinator", addr, "--rank", "1", "--size", "1").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "launcher: logger 1: the coordinator refused it: logger 1 of a job of 1 PEs, the job has 1 loggers and 1 PEs")
	logger := run("pe", "--logger", "--coordinator", addr, "--rank", "0", "--size", "1")
	require.NoError(t, logger.Start())
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`logger joined" logger=0 pid=%d`, logger.Process.Pid)), 30*time.Second)
	require.NoError(t, run("pe", "--coordinator", addr, "--rank", "0", "--size", "1").Run())
	require.Equal(t, 0, j.wait(t, time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
	require.NoError(t, logger.Wait(), "the logger ends with the job")
}

func TestLoggerRole(t *testing.T) {
	for _, tc := range []struct {
		rank, size      int
		logger          bool
		loggers         int
		procID, nTasks  string
		wantLogger      bool
		wantRank, wantN int
		err             bool
	}{
		{rank: 2, size: 4, wantRank: 2, wantN: 4},
		{rank: 0, size: 4, logger: true, wantLogger: true, wantRank: 0, wantN: 4},
		// srun -n 6 gochare pe --loggers 2: tasks 0-3 are PEs, 4 and 5 loggers.
		{rank: -1, loggers: 2, procID: "3", nTasks: "6", wantRank: 3, wantN: 4},
		{rank: -1, loggers: 2, procID: "4", nTasks: "6", wantLogger: true, wantRank: 0, wantN: 4},
		{rank: -1, loggers: 2, procID: "5", nTasks: "6", wantLogger: true, wantRank: 1, wantN: 4},
		{rank: -1, procID: "5", nTasks: "6", wantRank: 5, wantN: 6},
		{rank: 4, size: 4, err: true},
		{rank: -1, size: 4, logger: true, err: true},
		{rank: 2, size: 4, logger: true, loggers: 2, err: true},
		{rank: 0, size: 4, loggers: -1, err: true},
		{rank: -1, procID: "x", nTasks: "6", err: true},
	} {
		isLogger, r, n, err := loggerRole(tc.rank, tc.size, tc.logger, tc.loggers, tc.procID, tc.nTasks)
		if tc.err {
			require.ErrorIs(t, err, errUsage, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, []any{tc.wantLogger, tc.wantRank, tc.wantN}, []any{isLogger, r, n}, "%+v", tc)
	}
}

var peLogLine = regexp.MustCompile(`msg="PE stats" pe=(\d+) .*log_bytes=(\d+) log_peak_bytes=(\d+) `)

// Every PE reports its sender log's high-water mark: with only the
// initial checkpoint (--log-limit 0) the log never shrinks, and its peak
// is all it logged; with checkpoints that trim it, less.
func TestLogPeakBytesMetric(t *testing.T) {
	peaks := func(args ...string) (logged, peak []int) {
		j := startJob(t, append([]string{"run", "leanmd", "--pes", "2", "--cells", "3,3,3", "--steps", "10"}, args...)...)
		require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
		for _, l := range strings.Split(j.output(), "\n") {
			if m := peLogLine.FindStringSubmatch(l); m != nil {
				a, _ := strconv.Atoi(m[2])
				b, _ := strconv.Atoi(m[3])
				logged, peak = append(logged, a), append(peak, b)
			}
		}
		require.Len(t, peak, 2, j.output())
		return logged, peak
	}
	logged, peak := peaks("--log-limit", "0")
	for pe := range peak {
		require.Positive(t, peak[pe])
		require.Equal(t, logged[pe], peak[pe], "PE %d: one period, the log never shrinks", pe)
	}
	logged, peak = peaks("--checkpoint-every", "2")
	for pe := range peak {
		require.Positive(t, peak[pe])
		require.Less(t, peak[pe], logged[pe]/2, "PE %d: checkpoints every 2 of 10 steps trim the log", pe)
	}
}

func TestLoggersFlag(t *testing.T) {
	o, app, err := splitRunArgs([]string{"--pes", "2", "--loggers", "3", "--steps", "4"})
	require.NoError(t, err)
	require.Equal(t, 3, o.loggers)
	require.Equal(t, []string{"--steps", "4"}, app)
	for _, bad := range []string{"-1", "x"} {
		_, _, err = splitRunArgs([]string{"--pes", "2", "--loggers", bad})
		require.ErrorIs(t, err, errUsage, bad)
	}
}

// messages_logged counts the messages a PE copied into its sender log:
// none on one PE or under none, and under partialdet only those to other
// PEs, fewer than the PE sent (before, it was every message sent under a
// logging protocol).
func TestMessagesLoggedMetric(t *testing.T) {
	line := regexp.MustCompile(`msg="PE stats" pe=\d handled=\d+ envelopes_sent=(\d+) .*messages_logged=(\d+) `)
	counts := func(args ...string) (sent, logged []int) {
		j := startJob(t, append([]string{"run", "stencil3d", "--grid", "32,32,32", "--chunk", "16,16,16", "--iterations", "4"}, args...)...)
		require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
		for _, m := range line.FindAllStringSubmatch(j.output(), -1) {
			s, _ := strconv.Atoi(m[1])
			l, _ := strconv.Atoi(m[2])
			sent, logged = append(sent, s), append(logged, l)
		}
		return sent, logged
	}
	sent, logged := counts("--pes", "1", "--ft", "partialdet")
	require.Equal(t, []int{0}, logged)
	require.Positive(t, sent[0])
	_, logged = counts("--pes", "2", "--ft", "none")
	require.Equal(t, []int{0, 0}, logged)
	sent, logged = counts("--pes", "2", "--ft", "partialdet")
	require.Len(t, logged, 2)
	for pe := range logged {
		require.Positive(t, logged[pe])
		require.Less(t, logged[pe], sent[pe], "PE %d: messages to its own tasks are not logged", pe)
	}
}
