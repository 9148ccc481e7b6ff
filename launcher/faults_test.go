package launcher

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

// On real PE processes, a handler's panic stops the job with the task,
// the handler, the panic's value and the stack, under every protocol.
func TestHandlerPanicOnPEProcessStopsTheJob(t *testing.T) {
	for _, ft := range []string{"none", "partialdet"} {
		j := startBinary(t, testbin.Build(t, faultsPackage), "run", "faults", "--pes", "3", "--ft", ft, "--panic-at", "4")
		require.Equal(t, 1, j.wait(t, 60*time.Second), ft)
		out := j.output()
		require.Regexp(t, `gochare: PE 2: scheduler: handler panicked: workers\(5\), handler token, on PE 2: worker 5 was told to panic at step 4`, out)
		require.Contains(t, out, "faults/main.go", "the panic's stack")
	}
}

// A handler that never returns: the job stops after --stall-timeout with
// a diagnosis that names it, instead of hanging.
func TestStalledJobStopsWithDiagnosis(t *testing.T) {
	j := startBinary(t, testbin.Build(t, faultsPackage), "run", "faults", "--pes", "3", "--hang-at", "4", "--stall-timeout", "2s")
	require.Equal(t, 1, j.wait(t, 60*time.Second))
	out := j.output()
	require.Contains(t, out, "gochare: job: stalled: no progress for 2s (--stall-timeout)")
	require.Contains(t, out, "PE 2 is running workers(5) in handler token (a handler that does not return?)")
	require.Regexp(t, regexp.MustCompile(`PE 0 \(generation 0, \d+ handlers run\)`), out)
}

// A job that goes quiet before any task calls Exit stops at once, with
// what every PE's tasks wait for.
func TestQuiescentJobWithoutExitIsDiagnosed(t *testing.T) {
	j := startBinary(t, testbin.Build(t, faultsPackage), "run", "faults", "--pes", "3", "--no-exit")
	require.Equal(t, 1, j.wait(t, 60*time.Second))
	out := j.output()
	require.Contains(t, out, "gochare: job: quiescent but no task called Exit")
	for _, pe := range []string{"PE 0 (generation 0", "PE 1 (generation 0", "PE 2 (generation 0"} {
		require.Contains(t, out, pe)
	}
}
