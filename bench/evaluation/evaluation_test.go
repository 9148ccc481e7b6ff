package evaluation

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
	"github.com/gochare/gochare/logging"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// TestTinyPreset runs `gochare bench --tiny` end to end, as the command
// line does, and checks that every output is complete and that the
// numbers agree with what the protocols promise.
func TestTinyPreset(t *testing.T) {
	out := t.TempDir()
	var stdout bytes.Buffer
	status, err := Main([]string{"--tiny", "--out", out, "--mtbf", "12h"}, &stdout, testbin.Gochare(t))
	require.NoError(t, err, stdout.String())
	require.Equal(t, 0, status)

	cfg, err := Preset("tiny")
	require.NoError(t, err)
	cases := cfg.Cases()
	// Progress: one plain line per finished case (stdout is no terminal).
	lines := strings.Count(stdout.String(), "\n")
	require.Equal(t, len(cases)+2, lines, stdout.String())
	require.Contains(t, stdout.String(), fmt.Sprintf("[%d/%d] ", len(cases), len(cases)))

	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	var res Results
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Runs, len(cases))
	require.Equal(t, 12*time.Hour, time.Duration(res.Config.MTBF))
	require.NoError(t, res.Check())

	byKey := map[key]Run{}
	for _, r := range res.Runs {
		require.True(t, r.OK, "%s: %s", r.Case, r.Error)
		require.Positive(t, r.StepMS, r.Case.String())
		require.Positive(t, r.Handled, r.Case.String())
		byKey[keyOf(r.Case)] = r
	}
	for _, a := range cfg.Apps {
		none, full, partial := byKey[key{a.Name, "none", false, 0, 0}], byKey[key{a.Name, "fulldet", false, 0, 0}], byKey[key{a.Name, "partialdet", false, 0, 0}]
		// The applications need no determinant; fulldet makes one per
		// reception; both log every message, the same bytes.
		require.Zero(t, partial.Determinants, a.Name)
		require.Equal(t, full.Handled, full.Determinants, a.Name)
		require.Equal(t, none.Handled, partial.Handled, a.Name)
		require.Equal(t, full.LogBytes, partial.LogBytes, a.Name)
		// Nor a progress record: no task of theirs takes an
		// order-dependent message (logging.Config.OrderFree).
		require.Zero(t, partial.PiggybackedBytes, a.Name)
		require.Positive(t, full.PiggybackedBytes, a.Name)
		require.Equal(t, none.Digest, partial.Digest, a.Name)
		// Checkpoints: the initial one and one per period (the last step
		// may or may not offer a sync point), the same size under every
		// protocol.
		require.GreaterOrEqual(t, len(none.Checkpoints), a.Steps/a.CheckpointEvery, a.Name)
		require.LessOrEqual(t, len(none.Checkpoints), a.Steps/a.CheckpointEvery+1, a.Name)
		require.InDelta(t, float64(none.Checkpoints[1].Bytes), float64(partial.Checkpoints[1].Bytes), 0.01*float64(none.Checkpoints[1].Bytes), a.Name)

		fNone, fPartial := byKey[key{a.Name, "none", true, 0, 0}], byKey[key{a.Name, "partialdet", true, 0, 0}]
		require.Positive(t, fNone.RolledBackTasks, a.Name)
		require.Zero(t, fPartial.RolledBackTasks, a.Name)
		require.Positive(t, fPartial.RestoredTasks, a.Name)
		require.Equal(t, fNone.RestoredTasks, fPartial.RestoredTasks, a.Name+": the failed PE's tasks")
		for _, r := range []Run{fNone, fPartial} {
			// Detection is often under a millisecond: it must not be
			// negative (the failure is seen after the kill).
			require.GreaterOrEqual(t, r.DetectionMS, 0.0, r.Case.String())
			require.GreaterOrEqual(t, r.SinceFailureMS, r.ReplayCatchUpMS, r.Case.String())
			// The progress at the failure is regained before the next
			// checkpoint; it is at least the sync point before the kill
			// (every task offered it before that checkpoint) and at most
			// the next one (no task passes it before its checkpoint).
			require.GreaterOrEqual(t, r.RegainedMS, r.CatchUpMS, r.Case.String())
			require.LessOrEqual(t, r.RegainedMS, r.SinceFailureMS, r.Case.String())
			require.GreaterOrEqual(t, r.RegainedStep, int64(a.CheckpointEvery-1), r.Case.String())
			require.LessOrEqual(t, r.RegainedStep, int64(2*a.CheckpointEvery-1), r.Case.String())
			var whats []string
			for _, e := range r.Events {
				whats = append(whats, e.What)
			}
			require.Subset(t, whats, []string{"begin", "kill", "failed", "restored", "regained", "recovered", "end"}, r.Case.String())
		}
	}

	// Summaries: one per app and protocol, one recovery row per app,
	// protocol and spread.
	require.Len(t, res.Summary, 3*len(cfg.Apps))
	require.Len(t, res.Recovery, 3*len(cfg.Apps))
	for _, s := range res.Summary {
		require.Positive(t, s.CheckpointBytes, s.App)
		require.Positive(t, s.DalyPeriodS, s.App)
		if s.Protocol == "none" {
			require.Zero(t, s.Overhead.Median)
		}
	}

	// CSV: a header and a row per run / summary / recovery row.
	for name, rows := range map[string]int{"runs.csv": len(cases), "summary.csv": len(res.Summary), "recovery.csv": len(res.Recovery)} {
		f, err := os.Open(filepath.Join(out, name))
		require.NoError(t, err)
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err, name)
		require.Len(t, recs, rows+1, name)
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	require.NoError(t, err)
	for _, a := range cfg.Apps {
		require.Contains(t, string(md), "| "+a.Name+" | partialdet | ")
	}
	require.Contains(t, string(md), fmt.Sprintf("%d jobs, %d finished, 0 failed.", len(cases), len(cases)))
	for _, name := range []string{"overhead.png", "recovery.png", "timeline.png"} {
		f, err := os.Open(filepath.Join(out, name))
		require.NoError(t, err)
		c, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err, name)
		require.Greater(t, c.Width, 300, name)
	}
}

