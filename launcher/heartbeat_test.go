package launcher

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHeartbeatInterval(t *testing.T) {
	require.Equal(t, 500*time.Millisecond, heartbeatInterval(5*time.Second))
	require.Equal(t, 200*time.Millisecond, heartbeatInterval(2*time.Second))
	require.Equal(t, 500*time.Millisecond, heartbeatInterval(time.Minute))
	require.Equal(t, time.Millisecond, heartbeatInterval(time.Microsecond))
}

func TestSilenceJudge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	j := silenceJudge{bound: 5 * time.Second}
	// Checked every 10 ms, a peer last heard at t0 is dead once more
	// than the bound passed, not before.
	for d := time.Duration(0); d <= 5*time.Second; d += 10 * time.Millisecond {
		require.Zero(t, j.tick(at(d)))
		require.False(t, j.dead(at(d), t0), "at %v", d)
	}
	require.Zero(t, j.tick(at(5*time.Second+10*time.Millisecond)))
	require.True(t, j.dead(at(5*time.Second+10*time.Millisecond), t0))

	// A judge that was away for 3 s (more than a quarter of the bound)
	// counts silence again from its return: a peer it could not read
	// from meanwhile gets a full bound.
	j = silenceJudge{bound: 5 * time.Second}
	j.tick(at(0))
	require.Equal(t, 3*time.Second, j.tick(at(3*time.Second)))
	for d := 3 * time.Second; d <= 8*time.Second; d += 10 * time.Millisecond {
		require.Zero(t, j.tick(at(d)))
		require.False(t, j.dead(at(d), t0), "at %v", d)
	}
	j.tick(at(8*time.Second + 10*time.Millisecond))
	require.True(t, j.dead(at(8*time.Second+10*time.Millisecond), t0))
	// A peer heard after the judge's return is judged from then.
	require.False(t, j.dead(at(8*time.Second+10*time.Millisecond), at(4*time.Second)))
	// Short delays of the judge change nothing.
	j = silenceJudge{bound: 5 * time.Second}
	j.tick(at(0))
	require.Zero(t, j.tick(at(time.Second)))
	require.True(t, j.dead(at(5*time.Second+time.Millisecond), t0))
}

// A PE's watch of its coordinator stays quiet while messages come, and
// ends the wait once nothing came for the bound.
func TestWatchCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = 5 * time.Second
		var heard atomic.Int64
		heard.Store(time.Now().UnixNano())
		done := make(chan struct{})
		defer close(done)
		silent := make(chan time.Duration, 1)
		go watchCoordinator(done, &heard, bound, func(d time.Duration) { silent <- d })
		// Messages every 700 ms for 30 s: no verdict.
		for range 43 {
			time.Sleep(700 * time.Millisecond)
			heard.Store(time.Now().UnixNano())
		}
		synctest.Wait()
		require.Empty(t, silent)
		lastMessage := time.Now()
		d := <-silent
		waited := time.Since(lastMessage)
		require.Greater(t, d, bound)
		require.Equal(t, waited, d)
		require.LessOrEqual(t, waited, bound+heartbeatInterval(bound), "declared within one check of the bound")
	})
}
