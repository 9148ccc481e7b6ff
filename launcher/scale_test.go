package launcher

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/apps/stencil3d"
)

// Jobs on many PE processes (docs/scaling.md). The cheap one runs always;
// those on 64 PEs and the job of a million tasks take minutes to an hour
// on a 2-core machine and run only with GOCHARE_SCALE=1 (and a go test
// -timeout to match, e.g. 2h).

// scaleEnv turns on the expensive tests of this file.
const scaleEnv = "GOCHARE_SCALE"

func needScale(t *testing.T) {
	t.Helper()
	if os.Getenv(scaleEnv) == "" {
		t.Skipf("a job on many PEs: set %s=1 to run it", scaleEnv)
	}
}

// stencilReference is the job digest of a Stencil3D configuration from
// the serial solver (it does not depend on the number of PEs).
func stencilReference(grid, chunk [3]int, iterations int) string {
	var hashes []uint64
	for _, r := range stencil3d.SolveSerial(stencil3d.Config{Grid: grid, Chunk: chunk, Iterations: iterations}) {
		hashes = append(hashes, r.FNV1a)
	}
	return fmt.Sprintf("%016x", stencil3d.JobDigest(hashes))
}

// triple formats an X,Y,Z flag value.
func triple(v [3]int) string { return fmt.Sprintf("%d,%d,%d", v[0], v[1], v[2]) }

// scaleFlags are the launcher flags of a job of many PEs on a loaded
// machine of few cores: the PEs start one after the other and may wait
// long for the CPU, so joining, heartbeats and progress get bounds in
// minutes (the defaults are for PEs with a core each).
var scaleFlags = []string{"--join-timeout", "10m", "--heartbeat-timeout", "60s", "--stall-timeout", "20m"}

// killedRun runs a job whose PE kill kills itself at a step and checks that
// it ends with status 0, the PE reported killed by SIGKILL, and digest
// want (the submatch of digest).
func killedRun(t *testing.T, timeout time.Duration, digest *regexp.Regexp, want string, kill int, args ...string) *job {
	t.Helper()
	j := startJob(t, args...)
	require.Equal(t, 0, j.wait(t, timeout), j.output())
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %d \(pid \d+.*killed by signal 9`, kill)), time.Second)
	require.Equal(t, want, j.waitLine(t, digest, time.Second)[1], "digest after the failure, output:\n%s", j.output())
	j.waitLine(t, regexp.MustCompile(`msg="job stats".*restored_tasks=[1-9]`), time.Second)
	return j
}

// 16 PE processes, one of them SIGKILLed at step 12 of 20 under
// partialdet: the job ends with the serial solver's digest, the dead PE's
// tasks restored on the survivors.
func TestKillOn16PEsEndsWithSerialDigest(t *testing.T) {
	grid, chunk, iters := [3]int{16, 16, 16}, [3]int{4, 4, 4}, 20
	want := stencilReference(grid, chunk, iters)
	args := append([]string{"run", "stencil3d", "--pes", "16", "--grid", triple(grid), "--chunk", triple(chunk),
		"--iterations", strconv.Itoa(iters), "--checkpoint-every", "5", "--kill", "pe=5,at=step:12"}, scaleFlags...)
	killedRun(t, 10*time.Minute, digestLine, want, 5, args...)
}

// Each mini-app on 64 PE processes with one SIGKILLed: the result is the
// failure-free one (the serial solver's for Stencil3D; for LeanMD and
// LULESH, whose digests do not depend on the PE count, that of a clean run
// on 4 PEs).
func TestScale64PEsEachAppWithAKill(t *testing.T) {
	needScale(t)
	const pes = "64"
	t.Run("stencil3d", func(t *testing.T) {
		grid, chunk, iters := [3]int{32, 32, 32}, [3]int{4, 4, 4}, 30
		want := stencilReference(grid, chunk, iters)
		args := append([]string{"run", "stencil3d", "--pes", pes, "--grid", triple(grid), "--chunk", triple(chunk),
			"--iterations", strconv.Itoa(iters), "--checkpoint-every", "10", "--kill", "pe=17,at=step:15"}, scaleFlags...)
		killedRun(t, time.Hour, digestLine, want, 17, args...)
	})
	for _, app := range []struct {
		name   string
		digest *regexp.Regexp
		flags  []string
		kill   int // the PE killed
		step   int // at this step
	}{
		{"leanmd", regexp.MustCompile(`^digest: ([0-9a-f]{16})$`),
			[]string{"--cells", "4,4,4", "--kaway", "1,1,1", "--atoms", "10", "--steps", "12", "--migrate-every", "10", "--checkpoint-every", "5"}, 33, 7},
		{"lulesh", regexp.MustCompile(`"digest":"([0-9a-f]{16})"`),
			[]string{"--size", "16", "--chunk", "4,4,4", "--iterations", "30", "--checkpoint-every", "10", "--json"}, 40, 23},
	} {
		t.Run(app.name, func(t *testing.T) {
			clean := startJob(t, append([]string{"run", app.name, "--pes", "4"}, app.flags...)...)
			require.Equal(t, 0, clean.wait(t, 20*time.Minute), clean.output())
			want := clean.waitLine(t, app.digest, time.Second)[1]
			kill := fmt.Sprintf("pe=%d,at=step:%d", app.kill, app.step)
			args := append(append([]string{"run", app.name, "--pes", pes, "--kill", kill}, app.flags...), scaleFlags...)
			killedRun(t, time.Hour, app.digest, want, app.kill, args...)
		})
	}
}

// A job of 1,000,000 tasks (Stencil3D, 100³ chunks of one point) on 4 PE
// processes, one SIGKILLed at step 2 of 3: it ends with the serial
// solver's digest.
func TestScaleMillionTasksWithAKill(t *testing.T) {
	needScale(t)
	grid, chunk, iters := [3]int{100, 100, 100}, [3]int{1, 1, 1}, 4
	want := stencilReference(grid, chunk, iters)
	args := append([]string{"run", "stencil3d", "--pes", "4", "--grid", triple(grid), "--chunk", triple(chunk),
		"--iterations", strconv.Itoa(iters), "--kill", "pe=2,at=step:2"}, scaleFlags...)
	killedRun(t, 2*time.Hour, digestLine, want, 2, args...)
}
