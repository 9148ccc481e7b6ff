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

// Three rollbacks under none, the first interrupted: PE 1 dies at step
// 6 (checkpoints at steps 4 and 9), PE 4 as soon as the rollback for it
// starts, and PE 0 when the tasks, rolled back a second time, reach step
// 8. PE 2 restores, and adopts into its own copy, tasks of PE 1 in the
// first rollback; the second places some of them on PE 0 and PE 3. The
// third, for PE 0 alone, used to restore those on PE 2 from its own copy
// as well as on PE 3, and the job went quiescent with messages sent to
// the other copy ("no task called Exit").
func TestLeanMDThirdRollbackAfterAnInterruptedOne(t *testing.T) {
	digest := regexp.MustCompile(`^digest: ([0-9a-f]{16})$`)
	base := []string{"run", "leanmd", "--pes", "5", "--ft", "none", "--checkpoint-every", "5",
		"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10", "--steps", "12", "--migrate-every", "10"}
	clean := startJob(t, base...)
	require.Equal(t, 0, clean.wait(t, time.Minute), clean.output())
	want := clean.waitLine(t, digest, time.Second)[1]

	j := startJob(t, append(base, "--kill", "pe=1,at=step:6", "--kill", "pe=4,at=recovery:1", "--kill", "pe=0,at=step:8")...)
	require.Equal(t, 0, j.wait(t, time.Minute), j.output())
	for gen, pe := range []int{1, 4, 0} {
		j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE %d failed: every task rolls back to checkpoint 2 \(generation %d\)`, pe, gen+1)), time.Second)
	}
	require.Equal(t, want, j.waitLine(t, digest, time.Second)[1], "digest after three rollbacks, output:\n%s", j.output())
}
