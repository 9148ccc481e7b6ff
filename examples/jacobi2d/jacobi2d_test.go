package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
	"github.com/gochare/gochare/job/inprocess"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

var resultLine = regexp.MustCompile(`(?m)^jacobi2d: 16 blocks of 16x16, 30 iterations: heat \S+, squares \S+ \(([0-9a-f]{16})\)$`)

// The program runs on three PE processes; PE 1 is killed (SIGKILL) at
// step 12, under the default flags and under each protocol with a
// checkpoint every 5 steps; every run recovers once and ends with the
// failure-free result, which equals the serial one bit for bit.
func TestJacobi2DRecoversFromAKillWithTheFailureFreeResult(t *testing.T) {
	bin := testbin.Build(t, ".")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"run", "jacobi2d", "--pes", "3"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		require.Contains(t, string(out), "\nreference: match\n", "%v: %s", args, out)
		return string(out)
	}
	clean := run()
	m := resultLine.FindStringSubmatch(clean)
	require.NotNil(t, m, clean)
	want := m[1]
	for _, args := range [][]string{
		{"--kill", "pe=1,at=step:12"},
		{"--ft", "partialdet", "--checkpoint-every", "5", "--kill", "pe=1,at=step:12"},
		{"--ft", "fulldet", "--checkpoint-every", "5", "--kill", "pe=1,at=step:12"},
		{"--ft", "none", "--checkpoint-every", "5", "--kill", "pe=1,at=step:12"},
	} {
		out := run(args...)
		require.Regexp(t, `PE failed.*PE 1 .*killed by signal 9`, out, "%v", args)
		require.Regexp(t, `msg="recovery 1 of 1:`, out, "%v", args)
		m := resultLine.FindStringSubmatch(out)
		require.NotNil(t, m, "%v: %s", args, out)
		require.Equal(t, want, m[1], "%v: result after the kill", args)
	}
}

// Every command docs/tutorial.md shows (its ```sh blocks) runs here, on
// the program built from this directory, and prints what the ```text
// block after it shows (every line of it, in the output), with the exit
// status the block states, 0 if it states none.
func TestTutorialCommandsRunAsShown(t *testing.T) {
	doc, err := os.ReadFile("../../docs/tutorial.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```\n+```text\n(.*?)```\n").FindAllStringSubmatch(string(doc), -1)
	require.Len(t, blocks, strings.Count(string(doc), "```sh\n"), "every ```sh block is followed by a ```text block of its output")
	require.GreaterOrEqual(t, len(blocks), 4)
	bin := testbin.Build(t, ".")
	const prefix = "go run ./examples/jacobi2d "
	for _, b := range blocks {
		cmd := strings.TrimSpace(b[1])
		require.True(t, strings.HasPrefix(cmd, prefix) && !strings.Contains(cmd, "\n"), "the tutorial shows %q: this test runs one %q... command per block", cmd, prefix)
		out, err := exec.Command(bin, strings.Fields(strings.TrimPrefix(cmd, prefix))...).CombinedOutput()
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
		} else {
			require.NoError(t, err, cmd)
		}
		wantStatus := 0
		sc := bufio.NewScanner(strings.NewReader(b[2]))
		for sc.Scan() {
			line := sc.Text()
			if m := regexp.MustCompile(`^\(exit status (\d+)\)$`).FindStringSubmatch(line); m != nil {
				wantStatus, err = strconv.Atoi(m[1])
				require.NoError(t, err)
				continue
			}
			// " ... " stands for what varies from run to run: the parts
			// around it appear in this order on one line of the output.
			parts := strings.Split(line, " ... ")
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			require.Regexp(t, "(?m)"+strings.Join(parts, ".*"), string(out), "%s: the tutorial shows this line of its output", cmd)
		}
		require.Equal(t, wantStatus, status, "%s: exit status\n%s", cmd, out)
	}
}

// The tutorial walks through this program: every Go excerpt it shows
// (each part of a ```go block between blank lines) is in main.go or
// reference.go verbatim, and together they show every line of them but
// the imports.
func TestTutorialShowsTheProgram(t *testing.T) {
	doc, err := os.ReadFile("../../docs/tutorial.md")
	require.NoError(t, err)
	program, err := os.ReadFile("main.go")
	require.NoError(t, err)
	check, err := os.ReadFile("reference.go")
	require.NoError(t, err)
	src := append(program, check...)
	shown := map[string]bool{}
	for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```\n").FindAllStringSubmatch(string(doc), -1) {
		for _, part := range strings.Split(b[1], "\n\n") {
			require.Contains(t, string(src), part, "the tutorial shows this, which the program does not hold")
			for _, line := range strings.Split(part, "\n") {
				shown[line] = true
			}
		}
	}
	imports := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case line == "import (":
			imports = true
		case imports:
			imports = line != ")"
		case line != "" && !shown[line]:
			t.Errorf("the tutorial does not show this line of the program: %q", line)
		}
	}
}

// Run in one process over several sizes (one block alone, whose four
// neighbours are itself; two by two, whose up and down neighbours are the
// same block), the program matches its serial reference.
func TestJacobi2DMatchesTheReferenceInProcess(t *testing.T) {
	for _, args := range [][]string{{"--tasks", "1", "--n", "3", "--iters", "4"}, {"--tasks", "2", "--n", "5", "--iters", "7"}, {"--tasks", "3", "--n", "1", "--iters", "3"}} {
		res, err := inprocess.Run(context.Background(), App, args, 2, nil)
		require.NoError(t, err, "%v", args)
		require.Equal(t, 0, res.Status)
		require.Contains(t, res.Output, "reference: match", "%v: %v", args, res.Output)
	}
}

func TestJacobi2DRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"--tasks", "0"}, {"--n", "0"}, {"--iters", "0"}, {"--", "--tasks", "2"}} {
		_, err := inprocess.Run(context.Background(), App, args, 1, nil)
		require.ErrorContains(t, err, "want numbers of at least 1, no extra argument", "%v", args)
	}
}

// The program is plain Go: no generated code and no Marshal methods; and
// it is short: main.go, the whole program but the serial computation it
// checks its result against (reference.go), has at most 150 lines of
// code (neither blank nor comment), its imports included.
func TestJacobi2DIsPlainGoInAtMost150Lines(t *testing.T) {
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
	code := 0
	for _, line := range strings.Split(string(src), "\n") {
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "//") {
			code++
		}
	}
	require.Greater(t, code, 100)
	require.LessOrEqual(t, code, 150)
	t.Logf("%d lines of code", code)
}
