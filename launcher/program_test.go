package launcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A program built on Main alone has no bench or chaos: asked for them, it
// says where they are.
func TestProgramWithoutTools(t *testing.T) {
	for _, name := range []string{"bench", "chaos"} {
		var stdout, stderr bytes.Buffer
		status := Main([]string{name, "--quick"}, &stdout, &stderr)
		require.Equal(t, 2, status)
		require.Contains(t, stderr.String(), `"`+name+`" is a subcommand of the gochare command`)
		require.Contains(t, stderr.String(), "github.com/gochare/gochare/cmd/gochare")
		require.Empty(t, stdout.String())
	}
	var stdout bytes.Buffer
	require.Equal(t, 0, Main([]string{"help"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "gochare run APP")
	require.Contains(t, stdout.String(), "(gochare bench, gochare chaos: in the gochare command")
}

// A program built on Main links the runtime and its applications, not the
// benchmark drivers, the chaos campaign or the plotting library, nor
// protoactor-go and gRPC (which more than doubled its size): its
// transport is the TCP endpoint of scheduler/transport.
func TestProgramsLinkNoTools(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps",
		"github.com/gochare/gochare/launcher", "github.com/gochare/gochare/examples/hello").Output()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/gochare/gochare/scheduler/transport")
	for _, p := range deps {
		for _, banned := range []string{"github.com/gochare/gochare/bench", "github.com/gochare/gochare/chaos", "gonum.org/",
			"google.golang.org/grpc", "github.com/asynkron/protoactor-go", "github.com/gochare/gochare/scheduler/transport/protoactor"} {
			require.False(t, strings.HasPrefix(p, banned), "an app binary links %s", p)
		}
	}
}

// Program.Main runs the commands a program adds, with the arguments after
// the name, and turns their status and error into the exit status.
func TestProgramCommands(t *testing.T) {
	var got []string
	p := Program{Commands: []Command{{
		Name:  "bench",
		Usage: "  gochare bench THING\n      a test command\n",
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
			require.NotNil(t, ctx)
			got = args
			io.WriteString(stdout, "ran\n")
			switch args[0] {
			case "fail":
				return 0, errors.New("it failed")
			case "usage":
				return 2, errors.New("bad flag")
			}
			return 0, nil
		},
	}}}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, p.Main([]string{"bench", "ok", "--x"}, &stdout, &stderr))
	require.Equal(t, []string{"ok", "--x"}, got)
	require.Equal(t, "ran\n", stdout.String())
	require.Empty(t, stderr.String())

	stderr.Reset()
	require.Equal(t, 1, p.Main([]string{"bench", "fail"}, io.Discard, &stderr))
	require.Equal(t, "gochare: it failed\n", stderr.String())
	stderr.Reset()
	require.Equal(t, 2, p.Main([]string{"bench", "usage"}, io.Discard, &stderr))
	require.Equal(t, "gochare: bad flag\n", stderr.String())

	// The usage has the command's part; only chaos is said to be missing.
	stdout.Reset()
	require.Equal(t, 0, p.Main([]string{"--help"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "  gochare bench THING\n      a test command\n")
	require.Contains(t, stdout.String(), "(gochare chaos: in the gochare command")
	stderr.Reset()
	require.Equal(t, 2, p.Main([]string{"chaos"}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), `"chaos" is a subcommand of the gochare command`)
}

// A program without the protoactor transport refuses --transport
// protoactor at once, naming the transports it has, for run and pe alike.
func TestProgramRefusesTransportItLacks(t *testing.T) {
	var stderr bytes.Buffer
	require.Equal(t, 2, Main([]string{"pe", "--coordinator", "127.0.0.1:1", "--rank", "0", "--size", "1", "--transport", "protoactor"}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), `--transport "protoactor": this program has the transports tcp`)
	p := Program{Transports: map[string]Transport{"tcp": DefaultTransports()["tcp"], "other": DefaultTransports()["tcp"]}}
	stderr.Reset()
	require.Equal(t, 2, p.Main([]string{"pe", "--coordinator", "127.0.0.1:1", "--rank", "0", "--size", "1", "--transport", "udp"}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), `this program has the transports other, tcp`)
}

// GOCHARE_DEBUG_PROTOACTOR, read by `gochare pe` and passed to the
// transport as Config.ProtoActorLog, shows protoactor's own log lines;
// without it they are dropped. The job runs on the protoactor transport
// (--transport protoactor, which the launcher passes to its PEs).
func TestDebugProtoActorEnv(t *testing.T) {
	for _, on := range []bool{false, true} {
		if on {
			t.Setenv("GOCHARE_DEBUG_PROTOACTOR", "1")
		}
		j := startJob(t, "run", "stencil3d", "--pes", "2", "--iterations", "3", "--transport", "protoactor")
		require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
		shown := strings.Contains(j.output(), "lib=protoactor")
		require.Equal(t, on, shown, "GOCHARE_DEBUG_PROTOACTOR set: %v\n%s", on, j.output())
	}
}
