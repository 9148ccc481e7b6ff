package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README shows this program in full; it must be this file, verbatim.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	require.Contains(t, string(readme), "```go\n"+string(src)+"```\n")
}

func TestHelloRunsOnThreePEs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hello")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "run", "hello", "--pes", "3").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "\n12 greeters answered; their ids add up to 192\n")
	require.Equal(t, 12, strings.Count(string(out), "hello, from PE"))
}
