package evaluation

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

// TestEventLoggerTinyPreset runs `gochare bench eventlog --tiny` end to
// end: every job finishes with none's result; with the event logger the
// PEs send records to it, fewer ride on FullDet's messages, and three
// PEs killed at once are recovered by replay, which without it roll
// every task back; every output is complete.
func TestEventLoggerTinyPreset(t *testing.T) {
	out := t.TempDir()
	var stdout bytes.Buffer
	status, err := EventLoggerMain([]string{"--tiny", "--out", out}, &stdout, testbin.Gochare(t))
	require.NoError(t, err, stdout.String())
	require.Equal(t, 0, status)

	cfg, err := ELPreset("tiny")
	require.NoError(t, err)
	require.Equal(t, cfg.jobs()+2, strings.Count(stdout.String(), "\n"), stdout.String())

	b, err := os.ReadFile(filepath.Join(out, "eventlog.json"))
	require.NoError(t, err)
	var res ELResults
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Runs, cfg.jobs())
	require.NoError(t, res.Check())
	require.NotEmpty(t, res.Host.LoadAvgEnd)
	for _, r := range res.Runs {
		require.True(t, r.OK, "%s: %s", r.ELCase, r.Error)
		require.Positive(t, r.CPUS, r.ELCase.String())
		require.Equal(t, r.Variant.Protocol, r.Case.Protocol, r.ELCase.String())
		if r.Failures > 0 {
			require.Positive(t, r.RestoredTasks, r.ELCase.String())
			require.Equal(t, !r.Variant.EventLogger, r.RolledBackTasks > 0, r.ELCase.String())
		}
	}
	// One forward row per application and variant, one recovery row per
	// application, variant with failure jobs and failure count.
	require.Len(t, res.Forward, len(cfg.Apps)*len(elVariants))
	require.Len(t, res.Recovery, len(cfg.Apps)*(len(elVariants)-1)*len(cfg.Failures))
	piggyback := map[string]float64{}
	for _, s := range res.Forward {
		require.Equal(t, cfg.Reps, s.StepMS.N, "%+v", s)
		require.Equal(t, cfg.Reps, s.CPUS.N, "%+v", s)
		if s.Protocol != "none" {
			require.Equal(t, cfg.Reps, s.CPUOverhead.N, "%+v", s)
		}
		// PartialDet makes no record on the mini-apps (no
		// order-dependent handler, logging.Config.OrderFree): nothing
		// rides on envelopes or goes to a logger.
		require.Equal(t, s.Protocol == "fulldet", s.PiggybackedPerStep.Median > 0, "%+v", s)
		require.Equal(t, s.EventLogger && s.Protocol == "fulldet", s.EventLogPerStep.Median > 0, "%+v", s)
		if s.EventLogger {
			require.Equal(t, cfg.Reps, s.CPUOverheadNoEL.N, "%+v", s)
		} else {
			require.Zero(t, s.CPUOverheadNoEL.N, "%+v", s)
		}
		piggyback[s.App+" "+s.ELVariant.String()] = s.PiggybackedPerStep.Median
	}
	for _, a := range cfg.Apps {
		// Both are measured. How much less rides with the event logger
		// depends on how soon its acknowledgements come, which on a
		// loaded machine in a 9-step job may be later than three PEs
		// hold a record: the simulator checks the reduction on a
		// deterministic schedule (TestEventLoggerPiggyback in sim).
		require.Positive(t, piggyback[a.Name+" fulldet+EL"], a.Name)
		require.Positive(t, piggyback[a.Name+" fulldet"], a.Name)
	}
	for _, s := range res.Recovery {
		require.Equal(t, 1, s.Runs, "%+v", s)
		require.Positive(t, s.RegainedMS.Median, "%+v", s)
		require.Equal(t, !s.EventLogger, s.RolledBack == 1, "%+v", s)
	}

	for name, n := range map[string]int{"eventlog.csv": len(res.Forward), "eventlog-recovery.csv": len(res.Recovery)} {
		f, err := os.Open(filepath.Join(out, name))
		require.NoError(t, err)
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err, name)
		require.Len(t, rows, n+1, name)
	}
	md, err := os.ReadFile(filepath.Join(out, "eventlog.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| leanmd | partialdet+EL | 1,3,5 | ")
	require.Contains(t, string(md), "| lulesh | fulldet | 1,3,5 | ")
	require.Contains(t, string(md), "27 jobs, 27 finished, 0 failed.")
	for _, name := range []string{"eventlog-piggyback.png", "eventlog-overhead.png", "eventlog-recovery.png"} {
		f, err := os.Open(filepath.Join(out, name))
		require.NoError(t, err)
		_, err = png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
	}
}

