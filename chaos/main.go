package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Usage is the command's usage text.
const Usage = `usage: gochare chaos [flags]
  a seeded reliability campaign: real jobs, one at a time, with PEs killed,
  stopped or paused; each must end with its failure-free digest
  --preset full|ci|loggers
                          full (default): stencil3d, leanmd, lulesh jobs of a
                          few seconds on 3-5 PEs, every kind of PE failure,
                          100 runs; ci: the smallest jobs on 3 PEs, 9 runs,
                          some with loggers, one logger killed; loggers: full's jobs with loggers (every
                          setup), loggers killed or stopped, 2-3 PEs killed
                          at once, PEs killed, 24 runs
  --runs N                number of runs (default: the preset's)
  --seed S                seed of the plan (default: a random one, printed)
  --only LIST             do only these runs of the plan: "37", "3,8",
                          "600-999" (a replay, or the rest of a campaign)
  --apps A,B              applications (default: stencil3d,leanmd,lulesh)
  --ft P,Q                protocols (default: none,fulldet,partialdet)
  --pes LIST              PE counts, "3,4,5" or "3-5" (default: the preset's)
  --kinds K,...           failure kinds: step, two, recovery, checkpoint,
                          external, stop, pause, logger, logger-pe,
                          logger-stop, many (default: the preset's)
  --loggers S,...         logger setups runs draw from: none, plain
                          (--loggers K), event (--event-logger), quota
                          (--log-quota, 10-100 % of the unbounded run's
                          log_peak_bytes), both (default: the preset's;
                          none in full)
  --out DIR               write runs.jsonl, baselines.jsonl, summary.md,
                          campaign.json and logs/ there as the campaign goes
                          (default chaos-results; "" for none)
  --timeout-factor F      a run hangs after F × its failure-free wall time
                          + the slack (default 10)
  --timeout-slack D       (default 30s, ci 60s)
  --fail-on-error         exit non-zero on errors too (wrong digests and
                          hangs always do)
  --failures F            the failure bound f of the fulldet and partialdet
                          runs without an event logger (gochare run
                          --failures; default: the runtime's, 2)
  --launcher-kills LIST   let the launcher inject these itself: recovery
                          (at=recovery:N), signal (signal=STOP)
  --progress-every N      without a terminal, a progress line every N runs
                          (default 10)
  --no-dump               on a hang, kill at once (default: SIGQUIT first,
                          for goroutine dumps in the log)
`

// Summary is the part of gochare's usage text about `gochare chaos`.
const Summary = `  gochare chaos [--preset full|ci|loggers] [--runs N] [--seed S] [--out DIR] [--only I] ...
      a seeded reliability campaign: real jobs with PEs or loggers killed,
      stopped or paused at chosen moments; each must end with its
      failure-free digest or a designed error
      (gochare chaos --help lists the flags)
`

// Command is `gochare chaos` run by the gochare executable itself, which
// must have the mini-apps (cmd/gochare registers it as a
// launcher.Command). Tables and progress go to stdout; the jobs' own
// output goes to the record under --out, not to stderr.
func Command(ctx context.Context, args []string, stdout, _ io.Writer) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("chaos: %w", err)
	}
	return Main(ctx, args, stdout, exe)
}

// invocation is a parsed command line.
type invocation struct {
	cfg         Config
	indices     []int
	out         string
	command     string
	failOnError bool
	every       int
	dump        bool
	help        bool
}

