package chaos

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func fullPreset(t *testing.T, seed uint64) Config {
	t.Helper()
	c, err := Preset("full")
	require.NoError(t, err)
	c.Seed = seed
	return c
}

// TestPlanDeterministic: a run depends on the seed and its index only, not
// on how many runs the campaign has, and another seed plans otherwise.
func TestPlanDeterministic(t *testing.T) {
	a, b := fullPreset(t, 42), fullPreset(t, 42)
	b.Runs = 3
	other := fullPreset(t, 43)
	differ := 0
	for i := range 200 {
		require.Equal(t, a.Plan(i), b.Plan(i), "run %d", i)
		if fmt.Sprint(a.Plan(i)) != fmt.Sprint(other.Plan(i)) || fmt.Sprint(a.Plan(i).Failures) != fmt.Sprint(other.Plan(i).Failures) {
			differ++
		}
	}
	require.Greater(t, differ, 150, "seeds 42 and 43 plan almost the same runs")
}

// TestPlanStratified: every block of apps×protocols runs visits each pair
// once, every block of len(Kinds) runs each kind once.
func TestPlanStratified(t *testing.T) {
	c := fullPreset(t, 9)
	cells := len(c.Apps) * len(c.Protocols)
	for block := range 20 {
		seen := map[string]int{}
		for i := block * cells; i < (block+1)*cells; i++ {
			r := c.Plan(i)
			seen[r.App+"/"+r.Protocol]++
		}
		require.Len(t, seen, cells, "block %d", block)
	}
	for block := range 20 {
		seen := map[Kind]int{}
		for i := block * len(c.Kinds); i < (block+1)*len(c.Kinds); i++ {
			seen[c.Plan(i).Kind]++
		}
		require.Len(t, seen, len(c.Kinds), "block %d", block)
	}
}

// TestPlanFailuresValid: every planned failure can happen: PEs in range
// (PE 0 among them), steps from 1 to the application's last, two failures
// on two PEs, checkpoint kills at a multiple of the period, defaults and
// periods both used.
func TestPlanFailuresValid(t *testing.T) {
	c := fullPreset(t, 5)
	kinds := map[Kind]int{}
	var pe0, defaults, periods, atLast, recoveryDelayed int
	for i := range 3000 {
		r := c.Plan(i)
		app, ok := c.appByName(r.App)
		require.True(t, ok)
		require.Contains(t, c.PEs, r.PEs)
		kinds[r.Kind]++
		if r.CheckpointEvery == 0 {
			defaults++
		} else {
			periods++
			require.Contains(t, app.Periods, r.CheckpointEvery, "run %d", i)
		}
		require.NotEmpty(t, r.Failures)
		var pes []int
		for _, f := range r.Failures {
			require.GreaterOrEqual(t, f.PE, 0)
			require.Less(t, f.PE, r.PEs)
			require.NotContains(t, pes, f.PE, "run %d: two failures of one PE", i)
			pes = append(pes, f.PE)
			if f.PE == 0 {
				pe0++
			}
			switch f.Trigger {
			case AtStep:
				require.GreaterOrEqual(t, f.Step, uint64(1))
				require.LessOrEqual(t, f.Step, app.LastStep)
				if f.Step == app.LastStep {
					atLast++
				}
			case AtRecovery:
				require.Equal(t, 1, f.Recovery)
				require.Equal(t, SigKill, f.Signal)
				if f.DelayMS > 0 {
					recoveryDelayed++
				}
			case AtTime:
				require.GreaterOrEqual(t, f.Fraction, 0.0)
				require.Less(t, f.Fraction, 1.0)
			case AtCheckpoint:
				require.Equal(t, KindCheckpoint, r.Kind)
				require.GreaterOrEqual(t, f.Epoch, uint64(1))
				require.LessOrEqual(t, f.Epoch, 1+(app.LastStep+1)/uint64(r.CheckpointEvery), "run %d", i)
			default:
				t.Fatalf("run %d: trigger %q", i, f.Trigger)
			}
		}
		switch r.Kind {
		case KindTwo, KindRecovery:
			require.Len(t, r.Failures, 2)
		default:
			require.Len(t, r.Failures, 1)
		}
		switch r.Kind {
		case KindCheckpoint:
			require.Positive(t, r.CheckpointEvery)
			if r.Failures[0].Trigger == AtStep {
				require.Zero(t, (r.Failures[0].Step+1)%uint64(r.CheckpointEvery), "run %d: a step whose sync point is taken", i)
			}
		case KindStop:
			require.Equal(t, SigStop, r.Failures[0].Signal)
			require.Zero(t, r.Failures[0].ResumeMS)
		case KindPause:
			require.Equal(t, SigStop, r.Failures[0].Signal)
			require.GreaterOrEqual(t, r.Failures[0].ResumeMS, 500)
			require.Less(t, r.Failures[0].ResumeMS, 8000)
		case KindExternal:
			require.Equal(t, SigKill, r.Failures[0].Signal)
			require.Equal(t, AtTime, r.Failures[0].Trigger)
		}
	}
	require.Len(t, kinds, len(PEKinds))
	require.Positive(t, pe0, "PE 0 is never killed")
	require.Positive(t, atLast, "the last step is never chosen")
	require.Positive(t, recoveryDelayed)
	require.Greater(t, defaults, 500, "runs with the default flags")
	require.Greater(t, periods, 1000)
}

