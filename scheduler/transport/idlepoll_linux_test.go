//go:build linux

package transport_test

import (
	"testing"
	"time"

	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/transporttest"
)

// pingPong sends rounds payloads from PE 0 to PE 1 and back, one at a
// time, each waited for: between two, each side's reader finds its
// socket empty and waits.
func pingPong(t *testing.T, j *tcpJob, rounds int) {
	t.Helper()
	to1, to0 := j.recs[1].Count(0), j.recs[0].Count(1)
	for i := 1; i <= rounds; i++ {
		j.send(0, 1, []int{64})
		j.waitReceived(t, 1, 0, to1+i)
		j.send(1, 0, []int{64})
		j.waitReceived(t, 0, 1, to0+i)
	}
}

// With an idle poll, a reader that finds its socket empty polls it, and
// input that comes meanwhile is read by the poll; without one, no reader
// polls.
func TestTCPIdlePoll(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		j := newTCPJobWith(t, 2, func(_ int, cfg *transport.Config) { cfg.IdlePoll = 2 * time.Second }, nil)
		pingPong(t, j, 50)
		var polls, hits uint64
		for _, ep := range j.eps {
			st := ep.Stats()
			polls, hits = polls+st.IdlePolls, hits+st.IdlePollHits
		}
		if polls == 0 || hits == 0 {
			t.Errorf("%d polls, %d of them found input: want some of each", polls, hits)
		}
	})
	t.Run("off", func(t *testing.T) {
		j := newTCPJobWith(t, 2, func(_ int, cfg *transport.Config) { cfg.IdlePoll = -1 }, nil)
		pingPong(t, j, 50)
		for r, ep := range j.eps {
			if st := ep.Stats(); st.IdlePolls != 0 {
				t.Errorf("PE %d polled %d times with the poll off", r, st.IdlePolls)
			}
		}
	})
}

// A reader stops polling as soon as the loop has work (here its ticks):
// on a PE of one thread (GOMAXPROCS=1 is the launcher's default for two
// PEs on two cores) the loop's goroutine needs the thread the poll holds.
func TestTCPIdlePollGivesWayToTheLoop(t *testing.T) {
	j := newTCPJobWith(t, 2, func(r int, cfg *transport.Config) {
		cfg.IdlePoll = -1
		if r == 1 {
			cfg.IdlePoll = time.Hour // a poll only the loop's work ends
		}
	}, nil)
	pingPong(t, j, 1)
	transporttest.WaitFor(t, "a poll cut short by the loop's work", func() bool { return j.eps[1].Stats().IdlePollsCut > 0 })
	pingPong(t, j, 3) // and input still arrives
}
