//go:build linux

package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A reader spins only while it holds its endpoint's spinner, which one
// reader holds at a time, and a spin that found nothing makes it wait
// without spinning the next 2, 4, ... up to maxSkip times.
func TestSpinnerOneAtATimeAndBackOff(t *testing.T) {
	var s spinner
	a, b := &rawReader{spin: &s}, &rawReader{spin: &s}
	require.True(t, a.spinning(), "the first reader takes the spinner")
	require.False(t, b.spinning(), "a second reader waits without spinning meanwhile")
	s.busy.Store(false)
	require.True(t, b.spinning())
	s.busy.Store(false)

	// Misses in a row: 2, 4, 8, ... waits without spinning, at most maxSkip.
	for miss := 1; miss <= 12; miss++ {
		a.missed()
		want := min(1<<miss, maxSkip)
		for range want {
			require.False(t, a.spinning(), "miss %d", miss)
		}
		require.True(t, a.spinning(), "miss %d: spins again after %d waits", miss, want)
		s.busy.Store(false)
	}
	var none rawReader
	require.False(t, none.spinning(), "a reader without a spinner never spins")
}