// parseArgs reads the command line of `gochare chaos`. With no --seed it
// draws one and adds it to the command recorded.
func parseArgs(args []string) (invocation, error) {
	var inv invocation
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	preset := fs.String("preset", "full", "")
	runs := fs.Int("runs", -1, "")
	seed := fs.Uint64("seed", 0, "")
	only := fs.String("only", "", "")
	apps := fs.String("apps", "", "")
	protocols := fs.String("ft", "", "")
	pes := fs.String("pes", "", "")
	kinds := fs.String("kinds", "", "")
	loggers := fs.String("loggers", "", "")
	fs.StringVar(&inv.out, "out", "chaos-results", "")
	factor := fs.Float64("timeout-factor", 0, "")
	slack := fs.Duration("timeout-slack", -1, "")
	fs.BoolVar(&inv.failOnError, "fail-on-error", false, "")
	launcherKills := fs.String("launcher-kills", "", "")
	fs.IntVar(&inv.every, "progress-every", 10, "")
	noDump := fs.Bool("no-dump", false, "")
	failures := fs.Int("failures", 0, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			inv.help = true
			return inv, nil
		}
		return inv, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if fs.NArg() > 0 {
		return inv, fmt.Errorf("%w: unexpected argument %q", ErrConfig, fs.Arg(0))
	}
	inv.dump = !*noDump
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg, err := Preset(*preset)
	if err != nil {
		return inv, err
	}
	recorded := slices.Clone(args)
	if set["seed"] {
		cfg.Seed = *seed
	} else {
		cfg.Seed = 1 + rand.Uint64N(999_999)
		recorded = append(recorded, "--seed", strconv.FormatUint(cfg.Seed, 10))
	}
	inv.command = shellJoin("gochare", append([]string{"chaos"}, recorded...))
	if *runs >= 0 {
		cfg.Runs = *runs
	}
	if *apps != "" {
		names := make([]string, len(cfg.Apps))
		for i, a := range cfg.Apps {
			names[i] = a.Name
		}
		keep, err := filterOrdered(names, *apps, "--apps")
		if err != nil {
			return inv, err
		}
		cfg.Apps = slices.DeleteFunc(cfg.Apps, func(a App) bool { return !slices.Contains(keep, a.Name) })
	}
	if *protocols != "" {
		if cfg.Protocols, err = filterOrdered(Protocols, *protocols, "--ft"); err != nil {
			return inv, err
		}
	}
	if *pes != "" {
		if cfg.PEs, err = ParseNumbers("--pes", *pes); err != nil {
			return inv, err
		}
	}
	if *kinds != "" {
		if cfg.Kinds, err = filterOrdered(AllKinds, *kinds, "--kinds"); err != nil {
			return inv, err
		}
	}
	if set["loggers"] {
		if cfg.Loggers, err = filterOrdered(AllLoggerSetups, *loggers, "--loggers"); err != nil {
			return inv, err
		}
		if slices.Equal(cfg.Loggers, []LoggerSetup{LoggersNone}) {
			cfg.Loggers = nil
		}
	}
	if set["timeout-factor"] {
		if *factor <= 0 {
			return inv, fmt.Errorf("%w: --timeout-factor %g: want > 0", ErrConfig, *factor)
		}
		cfg.TimeoutFactor = *factor
	}
	if set["timeout-slack"] {
		if *slack < 0 {
			return inv, fmt.Errorf("%w: --timeout-slack %v: want >= 0", ErrConfig, *slack)
		}
		cfg.TimeoutSlack = *slack
	}
	if set["launcher-kills"] {
		if cfg.LauncherKills, err = ParseLauncherKills(*launcherKills); err != nil {
			return inv, err
		}
	}
	if set["failures"] {
		if *failures < 1 {
			return inv, fmt.Errorf("%w: --failures %d: want 1 to %d", ErrConfig, *failures, maxFailures)
		}
		cfg.Failures = *failures
	}
	if err := cfg.Validate(); err != nil {
		return inv, err
	}
	if set["only"] {
		if inv.indices, err = ParseNumbers("--only", *only); err != nil {
			return inv, err
		}
	}
	inv.cfg = cfg
	return inv, nil
}

// Main is `gochare chaos`: it runs a campaign with the gochare executable
// exe, prints its tables and non-successes, and returns the exit status:
// 1 on a wrong digest or a hang (or an error, with --fail-on-error), 2 on
// a usage mistake.
func Main(ctx context.Context, args []string, stdout io.Writer, exe string) (int, error) {
	inv, err := parseArgs(args)
	if err != nil {
		return 2, fmt.Errorf("%w\n%s", err, Usage)
	}
	if inv.help {
		fmt.Fprint(stdout, Usage)
		return 0, nil
	}
	cfg, indices, out := inv.cfg, inv.indices, inv.out
	planned := cfg.Runs
	if indices != nil {
		planned = len(indices)
	}
	where := "no record written"
	if out != "" {
		where = "record in " + out
	}
	fmt.Fprintf(stdout, "gochare chaos: preset %s, seed %d, %d runs (%s; PEs %s; kinds %s; loggers %s), %s\n",
		cfg.Preset, cfg.Seed, planned, strings.Join(cfg.Protocols, ","), intList(cfg.PEs), kindList(cfg.Kinds), loggerList(cfg.Loggers), where)
	res, err := Execute(ctx, cfg, Options{
		Exe: exe, Program: "gochare", Indices: indices, Out: out, Command: inv.command,
		Dump: inv.dump, Progress: NewProgress(stdout, inv.every),
	})
	if res == nil {
		return 1, err
	}
	fmt.Fprintln(stdout)
	WriteTables(stdout, res)
	fmt.Fprintln(stdout)
	WriteNonSuccesses(stdout, res)
	if out != "" {
		fmt.Fprintf(stdout, "\nrecord: %s\n", filepath.Join(out, "summary.md"))
	}
	if err != nil {
		return 1, err
	}
	t := res.Totals()
	var bad []string
	if t.Wrong > 0 {
		bad = append(bad, fmt.Sprintf("%d wrong digests", t.Wrong))
	}
	if t.Hang > 0 {
		bad = append(bad, fmt.Sprintf("%d hangs", t.Hang))
	}
	if d := DigestDisagreements(res); len(d) > 0 {
		bad = append(bad, fmt.Sprintf("failure-free digests that differ between configurations (%s)", strings.Join(d, "; ")))
	}
	if inv.failOnError && t.Error > 0 {
		bad = append(bad, fmt.Sprintf("%d errors", t.Error))
	}
	switch {
	case res.Interrupted:
		return 1, fmt.Errorf("chaos: interrupted after %d of %d runs (%s)", len(res.Records), planned, time.Since(res.Started).Round(time.Second))
	case len(bad) > 0:
		return 1, fmt.Errorf("chaos: %s in %d runs", strings.Join(bad, ", "), t.Runs)
	}
	return 0, nil
}
