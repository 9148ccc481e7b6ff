package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
	"github.com/gochare/gochare/job/inprocess"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

var totalLine = regexp.MustCompile(`(?m)^ring: 8 tasks, 20 steps: total \S+ \(([0-9a-f]{16})\)$`)

// The ring runs on three PE processes, under each protocol, once without
// a failure and once with PE 1 killed (SIGKILL) in the middle of the run;
// every run ends with the same total, which equals the serial one.
func TestRingRecoversFromAKillWithTheFailureFreeResult(t *testing.T) {
	bin := testbin.Build(t, ".")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"run", "ring", "--pes", "3"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "\nreference: match\n", "%s", out)
		return string(out)
	}
	clean := run("--ft", "none")
	m := totalLine.FindStringSubmatch(clean)
	require.NotNil(t, m, clean)
	want := m[1]
	for _, ft := range []string{"partialdet", "fulldet", "none"} {
		out := run("--ft", ft, "--checkpoint-every", "4", "--kill", "pe=1,at=step:9")
		require.Regexp(t, `PE failed.*PE 1 .*killed by signal 9`, out, "--ft %s", ft)
		require.Regexp(t, `msg="recovery 1 of 1:`, out, "--ft %s", ft)
		m := totalLine.FindStringSubmatch(out)
		require.NotNil(t, m, "--ft %s: %s", ft, out)
		require.Equal(t, want, m[1], "--ft %s: total after the kill", ft)
	}
}

// The program is plain Go: no generated code and no Marshal methods.
func TestRingHasNoGeneratedCodeNorMarshalMethods(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	for _, banned := range []string{"protobuf", "MarshalBinary", "UnmarshalBinary", ".pb.go"} {
		require.NotContains(t, string(src), banned)
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasSuffix(e.Name(), ".pb.go") || strings.HasSuffix(e.Name(), ".proto"), e.Name())
	}
}

// Run in one process over many sizes, the ring matches its serial
// reference: the regions sized at run time close after hops(s) parts,
// also on rings shorter than the hops (a task then gets parts from
// itself).
func TestRingMatchesTheReferenceInProcess(t *testing.T) {
	for _, args := range [][]string{{"--tasks", "1", "--steps", "4"}, {"--tasks", "2", "--steps", "7"}, {"--tasks", "5", "--steps", "3"}} {
		res, err := inprocess.Run(context.Background(), App, args, 2, nil)
		require.NoError(t, err, "%v", args)
		require.Equal(t, 0, res.Status)
		require.Contains(t, res.Output, "reference: match", "%v: %v", args, res.Output)
	}
}

func TestRingRefusesBadArguments(t *testing.T) {
	_, err := inprocess.Run(context.Background(), App, []string{"--tasks", "0"}, 1, nil)
	require.ErrorContains(t, err, "--tasks 0")
}
