package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gochare/gochare/bench/evaluation"
	"github.com/gochare/gochare/bench/transportbench"
)

// ErrUsage reports a command-line mistake (exit status 2).
var ErrUsage = errors.New("bench: usage")

// Usage is the part of gochare's usage text about `gochare bench`.
const Usage = `  gochare bench [--quick|--full|--tiny] [--out DIR] [--mtbf 24h] [--reps N] [--pes N] [--apps A,B]
      the evaluation: stencil3d, leanmd and lulesh under none, fulldet and
      partialdet; forward-path overhead, checkpoint time and size, recovery
      after a PE killed mid-period (restore spread 1, 2, all), Daly's
      checkpoint period; writes JSON, CSV, Markdown and PNG plots to DIR
      (default evaluation-results); --quick is the default
  gochare bench quota [--tiny] [--out DIR] [--reps N] [--pes N] [--apps leanmd,stencil3d] [--fractions 100,50,10] [--loggers 1,2]
      the log quota: leanmd and stencil3d with --log-quota at fractions of the
      log's unbounded high-water mark against the unbounded log, with one and
      two loggers; forward overhead, bytes dumped, time blocked, recovery
      after a PE killed; writes JSON, CSV, Markdown and a PNG plot to DIR
      (default quota-results)
  gochare bench eventlog [--tiny] [--out DIR] [--reps N] [--pes N] [--apps A,B] [--failures 1,2,3]
      the event logger: leanmd, stencil3d and lulesh under fulldet and
      partialdet with and without --loggers 1 --event-logger, and none;
      piggybacked bytes per step, forward overhead (wall and whole-job CPU)
      against none and against the protocol without the event logger,
      recovery after 1, 2 and 3 PEs killed at once (no two of them
      buddies); writes JSON, CSV, Markdown and PNG plots to DIR (default
      eventlog-results)
  gochare bench transport [--sizes 64,524288 --stacks gochare-tcp,gochare-protoactor,protoactor,tcp --time D --rounds N]
      transport latency and throughput between two PE processes
`

// Command is `gochare bench ARGS` run by the gochare executable: with no
// benchmark name, flags or "evaluation" it runs the evaluation, with
// "transport" the transport benchmark, and "transport-peer" is the echo
// side the transport benchmark starts. Both drivers run the executable
// itself (os.Executable), so it must be a gochare command that has this
// subcommand and the mini-apps.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("bench: %w", err)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "evaluation" {
		if len(args) > 0 && args[0] == "evaluation" {
			args = args[1:]
		}
		return evaluation.Main(args, stdout, exe)
	}
	switch args[0] {
	case "quota":
		return evaluation.QuotaMain(args[1:], stdout, exe)
	case "eventlog":
		return evaluation.EventLoggerMain(args[1:], stdout, exe)
	case "transport":
		return 0, transportbench.Main(ctx, args[1:], stdout, stderr, []string{exe, "bench", "transport-peer"})
	case "transport-peer":
		return 0, transportbench.Peer(args[1:], stderr)
	}
	return 2, fmt.Errorf("%w: unknown benchmark %q (evaluation, quota, eventlog, transport)", ErrUsage, args[0])
}
