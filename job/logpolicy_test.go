package job

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// syncPoint runs the quiescence rounds (two of the same counts) that find
// every task of the running coordinator c waiting at sync point number
// point, with PE p's sender log holding logs[p] bytes, and returns what the
// coordinator decides.
func syncPoint(t *testing.T, c *Coordinator, point uint64, logs []int) []Command {
	t.Helper()
	var cmds []Command
	for range 2 {
		probe, _ := eventOf[Probe](t, c.Tick())
		for pe, n := range logs {
			cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, Sent: 4 * point, Received: 4 * point, AtSync: 2, SyncTasks: 2, LogBytes: n})...)
		}
	}
	return cmds
}

// With a log limit, a sync point checkpoints only once some PE's sender
// log reached the limit; below it the tasks resume at once, and the next
// sync point is judged again. Without one, every sync point checkpoints.
func TestCoordinatorCheckpointsWhenALogReachesTheLimit(t *testing.T) {
	const limit = 1000
	c := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet, LogLimit: limit})
	require.Equal(t, []any{Resume{}}, events(syncPoint(t, c, 1, []int{10, limit - 1, 0})))
	require.Equal(t, []any{Resume{}}, events(syncPoint(t, c, 2, []int{500, 999, 20})))
	cp, _ := eventOf[TakeCheckpoint](t, syncPoint(t, c, 3, []int{10, limit, 0}))
	require.Equal(t, uint64(InitialEpoch+1), cp.Epoch)

	every := runningCoordinatorWith(t, Config{Size: 3, Protocol: logging.KindPartialDet})
	cp, _ = eventOf[TakeCheckpoint](t, syncPoint(t, every, 1, []int{0, 0, 0}))
	require.Equal(t, uint64(InitialEpoch+1), cp.Epoch)
}
