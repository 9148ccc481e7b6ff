//go:build linux

package transport

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A reader polls only while it holds its endpoint's spinner, which one
// reader holds at a time, and a poll that found nothing makes it wait
// without polling the next 2, 4, ... up to maxSkip times.
func TestSpinnerOneAtATimeAndBackOff(t *testing.T) {
	s := spinner{poll: time.Millisecond}
	a, b := &rawReader{spin: &s}, &rawReader{spin: &s}
	require.True(t, a.spinning(), "the first reader takes the spinner")
	require.False(t, b.spinning(), "a second reader waits without polling meanwhile")
	s.taken.Store(false)
	require.True(t, b.spinning())
	s.taken.Store(false)

	// Misses in a row: 2, 4, 8, ... waits without polling, at most maxSkip.
	for miss := 1; miss <= 12; miss++ {
		a.missed()
		want := min(1<<miss, maxSkip)
		for range want {
			require.False(t, a.spinning(), "miss %d", miss)
		}
		require.True(t, a.spinning(), "miss %d: polls again after %d waits", miss, want)
		s.taken.Store(false)
	}
	var none rawReader
	require.False(t, none.spinning(), "a reader without a spinner never polls")
}

// A reader does not poll when its endpoint's poll is 0, nor while the
// loop has work (its goroutine needs the thread a poll would hold).
func TestSpinnerNotWhenOffOrLoopBusy(t *testing.T) {
	off := spinner{}
	require.False(t, (&rawReader{spin: &off}).spinning(), "poll 0: never")

	var busy atomic.Bool
	s := spinner{poll: time.Millisecond, busy: busy.Load}
	r := &rawReader{spin: &s}
	busy.Store(true)
	require.False(t, r.spinning(), "the loop has work")
	require.False(t, s.taken.Load(), "a reader that does not poll leaves the spinner")
	busy.Store(false)
	require.True(t, r.spinning())
}
