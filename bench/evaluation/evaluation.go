package evaluation

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gochare/gochare/logging"
)

// Protocols are the --ft values, in the order they are reported.
var protocols = [...]string{"none", "fulldet", "partialdet"}

// AppConfig is one application's job in a preset.
type AppConfig struct {
	Name string   `json:"name"`
	Args []string `json:"args"` // application flags, step count excluded
	// StepsFlag is the application's flag for the number of steps.
	StepsFlag string `json:"steps_flag"`
	Steps     int    `json:"steps"`
	// CheckpointEvery is --checkpoint-every; the failure is injected at
	// step CheckpointEvery + CheckpointEvery/2, in the middle of the second
	// period, so Steps must be at least 3*CheckpointEvery for a checkpoint
	// to follow it.
	CheckpointEvery int `json:"checkpoint_every"`
}

// KillStep is the step at which PE 1 is killed.
func (a AppConfig) KillStep() int { return a.CheckpointEvery + a.CheckpointEvery/2 }

// Config is a whole evaluation.
type Config struct {
	Preset string      `json:"preset"`
	Exe    string      `json:"-"`
	PEs    int         `json:"pes"`
	Reps   int         `json:"reps"`
	MTBF   Duration    `json:"mtbf"`
	Apps   []AppConfig `json:"apps"`
	// Spreads are the --restore-spread values of the failure cases of
	// fulldet and partialdet (0: all survivors).
	Spreads []int    `json:"spreads"`
	Timeout Duration `json:"timeout"`
	// Failures is the failure bound f of the fulldet and partialdet jobs
	// (gochare run --failures; 0: the default).
	Failures int `json:"failures,omitempty"`
}

// Duration is a time.Duration that reads and writes as "24h0m0s".
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Preset returns the named configuration: tiny (CI), quick or full.
func Preset(name string) (Config, error) {
	c := Config{Preset: name, PEs: 4, MTBF: Duration(24 * time.Hour), Spreads: []int{1, 2, 0}, Timeout: Duration(3 * time.Minute)}
	switch name {
	case "tiny":
		c.Reps = 1
		c.Spreads = []int{0}
		c.Timeout = Duration(time.Minute)
		c.Apps = []AppConfig{
			{Name: "stencil3d", Args: []string{"--grid", "32,32,32", "--chunk", "8,8,8"}, StepsFlag: "--iterations", Steps: 12, CheckpointEvery: 4},
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "20"}, StepsFlag: "--steps", Steps: 6, CheckpointEvery: 2},
			{Name: "lulesh", Args: []string{"--size", "12", "--chunk", "6"}, StepsFlag: "--iterations", Steps: 12, CheckpointEvery: 4},
		}
	case "quick":
		c.Reps = 3
		c.Apps = []AppConfig{
			{Name: "stencil3d", Args: []string{"--grid", "64,64,64", "--chunk", "16,16,16"}, StepsFlag: "--iterations", Steps: 60, CheckpointEvery: 20},
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "40"}, StepsFlag: "--steps", Steps: 12, CheckpointEvery: 4},
			{Name: "lulesh", Args: []string{"--size", "16", "--chunk", "8"}, StepsFlag: "--iterations", Steps: 30, CheckpointEvery: 10},
		}
	case "full":
		// Checkpoint periods long enough that the failure, in the middle
		// of one, loses tens of steps (0.4-0.8 s of work on 2 cores), as
		// with the paper's Daly periods of 90-220 steps, so that recovery
		// is not only its fixed costs.
		c.Reps = 5
		c.Timeout = Duration(15 * time.Minute)
		c.Apps = []AppConfig{
			{Name: "stencil3d", Args: []string{"--grid", "128,128,128", "--chunk", "32,32,32"}, StepsFlag: "--iterations", Steps: 240, CheckpointEvery: 80},
			{Name: "leanmd", Args: []string{"--cells", "3,3,3", "--atoms", "75"}, StepsFlag: "--steps", Steps: 60, CheckpointEvery: 20},
			{Name: "lulesh", Args: []string{"--size", "24", "--chunk", "12"}, StepsFlag: "--iterations", Steps: 180, CheckpointEvery: 60},
		}
	default:
		return c, fmt.Errorf("evaluation: unknown preset %q (tiny, quick or full)", name)
	}
	return c, nil
}

// Cases lists the jobs in the order they run: repetition by repetition,
// each application's forward runs with the protocols in an order rotated
// every repetition (so that drift in the machine's load hits them alike),
// then its failure runs, rotated the same way.
func (c Config) Cases() []Case {
	var out []Case
	for rep := 0; rep < c.Reps; rep++ {
		for _, a := range c.Apps {
			var fwd, fail []Case
			for _, p := range protocols {
				fwd = append(fwd, Case{App: a.Name, Protocol: p, Rep: rep})
				if p == "none" {
					// Every task rolls back: where the failed PE's tasks go
					// is the only thing --restore-spread changes.
					fail = append(fail, Case{App: a.Name, Protocol: p, Failure: true, Rep: rep})
					continue
				}
				for _, k := range c.Spreads {
					fail = append(fail, Case{App: a.Name, Protocol: p, Failure: true, Spread: k, Rep: rep})
				}
			}
			out = append(out, rotate(fwd, rep)...)
			out = append(out, rotate(fail, rep)...)
		}
	}
	return out
}