// TestArgs: kills at a step become --kill flags before the application's
// flags; the rest is left to the campaign unless the launcher takes it.
func TestArgs(t *testing.T) {
	c := fullPreset(t, 1)
	run := Run{App: "lulesh", Protocol: "fulldet", PEs: 4, CheckpointEvery: 7, Kind: KindRecovery, Failures: []Failure{
		{PE: 0, Signal: SigKill, Trigger: AtStep, Step: 12},
		{PE: 3, Signal: SigKill, Trigger: AtRecovery, Recovery: 1},
	}}
	c.LauncherKills = LauncherKills{}
	args, campaign := c.Args(run)
	require.Equal(t, []string{"run", "lulesh", "--pes", "4", "--ft", "fulldet", "--checkpoint-every", "7", "--json",
		"--kill", "pe=0,at=step:12", "--size", "12", "--chunk", "6,6,6", "--iterations", "60"}, args)
	require.Equal(t, run.Failures[1:], campaign)
	run.Disk = true
	args, _ = c.Args(run)
	require.Contains(t, args, "--checkpoint-dir", "a run with disk checkpoints names its directory")
	require.Contains(t, args, c.DiskDir(run))
	run.Disk = false
	require.Equal(t, []string{"run", "lulesh", "--pes", "4", "--ft", "fulldet", "--checkpoint-every", "7", "--json",
		"--size", "12", "--chunk", "6,6,6", "--iterations", "60"}, c.BaselineArgs(run))

	c.Failures = 1
	require.Equal(t, []string{"run", "lulesh", "--pes", "4", "--ft", "fulldet", "--checkpoint-every", "7", "--failures", "1", "--json",
		"--size", "12", "--chunk", "6,6,6", "--iterations", "60"}, c.BaselineArgs(run), "--failures under fulldet")
	require.NotContains(t, c.BaselineArgs(Run{App: "lulesh", Protocol: "none", PEs: 4}), "--failures", "none has no f")
	require.NotContains(t, c.BaselineArgs(Run{App: "lulesh", Protocol: "partialdet", PEs: 4, Loggers: 1, Setup: LoggersEvent}), "--failures",
		"an event logger has no f")
	require.Contains(t, c.ReplayArgs(3), "--failures")
	require.NoError(t, c.Validate())
	c.Failures = 3
	require.ErrorIs(t, c.Validate(), ErrConfig, "f=3 with the preset's 3 PEs")
	c.Failures = 0

	c.LauncherKills = LauncherKills{Recovery: true, Signal: true}
	args, campaign = c.Args(run)
	require.Empty(t, campaign)
	require.Contains(t, args, "pe=3,at=recovery:1")
	// A delayed kill during recovery stays with the campaign.
	run.Failures[1].DelayMS = 30
	_, campaign = c.Args(run)
	require.Equal(t, run.Failures[1:], campaign)

	stop := Failure{PE: 2, Signal: SigStop, Trigger: AtStep, Step: 9}
	spec, ok := c.LauncherKills.Spec(stop)
	require.True(t, ok)
	require.Equal(t, "pe=2,at=step:9,signal=STOP", spec)
	_, ok = LauncherKills{}.Spec(stop)
	require.False(t, ok)
	_, ok = c.LauncherKills.Spec(Failure{PE: 1, Signal: SigKill, Trigger: AtTime, Fraction: 0.5})
	require.False(t, ok, "an external kill is the campaign's")
	spec, ok = LauncherKills{}.Spec(Failure{PE: 1, Signal: SigKill, Trigger: AtCheckpoint, Epoch: 3})
	require.True(t, ok, "a kill as a checkpoint starts is always the launcher's")
	require.Equal(t, "pe=1,at=checkpoint:3", spec)
}

