package job

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Each (task, number) pair is admitted once, whatever the order in which
// the lines arrive; another task's lines of the same numbers are its own.
func TestOutputFilterAdmitsEachLineOnce(t *testing.T) {
	var f OutputFilter
	require.True(t, f.Admit(7, 0))
	require.True(t, f.Admit(7, 2), "a later line before an earlier one (the task moved between PEs)")
	require.True(t, f.Admit(7, 1))
	require.True(t, f.Admit(8, 0), "another task's first line")
	for seq := range uint64(3) {
		require.False(t, f.Admit(7, seq), "line %d printed again by a re-execution", seq)
	}
	require.False(t, f.Admit(8, 0))
	require.True(t, f.Admit(7, 3), "the re-execution goes on past what was printed")
}
