package chaos

import (
	"fmt"
	"slices"
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
	require.Len(t, kinds, len(AllKinds))
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
		{[]string{"--timeout-factor", "0"}, "--timeout-factor 0"},
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
	require.True(t, ci.LauncherKills.Recovery, "kills as a recovery begins go to the launcher by default")
}