func TestParseOutput(t *testing.T) {
	text := []string{
		`level=INFO msg="checkpoint committed" epoch=1 ms=27`,
		`level=INFO msg="all PEs ready; job begins" pes=4 ft=partialdet`,
		`level=INFO msg="checkpoint 1 staged and copied to buddies: 514278 bytes"`,
		`level=INFO msg="checkpoint committed" epoch=2 ms=5`,
		`level=INFO msg="checkpoint 2 staged and copied to buddies: 514794 bytes"`,
		`[pe 1] level=WARN msg="failure injection: killing this PE" pe=1 step=15`,
		`level=ERROR msg="PE failed" detail="PE 1 (pid 9570 on vm) was killed by signal 9 (killed)" after_begin_ms=131`,
		`level=INFO msg="recovery: tasks restored, replay starts" failed=[1] restore_ms=4 relocated=17`,
		`level=INFO msg="recovery report: progress at the failure regained" step=16 catch_up_ms=12 since_failure_ms=16`,
		`level=INFO msg="checkpoint committed" epoch=3 ms=7`,
		`level=INFO msg="recovery report: first checkpoint after the failure" replay_and_catch_up_ms=40 since_failure_ms=44`,
		`level=INFO msg="job stats" ft=partialdet handled=6834 determinants=0 piggybacked_bytes=420624 log_bytes=3781928 restored_tasks=17 rolled_back_tasks=0 event_log_records=56 event_log_bytes=1568`,
	}
	var lines []line
	for i, s := range text {
		lines = append(lines, line{at: time.Duration(i) * 10 * time.Millisecond, stderr: true, text: s})
	}
	lines = append(lines, line{text: `elapsed 0.17 s`}, line{text: `{"app":"stencil3d","iterations":20,"job_digest":"51746864e50e1b25","elapsed_s":0.2}`})
	r := Run{Case: Case{App: "stencil3d", Protocol: "partialdet", Failure: true}}
	require.NoError(t, parseOutput(&r, lines))
	require.Equal(t, []Checkpoint{{1, 27, 514278}, {2, 5, 514794}, {3, 7, 0}}, r.Checkpoints)
	require.Equal(t, 10.0, r.DetectionMS)
	require.Equal(t, 4.0, r.RestoreMS)
	require.Equal(t, int64(16), r.RegainedStep)
	require.Equal(t, 12.0, r.CatchUpMS)
	require.Equal(t, 16.0, r.RegainedMS)
	require.Equal(t, 40.0, r.ReplayCatchUpMS)
	require.Equal(t, 44.0, r.SinceFailureMS)
	require.Equal(t, int64(6834), r.Handled)
	require.Equal(t, int64(420624), r.PiggybackedBytes)
	require.Equal(t, int64(17), r.RestoredTasks)
	require.Equal(t, int64(56), r.EventLogRecords)
	require.Equal(t, int64(1568), r.EventLogBytes)
	require.Equal(t, 20, r.Steps)
	require.InDelta(t, 10.0, r.StepMS, 1e-9)
	require.Equal(t, "51746864e50e1b25", r.Digest)
	require.Equal(t, []string{"checkpoint", "begin", "checkpoint", "kill", "failed", "restored", "regained", "checkpoint", "recovered"}, eventNames(r.Events))

	// LeanMD reports time per step instead of elapsed time.
	r = Run{}
	require.NoError(t, parseOutput(&r, []line{{text: `{"app":"leanmd","steps":12,"digest":"a0a0","ms_per_step":141.5}`}}))
	require.Equal(t, 141.5, r.StepMS)
	require.InDelta(t, 1.698, r.ElapsedS, 1e-9)

	// A failure case without a recovery report, or without the report
	// that the progress at the failure was regained; no result at all.
	r = Run{Case: Case{Failure: true}}
	require.ErrorContains(t, parseOutput(&r, lines[len(lines)-1:]), "recovery report")
	var noRegained []line
	for _, l := range lines {
		if !strings.Contains(l.text, "progress at the failure regained") {
			noRegained = append(noRegained, l)
		}
	}
	r = Run{Case: Case{Failure: true}}
	require.ErrorContains(t, parseOutput(&r, noRegained), "progress at the failure was regained")
	require.ErrorIs(t, parseOutput(&Run{}, lines[:3]), errNoResult)

	// Job stats that leave PEs out are an error, not a smaller count.
	missing := append([]line{{stderr: true, text: `level=WARN msg="PE stats missing: the job stats below leave out these PEs, which exited without them or did not send them in time" pes="[1 3]" wait=10s`}}, lines...)
	r = Run{Case: Case{App: "stencil3d", Protocol: "partialdet", Failure: true}}
	require.ErrorContains(t, parseOutput(&r, missing), "the job stats leave out PEs [1 3]")
}

