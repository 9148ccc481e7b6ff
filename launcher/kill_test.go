package launcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseKill(t *testing.T) {
	k, _, err := parseKill("pe=2,at=step:37", 4, 0, 0)
	require.NoError(t, err)
	require.Equal(t, kill{Rank: 2, AtStep: 37}, k)
	k, _, err = parseKill("pe=1,after=1500ms", 4, 0, 0)
	require.NoError(t, err)
	require.Equal(t, kill{Rank: 1, After: 1500 * time.Millisecond}, k)
	// A seeded random kill is the same every time, and printed.
	a, noteA, err := parseKill("random,seed=7", 4, 99, 20)
	require.NoError(t, err)
	b, noteB, _ := parseKill("random,seed=7", 4, 12345, 20)
	require.Equal(t, a, b)
	require.Equal(t, noteA, noteB)
	require.Contains(t, noteA, "seed=7")
	require.True(t, a.Rank >= 1 && a.Rank < 4)
	require.True(t, a.AtStep >= 10 && a.AtStep < 70, "step %d within the first checkpoint periods", a.AtStep)
	for _, bad := range []string{"pe=9,at=step:3", "pe=1", "pe=1,at=3", "random,seed=x", "when=now", "pe=1,after=-1s"} {
		_, _, err := parseKill(bad, 4, 0, 20)
		require.ErrorIs(t, err, errUsage, bad)
	}
	_, _, err = parseKill("random", 1, 0, 20)
	require.ErrorIs(t, err, errUsage)
}
