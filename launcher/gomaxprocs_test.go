package launcher

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGomaxprocsEnv(t *testing.T) {
	for _, c := range []struct {
		environ     []string
		cpus, procs int
		want        []string
	}{
		{nil, 2, 2, []string{"GOMAXPROCS=1"}},
		{nil, 2, 5, []string{"GOMAXPROCS=1"}},
		{nil, 8, 3, []string{"GOMAXPROCS=2"}},
		{nil, 8, 4, []string{"GOMAXPROCS=2"}},
		{nil, 2, 1, nil},                                // one process may use every CPU: Go's default
		{nil, 1, 4, nil},                                // one CPU: Go's default is 1 already
		{[]string{"HOME=/", "GOMAXPROCS=3"}, 2, 2, nil}, // the user's choice stays
	} {
		require.Equal(t, c.want, gomaxprocsEnv(c.environ, c.cpus, c.procs), "%v cpus %d procs %d", c.environ, c.cpus, c.procs)
	}
}

// The PEs gochare run starts share the machine's CPUs: each runs at most
// its share of threads of Go code; GOMAXPROCS in the user's environment
// reaches them as it is.
// goMaxProcsAtStart is GOMAXPROCS in the test process's environment as
// it started (subtests unset it).
var goMaxProcsAtStart = os.Getenv("GOMAXPROCS")

func TestPEsShareTheCPUs(t *testing.T) {
	re := regexp.MustCompile(`msg="PE stats" pe=(\d) .* gomaxprocs=(\d+)`)
	run := func(t *testing.T, extra ...string) []int {
		j := startJob(t, append([]string{"run", "stencil3d", "--pes", "2", "--grid", "32,32,32", "--chunk", "16,16,16", "--iterations", "4"}, extra...)...)
		require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
		j.waitLine(t, regexp.MustCompile(`msg="job stats"`), time.Second)
		var got []int
		for _, m := range re.FindAllStringSubmatch(j.output(), -1) {
			n, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			got = append(got, n)
		}
		require.Len(t, got, 2, j.output())
		return got
	}
	t.Run("default", func(t *testing.T) {
		t.Setenv("GOMAXPROCS", "")
		require.NoError(t, os.Unsetenv("GOMAXPROCS"))
		share := max(1, runtime.NumCPU()/2)
		for _, g := range run(t) {
			// The CPUs the launcher may use can be fewer than NumCPU (a
			// cgroup's limit), never more.
			require.GreaterOrEqual(t, g, 1)
			require.LessOrEqual(t, g, share)
			if runtime.NumCPU() <= 3 {
				require.Equal(t, 1, g)
			}
		}
	})
	t.Run("with loggers", func(t *testing.T) {
		// The PEs serve their streams to the loggers themselves: their
		// share too.
		t.Setenv("GOMAXPROCS", "")
		require.NoError(t, os.Unsetenv("GOMAXPROCS"))
		share := max(1, runtime.NumCPU()/2)
		for _, flags := range [][]string{{"--ft", "fulldet", "--event-logger"}, {"--ft", "partialdet", "--log-quota", "1000000"}} {
			for _, g := range run(t, append(flags, "--loggers", "1")...) {
				require.GreaterOrEqual(t, g, 1)
				require.LessOrEqual(t, g, share)
			}
		}
	})
	t.Run("with loggers under TLS", func(t *testing.T) {
		// The goroutines serve the PEs' streams to the loggers: Go's
		// default, the CPUs a process of this machine may use, which is
		// this test process's own when its environment set none.
		if goMaxProcsAtStart != "" || testing.Short() {
			t.Skip("GOMAXPROCS set for the test process, or -short: Go's default unknown")
		}
		t.Setenv("GOMAXPROCS", "")
		require.NoError(t, os.Unsetenv("GOMAXPROCS"))
		for _, g := range run(t, "--ft", "fulldet", "--event-logger", "--loggers", "1", "--tls") {
			require.Equal(t, runtime.GOMAXPROCS(0), g)
		}
	})
	t.Run("user's", func(t *testing.T) {
		t.Setenv("GOMAXPROCS", "3")
		require.Equal(t, []int{3, 3}, run(t))
	})
}

func TestIdlePollFlag(t *testing.T) {
	for _, c := range []struct {
		cpus, procs int
		want        []string
	}{
		{2, 2, nil}, // a core each: the PEs poll for input (the pe command's default)
		{2, 1, nil},
		{8, 3, nil},
		{2, 3, []string{"--idle-poll", "0"}}, // more processes than cores: none polls
		{2, 4, []string{"--idle-poll", "0"}},
		{1, 2, []string{"--idle-poll", "0"}},
	} {
		require.Equal(t, c.want, idlePollFlag(c.cpus, c.procs), "cpus %d procs %d", c.cpus, c.procs)
	}
}
