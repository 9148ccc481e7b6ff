package chaos

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// WriteTables writes the campaign's tables in Markdown: by application ×
// protocol (with a total), then by failure kind, then by logger setup
// (when some run had loggers); rows without a run are left out. The
// errors' count says how many were designed ones.
func WriteTables(w io.Writer, res *Result) {
	header := "| runs | right | wrong | error | hang | failure missed |"
	rule := "|---:|---:|---:|---:|---:|---:|"
	row := func(c Counts) string {
		return fmt.Sprintf("| %d | %d | %d | %d | %d | %d |", c.Runs, c.Right, c.Wrong, c.Error, c.Hang, c.Missing)
	}
	fmt.Fprintf(w, "| app | protocol %s\n|---|---%s\n", header, rule)
	for _, a := range res.Config.Apps {
		for _, p := range res.Config.Protocols {
			var c Counts
			for _, r := range res.Records {
				if r.App == a.Name && r.Protocol == p {
					c.add(r)
				}
			}
			if c.Runs > 0 {
				fmt.Fprintf(w, "| %s | %s %s\n", a.Name, p, row(c))
			}
		}
	}
	fmt.Fprintf(w, "| **total** | %s\n\n", row(res.Totals()))
	fmt.Fprintf(w, "| failure kind %s\n|---%s\n", header, rule)
	for _, k := range res.Config.Kinds {
		var c Counts
		for _, r := range res.Records {
			if r.Kind == k {
				c.add(r)
			}
		}
		if c.Runs > 0 {
			fmt.Fprintf(w, "| %s %s\n", k, row(c))
		}
	}
	if slices.ContainsFunc(res.Records, func(r Record) bool { return r.Loggers > 0 }) {
		fmt.Fprintf(w, "\n| loggers %s\n|---%s\n", header, rule)
		for _, setup := range append([]LoggerSetup{""}, AllLoggerSetups[1:]...) {
			var c Counts
			for _, r := range res.Records {
				if r.Setup == setup {
					c.add(r)
				}
			}
			if c.Runs > 0 {
				fmt.Fprintf(w, "| %s %s\n", cmp.Or(setup, LoggersNone), row(c))
			}
		}
	}
	if t := res.Totals(); t.Error > 0 {
		designed := 0
		for _, r := range res.Records {
			if r.Class == Error && r.Designed != "" {
				designed++
			}
		}
		fmt.Fprintf(w, "\nErrors: %d designed (the job stopped saying why, in a case README documents), %d others.\n", designed, t.Error-designed)
	}
}

// NonSuccesses returns the records that are not Right, hangs and wrong
// digests first.
func NonSuccesses(res *Result) []Record {
	var out []Record
	for _, r := range res.Records {
		if r.Class != Right {
			out = append(out, r)
		}
	}
	rank := map[Class]int{Hang: 0, Wrong: 1, Error: 2}
	slices.SortStableFunc(out, func(a, b Record) int { return rank[a.Class] - rank[b.Class] })
	return out
}

