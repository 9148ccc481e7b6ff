package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The gochare command has the subcommands that programs built on
// launcher.Main alone leave out, and the transport benchmark finds its
// peer subcommand in the executable it starts again.
func TestGochareHasBenchAndChaos(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gochare")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	out, err = exec.Command(bin, "help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{"gochare run APP", "gochare bench [--quick", "gochare bench transport", "gochare bench eventlog", "gochare chaos [--preset", "gochare apps"} {
		require.Contains(t, string(out), want)
	}
	require.NotContains(t, string(out), "not in this program")

	out, err = exec.Command(bin, "apps").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, app := range []string{"stencil3d", "leanmd", "lulesh", "gen"} {
		require.Contains(t, string(out), app)
	}

	// gochare bench transport starts `gochare bench transport-peer`.
	out, err = exec.Command(bin, "bench", "transport", "--stacks", "tcp", "--sizes", "64", "--time", "1ms", "--rounds", "1").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "| 64 B | round trip (µs) | – | – | ")
	require.Equal(t, 3, strings.Count(string(out), "| 64 B |"), "%s", out)

	out, err = exec.Command(bin, "chaos", "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "usage: gochare chaos")

	// Without a benchmark name, or with "evaluation", the evaluation reads
	// the flags (a wrong one stops it before any job).
	for _, args := range [][]string{{"bench", "--nosuch"}, {"bench", "evaluation", "--nosuch"}} {
		out, err = exec.Command(bin, args...).CombinedOutput()
		requireStatus(t, 2, err, out)
		require.Contains(t, string(out), "gochare: evaluation: flag provided but not defined: -nosuch")
	}
	out, err = exec.Command(bin, "bench", "nosuch").CombinedOutput()
	requireStatus(t, 2, err, out)
	require.Contains(t, string(out), `unknown benchmark "nosuch"`)
}

func requireStatus(t *testing.T, status int, err error, out []byte) {
	t.Helper()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, status, exit.ExitCode(), "%s", out)
}