func eventNames(events []Event) []string {
	var w []string
	for _, e := range events {
		w = append(w, e.What)
	}
	return w
}

func TestCasesInterleaved(t *testing.T) {
	cfg, err := Preset("quick")
	require.NoError(t, err)
	cases := cfg.Cases()
	// Per repetition and app: 3 forward, none's failure and 3 spreads for
	// each of fulldet and partialdet.
	require.Len(t, cases, cfg.Reps*len(cfg.Apps)*(3+1+2*3))
	// The protocols' order rotates between repetitions.
	require.Equal(t, "none", cases[0].Protocol)
	second := cases[len(cases)/cfg.Reps]
	require.Equal(t, 1, second.Rep)
	require.Equal(t, "fulldet", second.Protocol)
	args, err := cfg.Args(Case{App: "stencil3d", Protocol: "partialdet", Failure: true, Spread: 2})
	require.NoError(t, err)
	require.Equal(t, "run stencil3d --pes 4 --ft partialdet --checkpoint-every 20 --json --kill pe=1,at=step:30 --restore-spread 2 --grid 64,64,64 --chunk 16,16,16 --iterations 60", strings.Join(args, " "))
	cfg.Failures = 1
	args, err = cfg.Args(Case{App: "stencil3d", Protocol: "fulldet"})
	require.NoError(t, err)
	require.Equal(t, "run stencil3d --pes 4 --ft fulldet --checkpoint-every 20 --json --failures 1 --grid 64,64,64 --chunk 16,16,16 --iterations 60", strings.Join(args, " "))
	args, err = cfg.Args(Case{App: "stencil3d", Protocol: "none"})
	require.NoError(t, err)
	require.NotContains(t, args, "--failures", "none has no f")
	cfg.Exe = "gochare"
	require.NoError(t, cfg.validate())
	cfg.Failures = 4
	require.ErrorIs(t, cfg.validate(), logging.ErrFailureBoundConfig, "f=4 on 4 PEs")
	_, err = Main([]string{"--failures", "0x"}, &bytes.Buffer{}, testbin.Gochare(t))
	require.Error(t, err)
	_, err = Main([]string{"--quick", "--full"}, &bytes.Buffer{}, testbin.Gochare(t))
	require.Error(t, err)
	_, err = Main([]string{"--apps", "nope"}, &bytes.Buffer{}, testbin.Gochare(t))
	require.ErrorContains(t, err, "nope")
}

func TestCheckFindsInconsistencies(t *testing.T) {
	good := func(p string, failure bool) Run {
		r := Run{Case: Case{App: "a", Protocol: p, Failure: failure}, OK: true, Digest: "d", Handled: 10, LogBytes: 100,
			Checkpoints: []Checkpoint{{1, 5, 10}, {2, 5, 10}}}
		if p == "fulldet" {
			r.Determinants = 10
		}
		if p == "none" {
			r.LogBytes = 0
		}
		if failure {
			r.RestoreMS, r.ReplayCatchUpMS, r.SinceFailureMS, r.RestoredTasks = 1, 2, 3, 4
			r.CatchUpMS, r.RegainedMS, r.RegainedStep = 1, 2, 5
			if p == "none" {
				r.RolledBackTasks = 8
			}
		}
		return r
	}
	res := &Results{}
	for _, p := range protocols {
		res.Runs = append(res.Runs, good(p, false), good(p, true))
	}
	require.NoError(t, res.Check())
	res.Runs[5].Determinants = 3    // partialdet failure run
	res.Runs[1].RolledBackTasks = 0 // none failure run
	res.Runs[3].RolledBackTasks = 2 // fulldet failure run
	res.Runs[2].Determinants = 0    // fulldet forward
	res.Runs[4].Digest = "other"    // partialdet forward
	res.Runs[0].OK, res.Runs[0].Error = false, "exit status 1"
	res.Runs[5].RegainedStep = 0 // partialdet failure run
	res.Runs[3].RegainedMS = 10  // fulldet failure run, later than the next checkpoint
	err := res.Check()
	for _, want := range []string{"partialdet created 3 determinants", "rolled back no task", "rolled_back_tasks=2", "fulldet created no determinant", "result digest other", "job failed",
		"no report that the progress at the failure was regained (step 0", "failure → progress regained 10 ms, failure → next checkpoint 3 ms"} {
		require.ErrorContains(t, err, want)
	}
}
