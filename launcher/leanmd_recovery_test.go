package launcher

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runKilled runs app on 3 PE processes under partialdet, clean and then
// with PE 1 killing itself at step killAt, and checks that the killed run
// ends with status 0, the clean run's digest, and no determinant.
func runKilled(t *testing.T, digest *regexp.Regexp, every, killAt int, app ...string) {
	t.Helper()
	base := append([]string{"run", app[0], "--pes", "3", "--ft", "partialdet"}, app[1:]...)
	clean := startJob(t, base...)
	require.Equal(t, 0, clean.wait(t, time.Minute), clean.output())
	want := clean.waitLine(t, digest, time.Second)[1]

	killed := append([]string{"run", app[0], "--pes", "3", "--ft", "partialdet",
		"--checkpoint-every", fmt.Sprint(every), "--kill", fmt.Sprintf("pe=1,at=step:%d", killAt)}, app[1:]...)
	j := startJob(t, killed...)
	require.Equal(t, 0, j.wait(t, time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 \(pid \d+.*killed by signal 9`), time.Second)
	j.waitLine(t, regexp.MustCompile(`checkpoint \d+ .*: \d+ bytes`), time.Second)
	require.Equal(t, want, j.waitLine(t, digest, time.Second)[1], "digest after the failure, output:\n%s", j.output())
	j.waitLine(t, regexp.MustCompile(`msg="job stats".* determinants=0 .*restored_tasks=[1-9]`), time.Second)
}

// TestLeanMDKilledPEUnderPartialDetEndsWithCleanDigest: 3×3×3 cells
// (1-away, 10 atoms per cell, 12 steps) on 3 PE processes, checkpoints at
// the end of steps 4 and 9, PE 1 SIGKILLs itself at step 7.
func TestLeanMDKilledPEUnderPartialDetEndsWithCleanDigest(t *testing.T) {
	runKilled(t, regexp.MustCompile(`^digest: ([0-9a-f]{16})$`), 5, 7,
		"leanmd", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10", "--steps", "12", "--migrate-every", "10")
}
