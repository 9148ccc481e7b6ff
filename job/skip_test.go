package job

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// Under a log limit with the sync period known, a sync point that would
// pass without a checkpoint anyway is skipped: the Resume of the one
// before carries a Passed one period ahead, whether that one passed
// (the logs, growing as they did, stay under the limit at the next) or
// checkpointed (the logs start empty again). The checkpoints come at the
// sync points they came at without skipping.
func TestSyncPointsThatWouldPassAreSkipped(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit, SyncEvery: 10})
	// 300 bytes in 10 steps: 600 at step 19, under the limit.
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 9, map[int]int{0: 10, 1: 300, 2: 0})))
	require.Contains(t, c.Notes(), "sync point of step 19 skipped: the largest sender log would hold about 600 bytes there")
	// At step 29, 900: passed; 1200 at step 39, so that one is not
	// skipped.
	require.Equal(t, []any{Resume{Passed: 30}}, events(syncPoint(t, c, 29, map[int]int{0: 10, 1: 900, 2: 0})))
	require.NotContains(t, c.Notes(), "skipped", "1200 bytes at step 39")
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 39, map[int]int{0: 10, 1: 1200, 2: 0}))
	// The logs start empty at step 40; at 300 bytes a period, the sync
	// point of step 49 is skipped.
	require.Equal(t, []any{Resume{Passed: 50}}, events(commit(t, c, cp.Epoch)))
	require.Contains(t, c.Notes(), "sync point of step 49 skipped: the largest sender log would hold about 300 bytes there")
	// 600 bytes since step 40: 300 a period again; 900 at step 69.
	require.Equal(t, []any{Resume{Passed: 70}}, events(syncPoint(t, c, 59, map[int]int{0: 600, 1: 0, 2: 5})))
	require.Contains(t, c.Notes(), "sync point of step 69 skipped: the largest sender log would hold about 900 bytes there")
}

// A log far under the limit skips several sync points at once: as many
// that the growth, as measured, up to the sync point the tasks stop at
// next fits in half the room left under the limit (and at least the
// next one if it fits at all), up to maxSkippedPeriods. A log growing up
// to twice as fast as measured is still under the limit where the tasks
// stop next.
func TestSyncPointsFarUnderTheLimitAreSkippedTogether(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit, SyncEvery: 10})
	// 100 bytes in 10 steps, 900 left: up to step 49, 4 periods (400
	// bytes), within 450: the sync points of steps 19 to 39 are skipped.
	require.Equal(t, []any{Resume{Passed: 40}}, events(syncPoint(t, c, 9, map[int]int{0: 100, 1: 0, 2: 0})))
	require.Contains(t, c.Notes(), "sync points of steps 19 to 39 skipped: the largest sender log would hold about 400 bytes at step 39")
	// Twice as fast since: 900 bytes at step 49, under the limit. 180 a
	// period on average: the next would pass it, and the one of step 59
	// checkpoints.
	require.Equal(t, []any{Resume{Passed: 50}}, events(syncPoint(t, c, 49, map[int]int{0: 900, 1: 0, 2: 0})))
	eventOf[TakeCheckpoint](t, syncPoint(t, c, 59, map[int]int{0: 1080, 1: 0, 2: 0}))

	// A log that did not grow: maxSkippedPeriods at most.
	c = runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit, SyncEvery: 10})
	require.Equal(t, []any{Resume{Passed: 10 + maxSkippedPeriods*10}}, events(syncPoint(t, c, 9, map[int]int{0: 0, 1: 0, 2: 0})))
	require.Contains(t, c.Notes(), "sync points of steps 19 to 89 skipped: the largest sender log would hold about 0 bytes at step 89")
}

// A sync point is skipped only with a 32nd of a period's growth to spare
// under the limit, never without the sync period, with a balancer, or
// when the logs must be checkpointed (a logger died with entries).
func TestSyncPointsNotSkipped(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name string
		cfg  Config
		log  int
	}{
		{"near the limit", Config{LogLimit: limit, SyncEvery: 10}, 495}, // 990 at step 19, + 15
		{"no sync period", Config{LogLimit: limit}, 100},
		{"a balancer", Config{LogLimit: limit, SyncEvery: 10, Balancer: "greedy"}, 100},
	} {
		cfg := tc.cfg
		cfg.Size, cfg.Protocol = 3, logging.KindFullDet
		c := runningCoordinatorWith(t, cfg)
		require.Equal(t, []any{Resume{Passed: 10}}, events(syncPoint(t, c, 9, map[int]int{0: tc.log, 1: 0, 2: 0})), tc.name)
		for _, n := range c.Notes() {
			require.NotContains(t, n, "skipped", tc.name)
		}
	}
	// Just under: 485 + 485 + 15 < 1000.
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindFullDet, LogLimit: limit, SyncEvery: 10})
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 9, map[int]int{0: 485, 1: 0, 2: 0})))
}

// After a failure the logs' growth is not known (restored tasks replay,
// logs of the failed PE are gone): no sync point is skipped until a
// checkpoint taken at a sync point commits, and a checkpoint the failure
// interrupted skips nothing after it.
func TestNoSkippingAfterAFailureUntilACheckpoint(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit, SyncEvery: 10})
	require.Equal(t, []any{Resume{Passed: 10}}, events(syncPoint(t, c, 9, map[int]int{0: 600, 1: 0, 2: 0})))
	eventOf[Recover](t, c.OnFailure(2))
	require.False(t, hasEvent[Resume](restoreAndNotice(t, c, 1)))
	// 100 bytes at step 19: would skip, but the growth is not known.
	require.Equal(t, []any{Resume{Passed: 20}}, events(syncPoint(t, c, 19, map[int]int{0: 100, 1: 0})))
	for _, n := range c.Notes() {
		require.NotContains(t, n, "skipped")
	}
	// A checkpoint at the sync point of step 29 restarts the count.
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 29, map[int]int{0: limit, 1: 0}))
	cmds := commit(t, c, cp.Epoch)
	require.Equal(t, []any{Resume{Passed: 20}}, events(cmds), "not skipped: the growth before the checkpoint is not known")
	// 100 bytes in the 10 steps since the checkpoint: up to step 79,
	// four periods' growth fits in half the 900 bytes left, and the sync
	// points of steps 49 to 69 are skipped.
	require.Equal(t, []any{Resume{Passed: 70}}, events(syncPoint(t, c, 39, map[int]int{0: 100, 1: 0})))
	require.Contains(t, c.Notes(), "sync points of steps 49 to 69 skipped: the largest sender log would hold about 400 bytes at step 69")

	// A failure while a checkpoint that would skip is taken: the
	// checkpoint is abandoned, and the one after skips nothing.
	c = runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit, SyncEvery: 10})
	eventOf[TakeCheckpoint](t, syncPoint(t, c, 9, map[int]int{0: limit, 1: 0, 2: 0}))
	eventOf[Recover](t, c.OnFailure(2))
	cmds = restoreAndNotice(t, c, 1)
	require.False(t, hasEvent[Resume](cmds))
	cp, _ = eventOf[TakeCheckpoint](t, syncPoint(t, c, 9, map[int]int{0: limit, 1: 0}))
	require.Equal(t, []any{Resume{Passed: 0}}, events(commit(t, c, cp.Epoch)))
}
