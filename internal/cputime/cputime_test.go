//go:build unix

package cputime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Work done by this process shows in its CPU time.
func TestProcessCountsWork(t *testing.T) {
	before, ok := Process()
	require.True(t, ok)
	x := 1.0
	for {
		for range 1 << 20 {
			x = x*1.0000001 + 1e-9
		}
		if now, _ := Process(); now > before {
			break
		}
	}
	require.NotZero(t, x)
}