func TestEventLoggerCases(t *testing.T) {
	cfg, err := ELPreset("quick")
	require.NoError(t, err)
	cfg.Exe = "gochare"
	require.NoError(t, cfg.validate())
	// Per application and repetition: 5 forward jobs, then 4 variants
	// times 3 failure counts.
	require.Equal(t, cfg.Reps*len(cfg.Apps)*(5+4*3), cfg.jobs())
	first, second := cfg.cases(cfg.Apps[0], 0), cfg.cases(cfg.Apps[0], 1)
	require.Len(t, first, 17)
	require.Equal(t, ELVariant{"none", false}, first[0].Variant)
	require.Equal(t, ELVariant{"fulldet", false}, second[0].Variant, "rotated every repetition")
	require.Zero(t, first[4].Failures)
	require.Equal(t, ELCase{App: "leanmd", Variant: ELVariant{"fulldet", false}, Failures: 1}, first[5])
	require.Equal(t, ELCase{App: "leanmd", Variant: ELVariant{"fulldet", false}, Failures: 2, Rep: 1}, second[5])

	require.Equal(t, []int{1, 3, 5}, killedPEs(3))
	a := cfg.Apps[0]
	require.Equal(t, "run leanmd --pes 6 --ft partialdet --checkpoint-every 8 --json --loggers 1 --event-logger "+
		"--kill pe=1,at=step:12 --kill pe=3,at=step:12 --cells 3,3,3 --kaway 1,1,1 --atoms 40 --steps 24",
		strings.Join(cfg.args(a, ELCase{App: a.Name, Variant: ELVariant{"partialdet", true}, Failures: 2}), " "))
	require.Equal(t, "run leanmd --pes 6 --ft none --checkpoint-every 8 --json --cells 3,3,3 --kaway 1,1,1 --atoms 40 --steps 24",
		strings.Join(cfg.args(a, ELCase{App: a.Name, Variant: ELVariant{"none", false}}), " "))
	require.Equal(t, "leanmd partialdet+EL, PEs 1,3 killed, rep 1", ELCase{App: "leanmd", Variant: ELVariant{"partialdet", true}, Failures: 2}.String())

	// Three PEs killed need six: PE 5's buddy is PE 0.
	cfg.PEs = 5
	require.ErrorContains(t, cfg.validate(), "3 failures need 6 PEs (PEs 1,3,5 killed, their buddies alive), not 5")
}

// Bad flags are refused with a clear error.
func TestEventLoggerFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--failures", "0"},
		{"--failures", "one"},
		{"--failures", "4"}, // 8 PEs needed
		{"--pes", "4"},      // 3 failures need 6
		{"--apps", "nope"},
		{"extra"},
	} {
		status, err := EventLoggerMain(args, &bytes.Buffer{}, "gochare")
		require.Error(t, err, args)
		require.Equal(t, 2, status, args)
	}
}