// TestLauncherSignalPlansStopsAtSteps: with the launcher's signal=STOP, a
// stop is planned at a step and handed to the launcher; the rest of the
// plan is unchanged.
func TestLauncherSignalPlansStopsAtSteps(t *testing.T) {
	c := fullPreset(t, 11)
	l := c
	l.LauncherKills = LauncherKills{Signal: true}
	stops := 0
	for i := range 200 {
		a, b := c.Plan(i), l.Plan(i)
		if a.Kind != KindStop {
			require.Equal(t, a, b)
			continue
		}
		stops++
		require.Equal(t, AtTime, a.Failures[0].Trigger)
		require.Equal(t, AtStep, b.Failures[0].Trigger)
		require.Equal(t, a.Failures[0].PE, b.Failures[0].PE)
		_, campaign := l.Args(b)
		require.Empty(t, campaign)
	}
	require.Positive(t, stops)
}

// TestReplayArgs: the replay command of a run parses back into the same
// configuration, which plans the same run.
func TestReplayArgs(t *testing.T) {
	for _, args := range [][]string{
		{"--seed", "77"},
		{"--preset", "ci", "--seed", "3", "--runs", "40"},
		{"--seed", "5", "--apps", "lulesh,stencil3d", "--ft", "partialdet", "--pes", "4-5", "--kinds", "two,stop", "--launcher-kills", "recovery"},
		{"--preset", "loggers", "--seed", "9"},
		{"--preset", "loggers", "--seed", "9", "--loggers", "none,quota", "--kinds", "logger-pe,many"},
		{"--seed", "9", "--loggers", "event,both"},
		{"--preset", "loggers", "--seed", "9", "--loggers", "none"},
	} {
		inv, err := parseArgs(args)
		require.NoError(t, err, args)
		for _, i := range []int{0, 7, 39} {
			replay := inv.cfg.ReplayArgs(i)
			require.Equal(t, "chaos", replay[0])
			again, err := parseArgs(replay[1:])
			require.NoError(t, err, replay)
			require.Equal(t, []int{i}, again.indices)
			require.Equal(t, inv.cfg.Plan(i), again.cfg.Plan(i), "%v", replay)
			wantArgs, wantCampaign := inv.cfg.Args(inv.cfg.Plan(i))
			gotArgs, gotCampaign := again.cfg.Args(again.cfg.Plan(i))
			require.Equal(t, wantArgs, gotArgs)
			require.Equal(t, wantCampaign, gotCampaign)
		}
	}
	// --failures is passed on, and replayed.
	f, err := parseArgs([]string{"--seed", "5", "--failures", "1"})
	require.NoError(t, err)
	require.Equal(t, 1, f.cfg.Failures)
	again, err := parseArgs(f.cfg.ReplayArgs(2)[1:])
	require.NoError(t, err)
	require.Equal(t, 1, again.cfg.Failures)
	// The listed order of --apps does not change the plan.
	a, err := parseArgs([]string{"--seed", "5", "--apps", "lulesh,stencil3d"})
	require.NoError(t, err)
	b, err := parseArgs([]string{"--seed", "5", "--apps", "stencil3d,lulesh"})
	require.NoError(t, err)
	require.Equal(t, a.cfg.Plan(3), b.cfg.Plan(3))
}