// rotate returns cs turned left by n places.
func rotate[T any](cs []T, n int) []T {
	n %= len(cs)
	return append(slices.Clone(cs[n:]), cs[:n]...)
}

// Args are the `gochare` arguments of a case.
func (c Config) Args(k Case) ([]string, error) {
	i := slices.IndexFunc(c.Apps, func(a AppConfig) bool { return a.Name == k.App })
	if i < 0 {
		return nil, fmt.Errorf("evaluation: no application %q in the configuration", k.App)
	}
	a := c.Apps[i]
	args := []string{"run", a.Name, "--pes", strconv.Itoa(c.PEs), "--ft", k.Protocol,
		"--checkpoint-every", strconv.Itoa(a.CheckpointEvery), "--json"}
	if c.Failures > 0 && k.Protocol != "none" {
		args = append(args, "--failures", strconv.Itoa(c.Failures))
	}
	if k.Failure {
		args = append(args, "--kill", fmt.Sprintf("pe=1,at=step:%d", a.KillStep()), "--restore-spread", strconv.Itoa(k.Spread))
	}
	args = append(args, a.Args...)
	return append(args, a.StepsFlag, strconv.Itoa(a.Steps)), nil
}

func (c Config) validate() error {
	if c.Exe == "" {
		return errors.New("evaluation: no gochare executable")
	}
	if c.PEs < 3 {
		return fmt.Errorf("evaluation: %d PEs: at least 3 are needed (one killed, restore spread over 1 and 2)", c.PEs)
	}
	if c.Reps < 1 {
		return fmt.Errorf("evaluation: %d repetitions: want at least 1", c.Reps)
	}
	for _, a := range c.Apps {
		if a.CheckpointEvery < 2 || a.Steps < 3*a.CheckpointEvery {
			return fmt.Errorf("evaluation: %s: %d steps, checkpoint every %d: want a period of at least 2 and at least 3 periods", a.Name, a.Steps, a.CheckpointEvery)
		}
	}
	if c.Failures != 0 {
		if err := logging.CheckFailureBound(logging.KindFullDet, false, c.PEs, c.Failures); err != nil {
			return fmt.Errorf("evaluation: --failures: %w", err)
		}
	}
	for _, k := range c.Spreads {
		if k < 0 || k >= c.PEs {
			return fmt.Errorf("evaluation: restore spread %d: want 0 (all) to %d survivors", k, c.PEs-1)
		}
	}
	return nil
}

// Results is everything an evaluation measured.
type Results struct {
	Config   Config            `json:"config"`
	Started  time.Time         `json:"started"`
	Host     Host              `json:"host"`
	Runs     []Run             `json:"runs"`
	Summary  []Summary         `json:"summary"`
	Recovery []RecoverySummary `json:"recovery"`
}

// Host describes the machine the evaluation ran on.
type Host struct {
	CPUs    int    `json:"cpus"`
	LoadAvg string `json:"loadavg,omitempty"`
	// LoadAvgEnd is /proc/loadavg when the last job ended (where the
	// bench records it).
	LoadAvgEnd string `json:"loadavg_end,omitempty"`
}

// Evaluate runs every case of cfg, reporting each finished case to
// progress, and summarizes them. A case that fails is recorded (OK false)
// and the evaluation goes on.
func Evaluate(ctx context.Context, cfg Config, progress *Progress) (*Results, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &Results{Config: cfg, Started: time.Now().UTC(), Host: hostInfo()}
	cases := cfg.Cases()
	progress.start(len(cases))
	for _, k := range cases {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("evaluation: interrupted: %w", err)
		}
		args, err := cfg.Args(k)
		if err != nil {
			return res, err
		}
		r := execute(ctx, cfg.Exe, k, args, time.Duration(cfg.Timeout))
		res.Runs = append(res.Runs, r)
		progress.done(r)
	}
	progress.finish()
	res.Summary, res.Recovery = summarize(cfg, res.Runs)
	return res, nil
}