// The summaries pair each job with the baseline of its repetition, and
// Check finds what breaks the event logger's promises.
func TestEventLoggerSummaryAndCheck(t *testing.T) {
	cfg := ELConfig{JobSet: JobSet{Reps: 2, Apps: []AppJob{{Name: "a"}}}, Failures: []int{2, 3}}
	var runs []ELRun
	for rep := range cfg.Reps {
		for _, k := range cfg.cases(cfg.Apps[0], rep) {
			r := ELRun{ELCase: k, Run: Run{OK: true, Digest: "d", Steps: 10, StepMS: 10, CPUS: 1}}
			r.Run.Case = Case{App: k.App, Protocol: k.Variant.Protocol, Failure: k.Failures > 0, Rep: rep}
			switch k.Variant {
			case ELVariant{"fulldet", false}:
				r.StepMS, r.CPUS, r.PiggybackedBytes = 15, 1.5, 1000
			case ELVariant{"fulldet", true}:
				r.StepMS, r.CPUS, r.PiggybackedBytes = 12, 1.8+0.2*float64(rep), 200
			}
			if k.Variant.EventLogger {
				r.EventLogRecords, r.EventLogBytes = 5, 300
			}
			if k.Failures > 0 {
				r.RegainedMS, r.RestoredTasks = 40, 7
				if !k.Variant.EventLogger && k.Failures > elFailureBound {
					r.RolledBackTasks = 20
				}
				for range k.Failures {
					r.Events = append(r.Events, Event{What: "failed"})
				}
			}
			runs = append(runs, r)
		}
	}
	fwd, rec := summarizeEL(cfg, runs)
	require.Len(t, fwd, 5)
	require.Len(t, rec, 4*2)
	full, fullEL := fwd[1], fwd[2]
	require.Equal(t, ELVariant{"fulldet", true}, fullEL.ELVariant)
	require.InDelta(t, 0.5, full.CPUOverhead.Median, 1e-9)
	require.InDelta(t, 0.9, fullEL.CPUOverhead.Median, 1e-9) // 0.8 and 1.0
	require.InDelta(t, 0.8, fullEL.CPUOverhead.Min, 1e-9)
	require.InDelta(t, -0.2, fullEL.OverheadNoEL.Median, 1e-9)     // 15 → 12 ms/step
	require.InDelta(t, 0.8/3, fullEL.CPUOverheadNoEL.Median, 1e-9) // 1.5 → 1.8 and 2.0 s
	require.InDelta(t, 20.0, fullEL.PiggybackedPerStep.Median, 1e-9)
	require.InDelta(t, 0.2, fullEL.PiggybackShare, 1e-9) // 100 → 20 B/step
	require.Zero(t, full.PiggybackShare)
	require.InDelta(t, 30.0, fullEL.EventLogPerStep.Median, 1e-9)
	require.Zero(t, full.OverheadNoEL.N)
	for _, s := range rec {
		require.Equal(t, 2, s.Runs)
		require.Equal(t, !s.EventLogger && s.Failures == 3, s.RolledBack == 2, "%+v", s)
	}

	res := &ELResults{Config: cfg, Runs: runs}
	require.NoError(t, res.Check())
	find := func(v ELVariant, failures int) *ELRun {
		for i := range res.Runs {
			if r := &res.Runs[i]; r.Variant == v && r.Failures == failures {
				return r
			}
		}
		t.Fatalf("no run %v %d", v, failures)
		return nil
	}
	find(ELVariant{"partialdet", true}, 3).RolledBackTasks = 20
	find(ELVariant{"partialdet", false}, 3).RolledBackTasks = 0
	find(ELVariant{"fulldet", false}, 2).Events = nil
	find(ELVariant{"fulldet", true}, 0).EventLogRecords = 0
	find(ELVariant{"partialdet", false}, 0).Digest = "other"
	r := find(ELVariant{"fulldet", true}, 2)
	r.OK, r.Error = false, "exit status 1\nlast lines"
	err := res.Check()
	for _, want := range []string{
		"a partialdet+EL, PEs 1,3,5 killed, rep 1: rolled_back_tasks=20 restored_tasks=7, want 0 and > 0",
		"a partialdet, PEs 1,3,5 killed, rep 1: 3 failures without an event logger, and no task rolled back",
		"a fulldet, PEs 1,3 killed, rep 1: 0 PE failures reported, 2 PEs killed",
		"a fulldet+EL forward, rep 1: event logger true, 0 records sent to loggers",
		"a partialdet forward, rep 1: digest other, none's forward job gave d",
		"a fulldet+EL, PEs 1,3 killed, rep 1: job failed: exit status 1",
	} {
		require.ErrorContains(t, err, want)
	}
}