// TestParseArgsErrors: bad flags are refused with a clear error.
func TestParseArgsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "huge"}, `unknown preset "huge"`},
		{[]string{"--apps", "stencil3d,nbody"}, `--apps "nbody"`},
		{[]string{"--ft", "causal"}, `--ft "causal"`},
		{[]string{"--pes", "2-4"}, "2 PEs: at least 3"},
		{[]string{"--pes", "5-3"}, `--pes "5-3"`},
		{[]string{"--kinds", "meteor"}, `--kinds "meteor"`},
		{[]string{"--loggers", "many"}, `--loggers "many"`},
		{[]string{"--timeout-factor", "0"}, "--timeout-factor 0"},
		{[]string{"--failures", "0"}, "--failures 0: want 1 to 8"},
		{[]string{"--failures", "9"}, "--failures 9: want 1 to 8"},
		{[]string{"--failures", "3", "--pes", "3"}, "--failures 3 with 3 PEs"},
		{[]string{"--only", "x"}, `--only "x"`},
		{[]string{"--launcher-kills", "all"}, `--launcher-kills "all"`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, err := parseArgs(c.args)
		require.ErrorIs(t, err, ErrConfig, c.args)
		require.ErrorContains(t, err, c.want, c.args)
	}
	inv, err := parseArgs(nil)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("gochare chaos --seed %d", inv.cfg.Seed), inv.command, "a drawn seed is recorded in the command")
	require.Positive(t, inv.cfg.Seed)
}