// WriteNonSuccesses writes every non-success with what was done and the
// commands that reproduce it.
func WriteNonSuccesses(w io.Writer, res *Result) {
	list := NonSuccesses(res)
	if len(list) == 0 && len(DigestDisagreements(res)) == 0 {
		fmt.Fprintln(w, "Every run ended with the failure-free digest.")
	}
	for _, r := range list {
		fmt.Fprintf(w, "- **%s** %s (%.1f s): %s\n", strings.ToUpper(string(r.Class)), r.Run, r.Seconds, oneLine(r.Detail))
		if r.Note != "" {
			fmt.Fprintf(w, "  - note: %s\n", r.Note)
		}
		if r.Class == Error {
			if r.Designed != "" {
				fmt.Fprintf(w, "  - designed error: %s\n", r.Designed)
			} else {
				fmt.Fprintf(w, "  - not a designed error\n")
			}
		}
		var planned []string
		for _, f := range r.Failures {
			planned = append(planned, f.String())
		}
		fmt.Fprintf(w, "  - failures: %s\n", strings.Join(planned, "; "))
		for _, s := range r.Injected {
			fmt.Fprintf(w, "  - campaign: %s\n", s)
		}
		for _, s := range r.Missed {
			fmt.Fprintf(w, "  - did not happen: %s\n", s)
		}
		if len(r.Injected) > 0 || campaignInjects(res.Config, r.Run) {
			fmt.Fprintf(w, "  - job (the campaign injects the rest): `%s`\n", r.Command)
		} else {
			fmt.Fprintf(w, "  - reproduce: `%s`\n", r.Command)
		}
		fmt.Fprintf(w, "  - replay: `%s`\n", r.Replay)
		if r.Log != "" {
			fmt.Fprintf(w, "  - log: %s\n", r.Log)
		}
	}
	for _, d := range DigestDisagreements(res) {
		fmt.Fprintf(w, "- **WRONG FAILURE-FREE DIGEST** %s\n", d)
	}
	for _, b := range res.Baselines {
		if b.Class != Right {
			fmt.Fprintf(w, "- **FAILURE-FREE RUN %s** %s (%.1f s): %s\n  - reproduce: `%s`\n", strings.ToUpper(string(b.Class)), b.Key, b.Seconds, oneLine(b.Detail), b.Command)
			if b.Log != "" {
				fmt.Fprintf(w, "  - log: %s\n", b.Log)
			}
		}
	}
}

// DigestDisagreements lists the applications whose failure-free runs
// ended with different digests in different configurations (PE count,
// protocol, checkpoint period): the result of a job must not depend on
// them, so each is a wrong result of some configuration.
func DigestDisagreements(res *Result) []string {
	byApp := map[string]map[string][]string{}
	for _, b := range res.Baselines {
		if b.Class != Right {
			continue
		}
		app, _, _ := strings.Cut(b.Key, "/")
		if byApp[app] == nil {
			byApp[app] = map[string][]string{}
		}
		byApp[app][b.Digest] = append(byApp[app][b.Digest], b.Key)
	}
	var out []string
	for _, a := range res.Config.Apps {
		digests := byApp[a.Name]
		if len(digests) < 2 {
			continue
		}
		var parts []string
		for _, d := range slices.Sorted(maps.Keys(digests)) {
			parts = append(parts, fmt.Sprintf("%s in %s", d, strings.Join(digests[d], ", ")))
		}
		out = append(out, fmt.Sprintf("%s: failure-free digests differ: %s", a.Name, strings.Join(parts, "; ")))
	}
	return out
}

// SlowRun is a run with its time against its failure-free run's.
type SlowRun struct {
	Record   Record
	Baseline float64
	Ratio    float64
}

// Slowest returns the n runs that took longest against their failure-free
// run, hangs left out (they ran until their deadline): a recovery that
// takes many times the job's own time is near a hang.
func Slowest(res *Result, n int) []SlowRun {
	base := map[string]float64{}
	for _, b := range res.Baselines {
		if b.Class == Right && b.Seconds > 0 {
			base[b.Key] = b.Seconds
		}
	}
	var out []SlowRun
	for _, r := range res.Records {
		if b, ok := base[r.Key()]; ok && r.Class != Hang && r.Seconds > 0 {
			out = append(out, SlowRun{Record: r, Baseline: b, Ratio: r.Seconds / b})
		}
	}
	slices.SortStableFunc(out, func(a, b SlowRun) int {
		switch {
		case a.Ratio > b.Ratio:
			return -1
		case a.Ratio < b.Ratio:
			return 1
		}
		return 0
	})
	return out[:min(n, len(out))]
}

