package job

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// Without dumping a logger holds nothing: its death changes nothing, and
// a PE failure after it is recovered as usual.
func TestLoggerFailureWithoutDumpingChangesNothing(t *testing.T) {
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, Loggers: 2})
	require.Equal(t, []bool{true, true}, c.LiveLoggers())
	require.Empty(t, c.OnLoggerFailure(1))
	require.Equal(t, []bool{true, false}, c.LiveLoggers())
	require.Contains(t, c.Notes(), "logger 1 failed (1 of 2 left): no log entry is dumped in this job, the job goes on")
	require.Empty(t, c.OnLoggerFailure(1), "a logger dies once")
	require.Empty(t, c.OnLoggerFailure(7), "no such logger")
	eventOf[Recover](t, c.OnFailure(2))
	_, done := c.Done()
	require.False(t, done)
}

// With dumping, a logger's death makes the next sync point checkpoint
// (a log limit notwithstanding); a PE that fails before that checkpoint
// commits makes every task roll back to the checkpoint (its replay may
// need the lost entries), one that fails after is recovered.
func TestLoggerFailureWithDumpingForcesACheckpointAndRollsBackAnUnreplayableRecovery(t *testing.T) {
	cfg := Config{Size: 3, Protocol: logging.KindPartialDet, Loggers: 1, Dumping: true, LogLimit: 1 << 30}
	c := runningCoordinatorWith(t, cfg)
	require.Equal(t, []any{Resume{Passed: 10}}, events(syncPoint(t, c, 9, map[int]int{0: 10, 1: 10, 2: 10})), "under the limit: no checkpoint")
	require.Empty(t, c.OnLoggerFailure(0))
	require.Equal(t, []bool{false}, c.LiveLoggers())
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 19, map[int]int{0: 10, 1: 10, 2: 10}))
	require.Contains(t, c.Notes(), "sync point of step 19 checkpoints: a logger failed with log entries dumped to it")
	events(commit(t, c, cp.Epoch))
	require.Equal(t, []any{Resume{Passed: 30}}, events(syncPoint(t, c, 29, map[int]int{0: 10, 1: 10, 2: 10})),
		"once the checkpoint committed, the log limit rules again")
	eventOf[Recover](t, c.OnFailure(1))
	_, done := c.Done()
	require.False(t, done, "a failure after the commit is recovered")

	lost := runningCoordinatorWith(t, cfg)
	require.Empty(t, lost.OnLoggerFailure(0))
	rb, _ := eventOf[Rollback](t, lost.OnFailure(2))
	require.Equal(t, []int{2}, rb.Failed)
	_, done = lost.Done()
	require.False(t, done, "the job goes on from the checkpoint")
	notes := strings.Join(lost.Notes(), "\n")
	require.Contains(t, notes, "PE 2 failed after logger(s) [0] failed and before a checkpoint committed")
	require.Contains(t, notes, "every task rolls back to checkpoint 1 instead")
}
