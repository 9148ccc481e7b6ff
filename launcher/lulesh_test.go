package launcher

import (
	"regexp"
	"strconv"
	"strings"
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

// TestPrintedLinesAreWrittenOnceAfterAFailure: chunk (0,0,0), on PE 0,
// prints a progress line every cycle; PE 0 SIGKILLs itself at the end of
// cycle 23, and its chunks, restored from the checkpoint at the end of
// cycle 19 (and every chunk under none), print the lines of the cycles
// they re-execute again. The job's output has each cycle's line once, in
// order, under each protocol.
func TestPrintedLinesAreWrittenOnceAfterAFailure(t *testing.T) {
	progress := regexp.MustCompile(`^cycle = (\d+), time = `)
	for _, ft := range []string{"partialdet", "none"} {
		j := startJob(t, "run", "lulesh", "--pes", "3", "--ft", ft, "--checkpoint-every", "10", "--kill", "pe=0,at=step:23",
			"--size", "10", "--chunk", "5,5,5", "--iterations", "30", "--progress", "1")
		require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
		j.waitLine(t, regexp.MustCompile(`PE failed.*PE 0 \(pid \d+.*killed by signal 9`), time.Second)
		var cycles []int
		for _, line := range strings.Split(j.output(), "\n") {
			if m := progress.FindStringSubmatch(line); m != nil {
				n, err := strconv.Atoi(m[1])
				require.NoError(t, err)
				cycles = append(cycles, n)
			}
		}
		want := make([]int, 30)
		for i := range want {
			want[i] = i + 1
		}
		require.Equal(t, want, cycles, "%s: output:\n%s", ft, j.output())
	}
}
