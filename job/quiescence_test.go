package job

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// The detector says a complete round is balanced when it counts as many
// envelopes received as sent, whether or not it is the second of the same
// counts (quiescent).
func TestQuiescenceDetectorBalanced(t *testing.T) {
	q := NewQuiescenceDetector(2)
	r := q.StartRound()
	complete, quiescent := q.Reply(0, r, 3, 1)
	require.False(t, complete)
	complete, quiescent = q.Reply(1, r, 1, 2)
	require.True(t, complete)
	require.False(t, quiescent)
	require.False(t, q.Balanced(), "4 sent, 3 received: one in flight")

	r = q.StartRound()
	q.Reply(0, r, 3, 2)
	complete, quiescent = q.Reply(1, r, 1, 2)
	require.True(t, complete)
	require.False(t, quiescent, "the counts moved since the round before")
	require.True(t, q.Balanced())

	r = q.StartRound()
	q.Reply(0, r, 3, 2)
	complete, quiescent = q.Reply(1, r, 1, 2)
	require.True(t, complete)
	require.True(t, quiescent)
	require.True(t, q.Balanced())
}

// idleRound has every PE of c answer probe with the counts sent[p],
// received[p] and its two tasks at the sync point of step 9, and returns
// what the coordinator does.
func idleRound(c *Coordinator, probe Probe, sent, received []uint64) []Command {
	var cmds []Command
	for pe := range sent {
		cmds = append(cmds, c.OnIdle(pe, IdleStatus{Round: probe.Round, Sent: sent[pe], Received: received[pe], AtSync: 2, SyncTasks: 2, SyncStep: 9, LowSyncStep: 9, SyncStepsKnown: true})...)
	}
	return cmds
}

// A sync point is found in two rounds without a tick between them: the
// balanced first round starts the confirming one at once, and that one
// takes the checkpoint.
func TestABalancedRoundIsConfirmedAtOnce(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet, logging.KindFullDet} {
		c := runningCoordinator(t, 3, kind)
		probe, _ := eventOf[Probe](t, c.Tick())
		cmds := idleRound(c, probe, []uint64{5, 6, 7}, []uint64{7, 6, 5})
		require.Equal(t, []any{Probe{Round: probe.Round + 1}}, events(cmds), "%v: the confirming round goes out at once", kind)
		require.Empty(t, c.Tick(), "%v: no second round while the confirming one is open", kind)
		cmds = idleRound(c, Probe{Round: probe.Round + 1}, []uint64{5, 6, 7}, []uint64{7, 6, 5})
		require.Equal(t, []any{TakeCheckpoint{Epoch: InitialEpoch + 1}}, events(cmds), "%v", kind)
	}
}

// A round with envelopes in flight does not start a round at once: the
// next one waits for the tick.
func TestAnUnbalancedRoundWaitsForTheTick(t *testing.T) {
	c := runningCoordinator(t, 2, logging.KindPartialDet)
	probe, _ := eventOf[Probe](t, c.Tick())
	require.Empty(t, idleRound(c, probe, []uint64{5, 6}, []uint64{6, 4}), "one envelope in flight")
	next, _ := eventOf[Probe](t, c.Tick())
	require.Equal(t, probe.Round+1, next.Round)
}

// One confirming round follows a tick's round: if the counts moved in
// between (the job is busy, yet balanced each time it is asked), the
// ticks pace the rounds again, so that a running job is not probed
// without pause.
func TestOneConfirmingRoundPerTick(t *testing.T) {
	c := runningCoordinator(t, 2, logging.KindFullDet)
	probe, _ := eventOf[Probe](t, c.Tick())
	confirm, _ := eventOf[Probe](t, idleRound(c, probe, []uint64{5, 6}, []uint64{6, 5}))
	require.Empty(t, idleRound(c, confirm, []uint64{8, 6}, []uint64{6, 8}), "balanced again, but the counts moved")
	next, _ := eventOf[Probe](t, c.Tick())
	require.Equal(t, confirm.Round+1, next.Round)
	// That tick's round, balanced, is confirmed at once again.
	again, _ := eventOf[Probe](t, idleRound(c, next, []uint64{9, 6}, []uint64{6, 9}))
	require.Equal(t, next.Round+1, again.Round)
	require.Equal(t, []any{TakeCheckpoint{Epoch: InitialEpoch + 1}}, events(idleRound(c, again, []uint64{9, 6}, []uint64{6, 9})))
}