// Main is `gochare bench [--quick|--full] ...`: it runs the evaluation with
// the executable exe and writes its outputs. It returns the exit status.
func Main(args []string, stdout io.Writer, exe string) (int, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	quick := fs.Bool("quick", false, "quick preset: small jobs, 3 repetitions, about 2–3 minutes on 2 cores (the default)")
	full := fs.Bool("full", false, "full preset: larger jobs, 5 repetitions (tens of minutes)")
	tiny := fs.Bool("tiny", false, "CI preset: the smallest jobs, 1 repetition, restore spread over all survivors only")
	out := fs.String("out", "evaluation-results", "directory for results.json, runs.csv, summary.csv, results.md and the PNG plots")
	mtbf := fs.Duration("mtbf", 24*time.Hour, "mean time between failures of the machine, for Daly's checkpoint period")
	reps := fs.Int("reps", 0, "repetitions of every case (default: the preset's)")
	pes := fs.Int("pes", 0, "PE processes per job (default 4)")
	apps := fs.String("apps", "", "comma-separated applications to run (default: stencil3d,leanmd,lulesh)")
	failures := fs.Int("failures", 0, "failure bound f of the fulldet and partialdet jobs (gochare run --failures; default: the runtime's, 2)")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	name := "quick"
	switch {
	case *quick && *full, *quick && *tiny, *full && *tiny:
		return 2, errors.New("evaluation: choose one of --tiny, --quick and --full")
	case *full:
		name = "full"
	case *tiny:
		name = "tiny"
	}
	cfg, err := Preset(name)
	if err != nil {
		return 2, err
	}
	cfg.Exe = exe
	cfg.MTBF = Duration(*mtbf)
	if *reps > 0 {
		cfg.Reps = *reps
	}
	if *pes > 0 {
		cfg.PEs = *pes
	}
	cfg.Failures = *failures
	if cfg.Apps, err = pickApps(cfg.Apps, *apps, func(a AppConfig) string { return a.Name }); err != nil {
		return 2, err
	}
	fmt.Fprintf(stdout, "gochare bench: preset %s, %d PEs, %d repetitions, %d jobs, results in %s\n", cfg.Preset, cfg.PEs, cfg.Reps, len(cfg.Cases()), *out)
	return runBench(stdout, *out, func(ctx context.Context, p *Progress) (*Results, error) { return Evaluate(ctx, cfg, p) }, Write)
}

// parseFlags parses a bench command's flags, which take no argument
// after them.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("evaluation: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("evaluation: unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// pickApps keeps the applications of all named in list (comma-separated,
// in its order); an empty list keeps them all.
func pickApps[A any](all []A, list string, name func(A) string) ([]A, error) {
	if list == "" {
		return all, nil
	}
	var keep []A
	for _, n := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(a A) bool { return name(a) == n })
		if i < 0 {
			var have []string
			for _, a := range all {
				have = append(have, name(a))
			}
			return nil, fmt.Errorf("evaluation: --apps: no application %q (%s)", n, strings.Join(have, ", "))
		}
		keep = append(keep, all[i])
	}
	return keep, nil
}

// parseInts reads the comma-separated numbers of a flag's value.
func parseInts(flagName, val string) ([]int, error) {
	var v []int
	for _, f := range strings.Split(val, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("evaluation: %s: %q is not a number", flagName, f)
		}
		v = append(v, n)
	}
	return v, nil
}

// runBench is what every bench command does once configured: it runs
// evaluate until done or interrupted, writes the results into out and
// checks them. It returns the exit status.
func runBench[R interface{ Check() error }](stdout io.Writer, out string, evaluate func(context.Context, *Progress) (R, error), write func(R, string) ([]string, error)) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := evaluate(ctx, NewProgress(stdout))
	if err != nil {
		return 1, err
	}
	files, err := write(res, out)
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(files, ", "))
	if err := res.Check(); err != nil {
		return 1, err
	}
	return 0, nil
}

// Write writes every output of res into dir and returns the files' paths.
func Write(res *Results, dir string) ([]string, error) {
	return writeOutputs(dir, res, []output[*Results]{
		{"results.json", writeJSON},
		{"runs.csv", writeRunsCSV},
		{"summary.csv", writeSummaryCSV},
		{"recovery.csv", writeRecoveryCSV},
		{"results.md", writeMarkdown},
		{"overhead.png", plotOverhead},
		{"recovery.png", plotRecovery},
		{"timeline.png", plotTimeline},
	})
}

// output is one file of a bench's results: its name in the output
// directory and what writes it.
type output[R any] struct {
	name  string
	write func(io.Writer, R) error
}

// writeOutputs writes res into dir, one file per output, and returns the
// paths written (up to the first error).
func writeOutputs[R any](dir string, res R, outputs []output[R]) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evaluation: %w", err)
	}
	var files []string
	for _, o := range outputs {
		path := filepath.Join(dir, o.name)
		if err := writeFile(path, func(f io.Writer) error { return o.write(f, res) }); err != nil {
			return files, fmt.Errorf("evaluation: %s: %w", o.name, err)
		}
		files = append(files, path)
	}
	return files, nil
}

func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return write(f)
}

func hostInfo() Host {
	h := Host{CPUs: runtimeCPUs()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		h.LoadAvg = strings.TrimSpace(string(b))
	}
	return h
}
