package launcher

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLuleshOnRealPEsMatchesReference runs the 10³, 50-iteration
// reference row on two PE processes in 2×2×2 chunks.
func TestLuleshOnRealPEsMatchesReference(t *testing.T) {
	j := startJob(t, "run", "lulesh", "--pes", "2", "--size", "10", "--chunk", "5,5,5", "--iterations", "50", "--json")
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`^   Iteration count     =  50$`), time.Second)
	j.waitLine(t, regexp.MustCompile(`^   Final Origin Energy =  81047.95751845\d+$`), time.Second)
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
	j.waitLine(t, regexp.MustCompile(`^\{"app":"lulesh",.*"pes":2,"iterations":50,.*"digest":"[0-9a-f]{16}","reference":"match"\}$`), time.Second)
}

// TestLuleshKilledPEUnderPartialDetEndsWithCleanDigest: the same row on
// 3 PE processes, checkpoints at the end of cycles 9, 19, ..., PE 1
// SIGKILLs itself at the end of cycle 23.
func TestLuleshKilledPEUnderPartialDetEndsWithCleanDigest(t *testing.T) {
	runKilled(t, regexp.MustCompile(`^Digest += ([0-9a-f]{16})$`), 10, 23,
		"lulesh", "--size", "10", "--chunk", "5,5,5", "--iterations", "50")
}