func campaignInjects(cfg Config, run Run) bool {
	_, campaign := cfg.Args(run)
	return len(campaign) > 0
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// WriteMarkdown writes the campaign's record: how it ran, the tables, the
// non-successes and the failure-free runs.
func WriteMarkdown(w io.Writer, res *Result) {
	fmt.Fprintf(w, "# gochare chaos campaign\n\n")
	if res.Command != "" {
		fmt.Fprintf(w, "- command: `%s`\n", res.Command)
	}
	state := fmt.Sprintf("%d of %d runs done", len(res.Records), res.Planned)
	switch {
	case res.Interrupted:
		state += ", interrupted"
	case !res.Finished.IsZero():
		state += fmt.Sprintf(", finished %s (%s)", res.Finished.Format(time.RFC3339), res.Finished.Sub(res.Started).Round(time.Second))
	default:
		state += ", in progress"
	}
	fmt.Fprintf(w, "- started %s; %s\n", res.Started.Format(time.RFC3339), state)
	fmt.Fprintf(w, "- machine: %s, %d CPUs, load average at the start %s", res.Host.Name, res.Host.CPUs, res.Host.LoadAvgStart)
	if res.Host.LoadAvgEnd != "" {
		fmt.Fprintf(w, ", at the end %s", res.Host.LoadAvgEnd)
	}
	cfg := res.Config
	var apps []string
	for _, a := range cfg.Apps {
		apps = append(apps, a.Name+" "+strings.Join(a.Args, " "))
	}
	fmt.Fprintf(w, "\n- preset %s, seed %d; PEs %s; protocols %s; failure kinds %s; logger setups %s\n- applications: %s\n- deadline: %g × the failure-free wall time + %s\n\n",
		cfg.Preset, cfg.Seed, intList(cfg.PEs), strings.Join(cfg.Protocols, ","), kindList(cfg.Kinds), loggerList(cfg.Loggers), strings.Join(apps, "; "), cfg.TimeoutFactor, cfg.TimeoutSlack)
	WriteTables(w, res)
	fmt.Fprintf(w, "\n## Non-successes\n\n")
	WriteNonSuccesses(w, res)
	if slow := Slowest(res, 5); len(slow) > 0 {
		fmt.Fprintf(w, "\n## Slowest runs against their failure-free time\n\n| run | class | seconds | failure-free | ratio | command |\n|---|---|---:|---:|---:|---|\n")
		for _, s := range slow {
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f× | `%s` |\n", s.Record.Run, s.Record.Class, s.Record.Seconds, s.Baseline, s.Ratio, s.Record.Command)
		}
	}
	fmt.Fprintf(w, "\n## Failure-free runs\n\n| configuration | class | digest | seconds | run seconds |\n|---|---|---|---:|---:|\n")
	for _, b := range res.Baselines {
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %.2f |\n", b.Key, b.Class, b.Digest, b.Seconds, b.RunSeconds)
	}
}

// recorder writes a campaign into a directory as it goes: campaign.json
// (the configuration at the start, every record at the end), runs.jsonl and
// baselines.jsonl (a line per run), summary.md (rewritten after every
// run) and logs/ (the whole output of every non-success). With no
// directory it writes nothing.
type recorder struct {
	dir       string
	res       *Result
	runs      *os.File
	baselines *os.File
	err       error
}

func newRecorder(dir string, res *Result) (*recorder, error) {
	r := &recorder{dir: dir, res: res}
	if dir == "" {
		return r, nil
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	var err error
	if r.runs, err = os.Create(filepath.Join(dir, "runs.jsonl")); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if r.baselines, err = os.Create(filepath.Join(dir, "baselines.jsonl")); err != nil {
		r.runs.Close()
		return nil, fmt.Errorf("chaos: %w", err)
	}
	r.writeSummary()
	r.writeCampaign()
	if r.err != nil {
		return nil, r.err
	}
	return r, nil
}

func (r *recorder) fail(err error) {
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("chaos: %s: %w", r.dir, err)
	}
}

func (r *recorder) appendJSON(f *os.File, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		r.fail(err)
		return
	}
	_, err = f.Write(append(b, '\n'))
	r.fail(err)
}

func (r *recorder) record(rec Record) error {
	if r.dir == "" {
		return nil
	}
	r.appendJSON(r.runs, rec)
	r.writeSummary()
	return r.err
}

func (r *recorder) baseline(b Baseline) {
	if r.dir != "" {
		r.appendJSON(r.baselines, b)
	}
}

