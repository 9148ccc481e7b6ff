package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// The README shows this program in full; it must be this file, verbatim.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	require.Contains(t, string(readme), "```go\n"+string(src)+"```\n")
}

func TestHelloRunsOnThreePEs(t *testing.T) {
	out, err := exec.Command(testbin.Build(t, "."), "run", "hello", "--pes", "3").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "\n12 greeters answered; their ids add up to 192\n")
	require.Equal(t, 12, strings.Count(string(out), "hello, from PE"))
}

// This program carries only the default transport (TCP): it does not link
// protoactor-go, and says so when asked for it.
func TestHelloHasOnlyTheTCPTransport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"google.golang.org/grpc", "github.com/asynkron/protoactor-go"} {
			require.False(t, strings.HasPrefix(p, banned), "the hello binary links %s", p)
		}
	}
	out, err = exec.Command(testbin.Build(t, "."), "run", "hello", "--pes", "2", "--transport", "protoactor").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), `--transport "protoactor": this program has the transports tcp`)
	out, err = exec.Command(testbin.Build(t, "."), "run", "hello", "--pes", "2", "--transport", "tcp").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "greeters answered")
}

// Every test README cites for a statement (in its "*(Test...)*" notes)
// exists, so that the README's claims stay backed as the code changes.
func TestREADMECitesExistingTests(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	cited := regexp.MustCompile(`\*\(([^)]*)\)\*`).FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, cited, "README cites no test")
	defined := map[string]bool{}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(`).FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	names := 0
	for _, c := range cited {
		for _, name := range regexp.MustCompile(`\bTest\w+`).FindAllString(c[1], -1) {
			names++
			require.True(t, defined[name], "README cites %s, which no test file defines", name)
		}
	}
	require.Greater(t, names, 20)
}
