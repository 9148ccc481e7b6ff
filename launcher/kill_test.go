package launcher

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stencil60 are the limits of a Stencil3D job of 60 iterations (steps 0
// to 58) on 4 PEs with a checkpoint every 10 steps (epochs 1 to 6).
var stencil60 = killLimits{PEs: 4, App: "stencil3d", LastStep: 58, KnowLastStep: true, CheckpointEvery: 10}

func TestParseKill(t *testing.T) {
	for spec, want := range map[string]kill{
		"pe=2,at=step:37":                  {Rank: 2, Trigger: atStep, N: 37, Signal: syscall.SIGKILL},
		"pe=0,at=step:58":                  {Rank: 0, Trigger: atStep, N: 58, Signal: syscall.SIGKILL},
		"pe=1,after=1500ms":                {Rank: 1, Trigger: afterTime, After: 1500 * time.Millisecond, Signal: syscall.SIGKILL},
		"pe=3,at=recovery:1":               {Rank: 3, Trigger: atRecovery, N: 1, Signal: syscall.SIGKILL},
		"pe=1,at=recovery:3":               {Rank: 1, Trigger: atRecovery, N: 3, Signal: syscall.SIGKILL},
		"pe=1,at=checkpoint:6":             {Rank: 1, Trigger: atCheckpoint, N: 6, Signal: syscall.SIGKILL},
		"pe=2,at=step:5,signal=STOP":       {Rank: 2, Trigger: atStep, N: 5, Signal: syscall.SIGSTOP},
		"signal=sigstop,pe=2,after=0s":     {Rank: 2, Trigger: afterTime, Signal: syscall.SIGSTOP},
		"pe=2,at=checkpoint:1,signal=KILL": {Rank: 2, Trigger: atCheckpoint, N: 1, Signal: syscall.SIGKILL},
	} {
		k, note, err := parseKill(spec, stencil60, 0)
		require.NoError(t, err, spec)
		require.Equal(t, want, k, spec)
		require.Empty(t, note, spec)
		// String gives the kill back in --kill syntax.
		again, _, err := parseKill(k.String(), stencil60, 0)
		require.NoError(t, err, k.String())
		require.Equal(t, k, again, k.String())
	}
	// Mistakes, and kills that can never fire, are refused before the
	// job starts, saying why.
	for spec, why := range map[string]string{
		"pe=9,at=step:3":             "pe must be 0..3",
		"pe=-1,at=step:3":            "pe must be 0..3",
		"pe=1":                       "give after=DURATION or at=",
		"at=step:3":                  "which PE",
		"pe=1,at=3":                  "want at=step:N",
		"pe=1,at=time:3":             "want at=step:N",
		"pe=1,at=step:x":             "want at=step:N",
		"when=now":                   `unknown field "when"`,
		"pe=1,after=-1s":             "bad duration",
		"pe=1,after=1s,at=step:3":    "one trigger per kill",
		"pe=1,pe=2,at=step:3":        "pe given twice",
		"pe=1,at=step:3,signal=TERM": "signal must be KILL or STOP",
		"pe=1,at=step:0":             "can never fire: the earliest step a kill can use is 1",
		"pe=1,at=step:59":            "can never fire: stencil3d with these arguments offers steps up to 58",
		"pe=1,at=step:1000":          "can never fire",
		"pe=1,at=recovery:0":         "can never fire: recoveries count from 1",
		"pe=1,at=recovery:4":         "can never fire: a job of 4 PEs has at most 3 recoveries",
		"pe=1,at=checkpoint:0":       "can never fire: checkpoint epochs count from 1",
		"pe=1,at=checkpoint:7":       "can never fire: this job takes checkpoints 1 to 6",
		"random,seed=x":              "bad seed",
		"random,pe=1":                "random takes seed= and signal= only",
		"random,seed=1,signal=HUP":   "signal must be KILL or STOP",
		"pe=1,at=step:3,":            "want name=value",
	} {
		_, _, err := parseKill(spec, stencil60, 0)
		require.ErrorIs(t, err, errUsage, spec)
		require.ErrorContains(t, err, why, spec)
	}
	_, _, err := parseKill("random", killLimits{PEs: 1}, 0)
	require.ErrorContains(t, err, "at least 2 PEs")
	// Without a known last step, only the checkpoint limit without
	// --checkpoint-every is known.
	unknown := killLimits{PEs: 4, App: "lulesh", CheckpointEvery: 10}
	_, _, err = parseKill("pe=1,at=step:100000", unknown, 0)
	require.NoError(t, err)
	_, _, err = parseKill("pe=1,at=checkpoint:100", unknown, 0)
	require.NoError(t, err)
	unknown.CheckpointEvery = 0
	_, _, err = parseKill("pe=1,at=checkpoint:2", unknown, 0)
	require.ErrorContains(t, err, "this job takes checkpoints 1 to 1")
}

func TestParseRandomKill(t *testing.T) {
	// A seeded random kill is the same every time, whatever the default
	// seed, and the note says how to repeat it.
	a, noteA, err := parseKill("random,seed=7", stencil60, 99)
	require.NoError(t, err)
	b, noteB, _ := parseKill("random,seed=7", stencil60, 12345)
	require.Equal(t, a, b)
	require.Equal(t, noteA, noteB)
	require.Contains(t, noteA, "--kill random,seed=7 chose "+a.String())
	// Without a seed the default one is used, and printed.
	c, noteC, _ := parseKill("random", stencil60, 7)
	require.Equal(t, a, c)
	require.Contains(t, noteC, "--kill random,seed=7 chose")
	// Over many seeds every PE, PE 0 included, and steps from 1 to the
	// last one, both ends included, are chosen.
	ranks := map[int]bool{}
	lowest, highest := uint64(1<<63), uint64(0)
	for seed := range uint64(2000) {
		k, _, err := parseKill("random,signal=STOP", stencil60, seed)
		require.NoError(t, err)
		require.Equal(t, atStep, k.Trigger)
		require.Equal(t, syscall.SIGSTOP, k.Signal)
		ranks[k.Rank] = true
		lowest, highest = min(lowest, k.N), max(highest, k.N)
	}
	require.Equal(t, map[int]bool{0: true, 1: true, 2: true, 3: true}, ranks)
	require.Equal(t, uint64(1), lowest)
	require.Equal(t, uint64(58), highest)
	// An application that cannot tell its last step gets a time-based
	// kill, and the note says so.
	k, note, err := parseKill("random,seed=3", killLimits{PEs: 3, App: "lulesh"}, 0)
	require.NoError(t, err)
	require.Equal(t, afterTime, k.Trigger)
	require.True(t, k.After >= 500*time.Millisecond && k.After < 2*time.Second, "%v", k.After)
	require.Contains(t, note, "lulesh does not tell its last step")
}

func TestKillAtStepIsTheEarliest(t *testing.T) {
	kills := []kill{
		{Rank: 1, Trigger: atStep, N: 30},
		{Rank: 1, Trigger: atStep, N: 20},
		{Rank: 1, Trigger: afterTime, After: time.Second},
		{Rank: 2, Trigger: atRecovery, N: 1},
		{Rank: 3, Trigger: atStep, N: 5},
	}
	var at []uint64
	for r := range 4 {
		at = append(at, killAtStep(kills, r))
	}
	require.Equal(t, []uint64{0, 20, 0, 5}, at)
}