// log writes a job's whole output and returns the file's path ("" with no
// directory).
func (r *recorder) log(name, command string, injected, output []string) string {
	if r.dir == "" {
		return ""
	}
	path := filepath.Join(r.dir, "logs", name+".log")
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", command)
	for _, s := range injected {
		fmt.Fprintf(&b, "# campaign: %s\n", s)
	}
	b.WriteString("# output (stderr lines start with \"! \")\n")
	for _, l := range output {
		b.WriteString(l + "\n")
	}
	r.fail(os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

func (r *recorder) writeSummary() {
	r.writeFile("summary.md", func(w io.Writer) error { WriteMarkdown(w, r.res); return nil })
}

// writeCampaign writes campaign.json: the whole result (at the start, its
// configuration only).
func (r *recorder) writeCampaign() {
	r.writeFile("campaign.json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r.res)
	})
}

// writeFile replaces name with what write writes, through a temporary
// file, so a reader never sees half a file.
func (r *recorder) writeFile(name string, write func(io.Writer) error) {
	path := filepath.Join(r.dir, name)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		r.fail(err)
		return
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	r.fail(err)
}

func (r *recorder) finish() error {
	if r.dir == "" {
		return nil
	}
	r.writeSummary()
	r.writeCampaign()
	r.fail(r.runs.Close())
	r.fail(r.baselines.Close())
	return r.err
}

// Progress reports a campaign as it goes: on a terminal one line
// rewritten in place (and a line per non-success), otherwise a line per
// Every runs and one per non-success.
type Progress struct {
	w        io.Writer
	terminal bool
	every    int
	total    int
	n        int
	began    time.Time
	counts   string
}

// NewProgress reports to w; a terminal gets a bar, anything else a line
// every `every` runs.
func NewProgress(w io.Writer, every int) *Progress {
	p := &Progress{w: w, every: max(every, 1)}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *Progress) start(total int) {
	if p != nil {
		p.total, p.n, p.began, p.counts = total, 0, time.Now(), "right 0, wrong 0, error 0, hang 0"
	}
}

func (p *Progress) baseline(b Baseline) {
	if p == nil || b.Class == Right {
		return
	}
	p.printLine(fmt.Sprintf("failure-free run %s: %s: %s", b.Key, strings.ToUpper(string(b.Class)), oneLine(b.Detail)))
}

func (p *Progress) printLine(s string) {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s\n", s)
	} else {
		fmt.Fprintln(p.w, s)
	}
}

func (p *Progress) done(r Record, totals Counts) {
	if p == nil {
		return
	}
	p.n++
	p.counts = fmt.Sprintf("right %d, wrong %d, error %d, hang %d", totals.Right, totals.Wrong, totals.Error, totals.Hang)
	if r.Class != Right {
		p.printLine(fmt.Sprintf("%s: %s (%.1f s): %s", r.Run, strings.ToUpper(string(r.Class)), r.Seconds, oneLine(r.Detail)))
	}
	if !p.terminal {
		if p.n%p.every == 0 || p.n == p.total {
			elapsed := time.Since(p.began)
			left := time.Duration(float64(elapsed) / float64(p.n) * float64(p.total-p.n))
			fmt.Fprintf(p.w, "[%d/%d] %s (%s elapsed, about %s left)\n", p.n, p.total, p.counts, elapsed.Round(time.Second), left.Round(time.Second))
		}
		return
	}
	p.bar("")
}

// begin shows, on a terminal, the run that starts.
func (p *Progress) begin(r Run) {
	if p != nil && p.terminal {
		p.bar("; now " + r.String())
	}
}

func (p *Progress) bar(suffix string) {
	const width = 24
	fill := width * p.n / max(p.total, 1)
	elapsed := time.Since(p.began)
	left := "?"
	if p.n > 0 {
		left = time.Duration(float64(elapsed) / float64(p.n) * float64(p.total-p.n)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s; %s, ~%s left%s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		p.n, p.total, p.counts, elapsed.Round(time.Second), left, suffix)
}

func (p *Progress) finish() {
	if p != nil && p.terminal {
		fmt.Fprintln(p.w)
	}
}
