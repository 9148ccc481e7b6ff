package launcher

import (
	"bytes"
	"log/slog"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A PE process killed after the job's end was decided is logged as such
// (nothing is recovered), unless the launcher's own stop killed it; one
// that ended by itself is not a failure.
func TestPEKilledAfterTheEndIsLogged(t *testing.T) {
	killed := exec.Command("sh", "-c", "kill -9 $$")
	require.Error(t, killed.Run())
	ended := exec.Command("true")
	require.NoError(t, ended.Run())

	var buf bytes.Buffer
	c := &coordinator{cfg: coordinatorConfig{Log: slog.New(slog.NewTextHandler(&buf, nil))}, events: make(chan any, 8), peers: make([]*peer, 3)}
	c.events <- processExited{rank: 1, pid: 11, state: killed.ProcessState}
	c.events <- processExited{rank: 2, pid: 12, state: ended.ProcessState}
	c.events <- evTick{}
	c.events <- processExited{rank: 0, pid: 10, state: killed.ProcessState}
	c.drainExits(func(pid int) bool { return pid == 10 })
	require.Empty(t, c.events)
	out := buf.String()
	require.Equal(t, 1, strings.Count(out, `msg="PE failed after the job's exit was requested; the job ends as decided" pe=1 `), out)
	require.NotContains(t, out, "pe=0 ", "killed by the launcher's own stop")
	require.NotContains(t, out, "pe=2 ", "ended by itself")

	// While the job is ending, the same goes through exited.
	buf.Reset()
	c.stopping = true
	c.exited(processExited{rank: 1, pid: 11, state: killed.ProcessState})
	require.Contains(t, buf.String(), "pe=1 ")
}