func TestParseNumbers(t *testing.T) {
	for in, want := range map[string][]int{"3": {3}, "3-5": {3, 4, 5}, "5,3,4,3": {3, 4, 5}, "3,6-7": {3, 6, 7}, "0-2,9": {0, 1, 2, 9}} {
		got, err := ParseNumbers("--pes", in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "a", "4-", "-4", "6-3"} {
		_, err := ParseNumbers("--pes", in)
		require.Error(t, err, in)
	}
}

func TestValidate(t *testing.T) {
	c := fullPreset(t, 1)
	require.NoError(t, c.Validate())
	bad := c
	bad.Apps = slices.Clone(c.Apps)
	bad.Apps[0].Periods = []int{int(bad.Apps[0].LastStep) + 1}
	require.ErrorContains(t, bad.Validate(), "checkpoint period")
	bad = c
	bad.Apps = slices.Clone(c.Apps)
	bad.Apps[1].Periods = nil
	require.ErrorContains(t, bad.Validate(), "no checkpoint period for the checkpoint kind")
	bad.Kinds = []Kind{KindStep}
	require.NoError(t, bad.Validate(), "without the checkpoint kind no period is needed")
	ci, err := Preset("ci")
	require.NoError(t, err)
	require.NoError(t, ci.Validate())
	require.Contains(t, ci.Kinds, KindStop, "the CI preset has a hung PE, which the heartbeats must catch")
	require.Contains(t, ci.Kinds, KindLogger, "the CI preset kills a logger")
	require.Contains(t, ci.Loggers, LoggersEvent)
	require.True(t, ci.LauncherKills.Recovery, "kills as a recovery begins go to the launcher by default")
}

func loggersPreset(t *testing.T, seed uint64) Config {
	t.Helper()
	c, err := Preset("loggers")
	require.NoError(t, err)
	c.Seed = seed
	require.NoError(t, c.Validate())
	return c
}

// TestLoggerPlan: the loggers preset's runs all have loggers, with flags
// the launcher takes under their protocol (no event logger and no quota
// under none); every setup, logger count and failure kind comes up;
// logger failures name a logger the run has; several PEs killed at once
// are 2 or 3 distinct PEs, never two buddies without disk checkpoints,
// with an event logger where the protocol allows one.
func TestLoggerPlan(t *testing.T) {
	c := loggersPreset(t, 17)
	setups := map[LoggerSetup]int{}
	kinds := map[Kind]int{}
	var tunedHeartbeats, two, logger1, fractionLow, fractionHigh, manyThree, manyTogether, manyAtRecovery, manyDisk, pe0AfterLogger, delayed int
	for i := range 3000 {
		r := c.Plan(i)
		kinds[r.Kind]++
		setups[r.Setup]++
		require.Contains(t, []int{1, 2}, r.Loggers, "run %d", i)
		require.True(t, r.Setup.allowed(r.Protocol), "run %d: %s under %s", i, r.Setup, r.Protocol)
		if r.Protocol == "none" {
			require.Equal(t, LoggersPlain, r.Setup, "run %d", i)
		}
		if r.Loggers == 2 {
			two++
		}
		if r.Setup.Quota() {
			require.GreaterOrEqual(t, r.QuotaFraction, 0.1)
			require.LessOrEqual(t, r.QuotaFraction, 1.0)
			require.InDelta(t, 0, math.Remainder(r.QuotaFraction*20, 1), 1e-9, "run %d: %g in steps of 5 %%", i, r.QuotaFraction)
			fractionLow += b2i(r.QuotaFraction < 0.12)
			fractionHigh += b2i(r.QuotaFraction > 0.98)
		} else {
			require.Zero(t, r.QuotaFraction)
		}
		require.Zero(t, r.LogQuota, "the plan does not measure")
		for _, f := range r.Failures {
			if f.Logger {
				require.Less(t, f.PE, r.Loggers, "run %d", i)
				require.Equal(t, AtTime, f.Trigger)
				logger1 += b2i(f.PE == 1)
				_, byLauncher := c.LauncherKills.Spec(f)
				require.False(t, byLauncher, "a logger's failure is the campaign's")
			} else {
				require.Less(t, f.PE, r.PEs, "run %d", i)
			}
		}
		switch r.Kind {
		case KindLogger, KindLoggerStop:
			require.Len(t, r.Failures, 1)
			require.True(t, r.Failures[0].Logger)
			require.Equal(t, map[Kind]Signal{KindLogger: SigKill, KindLoggerStop: SigStop}[r.Kind], r.Failures[0].Signal)
			require.Zero(t, r.Failures[0].ResumeMS)
			if r.HeartbeatTimeout > 0 {
				require.Equal(t, KindLoggerStop, r.Kind)
				args, _ := c.Args(r)
				require.Equal(t, "1s", argAfter(args, "--heartbeat-timeout"))
				require.NotContains(t, c.BaselineArgs(r), "--heartbeat-timeout", "the failure-free run keeps the default")
				tunedHeartbeats++
			}
		case KindLoggerPE:
			require.Len(t, r.Failures, 2)
			require.True(t, r.Failures[0].Logger)
			then := r.Failures[1]
			require.False(t, then.Logger)
			require.Equal(t, AtLoggerFailure, then.Trigger)
			require.Equal(t, SigKill, then.Signal)
			require.LessOrEqual(t, then.DelayMS, 1000)
			pe0AfterLogger += b2i(then.PE == 0)
			delayed += b2i(then.DelayMS > 0)
		case KindMany:
			require.GreaterOrEqual(t, len(r.Failures), 2)
			require.LessOrEqual(t, len(r.Failures), 3)
			require.Less(t, len(r.Failures), r.PEs, "run %d leaves a survivor", i)
			if r.Protocol != "none" {
				require.True(t, r.Setup.EventLogger(), "run %d: several PEs at once with an event logger", i)
			}
			var pes []int
			for _, f := range r.Failures {
				require.False(t, f.Logger)
				require.NotContains(t, pes, f.PE, "run %d", i)
				if !r.Disk {
					require.NotContains(t, pes, (f.PE+1)%r.PEs, "run %d: buddies without disk checkpoints", i)
					require.NotContains(t, pes, (f.PE+r.PEs-1)%r.PEs, "run %d: buddies without disk checkpoints", i)
				}
				pes = append(pes, f.PE)
			}
			first := r.Failures[0]
			require.Equal(t, AtStep, first.Trigger)
			for _, f := range r.Failures[1:] {
				if f.Trigger == AtStep {
					require.Equal(t, first.Step, f.Step, "run %d: at once", i)
					manyTogether++
				} else {
					require.Equal(t, AtRecovery, f.Trigger)
					require.Equal(t, 1, f.Recovery)
					manyAtRecovery++
				}
			}
			manyThree += b2i(len(r.Failures) == 3)
			manyDisk += b2i(r.Disk)
		}
		args, _ := c.Args(r)
		require.Equal(t, strconv.Itoa(r.Loggers), argAfter(args, "--loggers"), "run %d", i)
		require.Equal(t, r.Setup.EventLogger(), slices.Contains(args, "--event-logger"), "run %d", i)
		if r.Setup.Quota() {
			require.Equal(t, "unmeasured", argAfter(args, "--log-quota"), "a quota not measured is a value the launcher refuses")
			r.LogQuota = 123456
			args, _ = c.Args(r)
			require.Equal(t, "123456", argAfter(args, "--log-quota"))
		} else {
			require.NotContains(t, args, "--log-quota")
		}
	}
	require.Len(t, kinds, len(c.Kinds))
	require.Len(t, setups, len(c.Loggers))
	for name, n := range map[string]int{"two loggers": two, "logger 1 failing": logger1, "quota 10 %": fractionLow, "quota 100 %": fractionHigh,
		"three PEs at once": manyThree, "PEs at one step": manyTogether, "PEs as the recovery starts": manyAtRecovery, "several PEs with disk": manyDisk,
		"PE 0 after a logger": pe0AfterLogger, "a PE a while after a logger": delayed, "tuned heartbeats": tunedHeartbeats} {
		require.Positive(t, n, name)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestLoggersLeavePEFailuresAlone: adding the logger dimension to a
// campaign changes no run's PE failures, PE count or checkpoint flags
// (a KindMany run may add disk checkpoints), and a campaign without it
// plans no logger: the full and ci presets plan as they did.
func TestLoggersLeavePEFailuresAlone(t *testing.T) {
	c := fullPreset(t, 23)
	l := c
	l.Loggers = slices.Clone(AllLoggerSetups)
	var withLoggers, none int
	for i := range 500 {
		a, b := c.Plan(i), l.Plan(i)
		require.Zero(t, a.Loggers)
		require.Empty(t, a.Setup)
		require.NotContains(t, a.Key(), "loggers")
		require.Equal(t, a.Failures, b.Failures, "run %d", i)
		require.Equal(t, a.Kind, b.Kind)
		require.Equal(t, a.PEs, b.PEs)
		require.Equal(t, a.CheckpointEvery, b.CheckpointEvery)
		require.Equal(t, a.Disk, b.Disk)
		if b.Loggers > 0 {
			withLoggers++
			require.NotEqual(t, a.Key(), b.Key())
		} else {
			none++
			require.Equal(t, a.Key(), b.Key())
		}
	}
	require.Positive(t, withLoggers)
	require.Positive(t, none, "none is a setup too")
}

// TestLoggerKinds: a logger kind in a campaign without a logger setup
// gets plain loggers; KindMany under fulldet takes the event logger when
// one is listed.
func TestLoggerKinds(t *testing.T) {
	c := fullPreset(t, 3)
	c.Kinds = []Kind{KindLogger, KindMany}
	require.NoError(t, c.Validate())
	for i := range 100 {
		r := c.Plan(i)
		switch r.Kind {
		case KindLogger:
			require.Equal(t, LoggersPlain, r.Setup)
			require.Positive(t, r.Loggers)
		case KindMany:
			require.Zero(t, r.Loggers, "no setup listed: no logger")
		}
	}
	c.Loggers = []LoggerSetup{LoggersNone, LoggersQuota, LoggersBoth}
	for i := range 100 {
		r := c.Plan(i)
		if r.Kind == KindMany && r.Protocol == "fulldet" {
			require.Equal(t, LoggersBoth, r.Setup)
		}
		if r.Kind == KindLogger && r.Protocol == "none" {
			require.Equal(t, LoggersPlain, r.Setup, "the listed setups with loggers are refused under none")
		}
	}
}

// TestUnbounded: a run with a quota is measured by the same
// configuration without it, with the same loggers and event logger.
func TestUnbounded(t *testing.T) {
	r := Run{Index: 4, App: "leanmd", Protocol: "partialdet", PEs: 4, CheckpointEvery: 10, Setup: LoggersBoth, Loggers: 2, QuotaFraction: 0.35,
		Kind: KindLoggerPE, Failures: []Failure{{PE: 1, Logger: true, Signal: SigKill, Trigger: AtTime, Fraction: 0.5}}}
	require.Equal(t, "leanmd/partialdet/pes=4/every=10/loggers=2/event/quota=0.35", r.Key())
	u := r.Unbounded()
	require.Equal(t, "leanmd/partialdet/pes=4/every=10/loggers=2/event", u.Key())
	require.Empty(t, u.Failures)
	r.Setup = LoggersQuota
	require.Equal(t, "leanmd/partialdet/pes=4/every=10/loggers=2", r.Unbounded().Key())
	require.Equal(t, LoggersPlain, r.Unbounded().Setup)
	require.Contains(t, r.String(), "2 loggers, log quota 35% of the peak")
	require.Equal(t, "SIGKILL logger 1 at 50% of the failure-free run time", r.Failures[0].String())
}
