package launcher

import (
	"fmt"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// --event-logger needs loggers and a protocol that records something.
func TestEventLoggerFlag(t *testing.T) {
	o, _, err := splitRunArgs([]string{"--pes", "2", "--loggers", "1", "--event-logger", "--ft", "fulldet"})
	require.NoError(t, err)
	require.True(t, o.eventLogger)
	_, _, err = splitRunArgs([]string{"--pes", "2", "--loggers", "2", "--event-logger"})
	require.NoError(t, err, "partialdet, the default")
	_, _, err = splitRunArgs([]string{"--pes", "2", "--event-logger"})
	require.ErrorIs(t, err, errUsage)
	require.ErrorIs(t, err, logging.ErrEventLoggerConfig)
	require.ErrorContains(t, err, "at least one logger process")
	_, _, err = splitRunArgs([]string{"--pes", "2", "--loggers", "1", "--event-logger", "--ft", "none"})
	require.ErrorIs(t, err, errUsage)
	require.ErrorContains(t, err, "--ft none")
	require.ErrorContains(t, err, "records nothing to log")
}

// elLeanMD is a small LeanMD on 6 PEs: 16 steps, a checkpoint at the
// end of step 8, so a kill at step 12 is recovered from checkpoint 2
// with four steps to replay.
var elLeanMD = []string{"run", "leanmd", "--pes", "6", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "8", "--steps", "16", "--checkpoint-every", "8"}

var elJobStats = regexp.MustCompile(`msg="job stats".* restored_tasks=(\d+) rolled_back_tasks=(\d+) .* event_log_records=(\d+)`)

// Three PEs killed at once, no two of them buddies (PE r's checkpoint is
// on PE r+1): with an event logger their tasks are restored and replay
// (no task rolls back, which f = 2 would need), under FullDet and
// PartialDet, to the failure-free digest; under FullDet the logger stored
// records.
func TestEventLoggerThreeKills(t *testing.T) {
	want := leanmdDigestOf(t, elLeanMD)
	for _, ft := range []string{"fulldet", "partialdet"} {
		t.Run(ft, func(t *testing.T) {
			// PE 2 dies at step 12, PEs 0 and 4 as the recovery of
			// that failure starts: all three are down before any task
			// is restored. (Three kills at step 12 were simultaneous
			// only as long as the three PEs reached it together: under
			// CI's load PE 4 came 20 ms late, after the recovery of the
			// other two, and was recovered by a second one.)
			kills := []string{"--kill", "pe=2,at=step:12", "--kill", "pe=0,at=recovery:1", "--kill", "pe=4,at=recovery:1"}
			j := startJob(t, append(append(append([]string(nil), elLeanMD...), "--ft", ft, "--loggers", "1", "--event-logger"), kills...)...)
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			for _, pe := range []int{0, 2, 4} {
				j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %d .*killed by signal 9`, pe)), time.Second)
			}
			j.waitLine(t, regexp.MustCompile(`recovery: tasks restored, replay starts" failed="\[[024] [024] [024]\]"`), time.Second)
			require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
			m := j.waitLine(t, elJobStats, time.Second)
			require.NotEqual(t, "0", m[1], "the failed PEs' tasks are restored")
			require.Equal(t, "0", m[2], "no task rolls back: %s", m[0])
			if ft == "fulldet" {
				require.NotEqual(t, "0", m[3], "the PEs sent records to the logger")
			} else {
				// No LeanMD handler is order-dependent: PartialDet
				// records no determinant and no progress record
				// (logging.Config.OrderFree), so the logger gets none.
				require.Equal(t, "0", m[3], "no record to log: %s", m[0])
			}
			require.NotContains(t, j.output(), "rolls back")
		})
	}
}

// With --checkpoint-dir any three PEs may die at once, buddies included:
// tasks whose two checkpoint copies died, the job goes back to the disk
// checkpoint (the coordinator's rule for copies lost from memory).
func TestEventLoggerThreeBuddiesWithCheckpointDir(t *testing.T) {
	want := leanmdDigestOf(t, elLeanMD)
	j := startJob(t, append(append([]string(nil), elLeanMD...), "--ft", "fulldet", "--loggers", "1", "--event-logger", "--checkpoint-dir", t.TempDir(),
		// All three down before any task is restored (see
		// TestEventLoggerThreeKills).
		"--kill", "pe=1,at=step:12", "--kill", "pe=2,at=recovery:1", "--kill", "pe=3,at=recovery:1")...)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	for _, pe := range []int{1, 2, 3} {
		j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %d .*killed by signal 9`, pe)), time.Second)
	}
	j.waitLine(t, regexp.MustCompile(`recovery from disk: every task goes back to a disk checkpoint`), time.Second)
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
}

// An event logger SIGKILLed while the job runs: the PEs carry its records
// again, the job goes on with the other logger and ends with the
// failure-free digest; a PE killed after it is recovered too (by a
// rollback if it dies before the checkpoint the logger's death forces
// commits, by replay after).
func TestEventLoggerKilled(t *testing.T) {
	args := []string{"run", "leanmd", "--pes", "4", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "8", "--steps", "40", "--checkpoint-every", "8"}
	want := leanmdDigestOf(t, args)
	j := startJob(t, append(args, "--ft", "fulldet", "--loggers", "2", "--event-logger")...)
	pes := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`checkpoint committed" epoch=2`), time.Minute)
	require.NoError(t, syscall.Kill(loggers[1], syscall.SIGKILL))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`logger failed; the job goes on" detail="logger 1 \(pid %d on \S+\) was killed by signal 9`, loggers[1])), 30*time.Second)
	j.waitLine(t, regexp.MustCompile(`logger 1 failed \(1 of 2 left\): the records it made stable since checkpoint \d+ ride on messages again`), 10*time.Second)
	j.waitLine(t, regexp.MustCompile(`lost an event logger" pe=\d+ logger=1`), 30*time.Second)
	require.NoError(t, syscall.Kill(pes[2], syscall.SIGKILL))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE 2 \(pid %d.*killed by signal 9`, pes[2])), 30*time.Second)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
	require.NotRegexp(t, `logger 0 .*failed`, j.output(), "the other logger lives to the end")
}

// An event logger that stops (SIGSTOP) keeps its connections open: the
// launcher declares it dead by its heartbeats, kills it and tells the
// PEs, which drop their streams to it; the job ends with the
// failure-free digest. The job runs 400 steps (about 4 s on a quiet
// machine) so that it is still running when the heartbeats' 1 s bound
// passes.
func TestStoppedEventLogger(t *testing.T) {
	args := []string{"run", "leanmd", "--pes", "3", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "8", "--steps", "400", "--checkpoint-every", "8"}
	want := leanmdDigestOf(t, args)
	j := startJob(t, append(args, "--ft", "partialdet", "--loggers", "1", "--event-logger", "--heartbeat-timeout", "1s")...)
	loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`job begins`), time.Minute)
	require.NoError(t, syscall.Kill(loggers[0], syscall.SIGSTOP))
	j.waitLine(t, regexp.MustCompile(`logger failed; the job goes on" detail="logger 0 \(pid \d+ on \S+\) missed heartbeats`), 30*time.Second)
	j.waitLine(t, regexp.MustCompile(`lost an event logger" pe=\d+ logger=0`), 30*time.Second)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
	require.True(t, gone(loggers[0]))
}
