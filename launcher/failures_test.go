package launcher

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

func TestFailuresFlag(t *testing.T) {
	o, _, err := splitRunArgs([]string{"--pes", "4"})
	require.NoError(t, err)
	require.Zero(t, o.failures, "not given: the runtime's default")
	for _, args := range [][]string{
		{"--pes", "4", "--failures", "1"},
		{"--pes", "4", "--failures=1", "--ft", "fulldet"},
		{"--pes", "2", "--failures", "1"},
	} {
		o, _, err := splitRunArgs(args)
		require.NoError(t, err, "%v", args)
		require.Equal(t, 1, o.failures, "%v", args)
	}
	o, _, err = splitRunArgs([]string{"--pes", "12", "--failures", "8"})
	require.NoError(t, err)
	require.Equal(t, 8, o.failures)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pes", "4", "--failures", "0"}, `--failures "0": want a number of PE failures from 1 to 8`},
		{[]string{"--pes", "4", "--failures", "-1"}, `--failures "-1": want a number of PE failures from 1 to 8`},
		{[]string{"--pes", "4", "--failures", "two"}, `--failures "two": want a number of PE failures from 1 to 8`},
		{[]string{"--pes", "4", "--failures"}, "--failures needs a value"},
		{[]string{"--pes", "12", "--failures", "9"}, "f=9, at most 8"},
		{[]string{"--pes", "4", "--failures", "4"}, "f=4 on 4 PEs, at most 3"},
		{[]string{"--pes", "4", "--failures", "1", "--ft", "none"}, "--failures 1 (with --ft none, --pes 4): logging: bad failure bound: checkpoint/restart (None) keeps no record"},
		{[]string{"--pes", "4", "--failures", "1", "--loggers", "1", "--event-logger"}, "--event-logger): logging: bad failure bound: with an event logger"},
	} {
		_, _, err := splitRunArgs(c.args)
		require.ErrorIs(t, err, errUsage, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
	_, _, err = splitRunArgs([]string{"--pes", "4", "--failures", "9"})
	require.ErrorIs(t, err, logging.ErrFailureBoundConfig)
}

var (
	tooManyLine   = regexp.MustCompile(`PE 2 failed: logging: more PE failures since the last checkpoint than the protocol survives: 2 PEs failed since the last checkpoint, \w+ keeps each record on 2 PEs \(f=1\); every task rolls back to checkpoint \d+ instead`)
	piggybackLine = regexp.MustCompile(`msg="job stats" .* piggybacked_bytes=(\d+) `)
)

// --failures 1 on real PE processes (Stencil3D on 4 PEs, checkpoints at
// steps 9, 19, ...), under FullDet and PartialDet: one kill is recovered
// by restoring only the failed PE's tasks; a second kill since the last
// checkpoint makes the coordinator roll every task back to it, and the log
// says why; with the default f = 2 the same two kills are recovered by
// restoring the failed PEs' tasks only. Every run ends with the
// failure-free digest. Without a failure, FullDet piggybacks fewer bytes
// with f = 1: the PEs run the job's f.
func TestFailureBoundOne(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	twoKills := []string{"--kill", "pe=1,at=step:32", "--kill", "pe=2,at=step:35"}
	for _, ft := range []string{"fulldet", "partialdet"} {
		t.Run(ft, func(t *testing.T) {
			base := append(append([]string(nil), stencilArgs...), "--ft", ft)
			run := func(t *testing.T, extra ...string) (restored, rolledBack int, j *job) {
				t.Helper()
				j = startJob(t, append(append([]string(nil), base...), extra...)...)
				require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
				require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1], "output:\n%s", j.output())
				stats := j.waitLine(t, jobStatsLine, time.Second)
				require.Equal(t, ft, stats[1])
				restored, _ = strconv.Atoi(stats[3])
				rolledBack, _ = strconv.Atoi(stats[4])
				return restored, rolledBack, j
			}
			t.Run("one kill", func(t *testing.T) {
				restored, rolledBack, j := run(t, "--failures", "1", "--kill", "pe=1,at=step:27")
				j.waitLine(t, regexp.MustCompile(`msg="all PEs ready; job begins" pes=4 ft=`+ft+` failures=1$`), time.Second)
				require.Positive(t, restored, "PE 1's tasks are restored")
				require.Zero(t, rolledBack, "no survivor rolls back")
				require.NotRegexp(t, tooManyLine, j.output())
			})
			t.Run("two kills between checkpoints", func(t *testing.T) {
				_, rolledBack, j := run(t, append([]string{"--failures", "1"}, twoKills...)...)
				for _, pe := range []int{1, 2} {
					j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %d .*killed by signal 9`, pe)), time.Second)
				}
				j.waitLine(t, tooManyLine, time.Second)
				require.Positive(t, rolledBack, "the survivors roll back to the checkpoint")
			})
			t.Run("two kills with the default", func(t *testing.T) {
				restored, rolledBack, j := run(t, twoKills...)
				for _, pe := range []int{1, 2} {
					j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %d .*killed by signal 9`, pe)), time.Second)
				}
				require.Positive(t, restored)
				require.Zero(t, rolledBack, "f = 2 recovers two failures by replay")
				require.NotContains(t, j.output(), "more PE failures since the last checkpoint")
			})
		})
	}
	t.Run("piggyback", func(t *testing.T) {
		bytes := map[string]int{}
		for _, f := range []string{"1", "2"} {
			j := startJob(t, append(append([]string(nil), stencilArgs...), "--ft", "fulldet", "--failures", f)...)
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
			bytes[f], _ = strconv.Atoi(j.waitLine(t, piggybackLine, time.Second)[1])
		}
		require.Less(t, bytes["1"], bytes["2"]*3/4, "records stop riding once two PEs hold them: %v", bytes)
	})
}
