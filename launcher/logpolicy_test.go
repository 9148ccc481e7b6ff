package launcher

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
)

// The checkpoint policy of `gochare run`: without --checkpoint-every, a
// job under fulldet or partialdet offers a sync point every
// coord.DefaultSyncEvery steps, which checkpoints once a PE's sender log
// holds --log-limit MiB (default 4); --log-limit 0, --ft none and
// --checkpoint-every K keep a fixed schedule. Wrong values are usage
// errors that say why.
func TestLogLimitFlag(t *testing.T) {
	// The default the README and the usage text give.
	require.Equal(t, 4<<20, coord.DefaultLogLimit)
	for _, c := range []struct {
		args             []string
		syncEvery        uint64
		logLimit         int
		logPerCheckpoint int
		mtbf             time.Duration
	}{
		{nil, coord.DefaultSyncEvery, coord.DefaultLogLimit, coord.DefaultLogPerCheckpoint, 0},
		{[]string{"--ft", "fulldet"}, coord.DefaultSyncEvery, coord.DefaultLogLimit, coord.DefaultLogPerCheckpoint, 0},
		{[]string{"--mtbf", "24h"}, coord.DefaultSyncEvery, coord.DefaultLogLimit, coord.DefaultLogPerCheckpoint, 24 * time.Hour},
		{[]string{"--log-limit", "3"}, coord.DefaultSyncEvery, 3 << 20, 0, 0},
		{[]string{"--log-limit=1", "--ft", "fulldet", "--mtbf=90m"}, coord.DefaultSyncEvery, 1 << 20, 0, 90 * time.Minute},
		{[]string{"--log-limit", "0"}, 0, 0, 0, 0},
		{[]string{"--checkpoint-every", "5"}, 5, 0, 0, 0},
		{[]string{"--checkpoint-every", "0"}, 0, 0, 0, 0},
		{[]string{"--checkpoint-every", "5", "--log-limit", "0"}, 5, 0, 0, 0},
		{[]string{"--ft", "none"}, 0, 0, 0, 0},
		{[]string{"--ft", "none", "--checkpoint-every", "4"}, 4, 0, 0, 0},
	} {
		o, _, err := splitRunArgs(append([]string{"--pes", "2"}, c.args...))
		require.NoError(t, err, "%v", c.args)
		syncEvery, logLimit, logPerCheckpoint := o.syncPolicy()
		require.Equal(t, c.syncEvery, syncEvery, "%v", c.args)
		require.Equal(t, c.logLimit, logLimit, "%v", c.args)
		require.Equal(t, c.logPerCheckpoint, logPerCheckpoint, "%v", c.args)
		require.Equal(t, c.mtbf, o.mtbf, "%v", c.args)
	}
	// On one PE no message is logged: the default takes no sync point,
	// unless --mtbf asks for Daly's period (with --checkpoint-dir, to
	// restart from).
	for _, c := range []struct {
		args      []string
		syncEvery uint64
		logLimit  int
	}{
		{nil, 0, 0},
		{[]string{"--ft", "fulldet"}, 0, 0},
		{[]string{"--log-limit", "3"}, 0, 0},
		{[]string{"--checkpoint-every", "5"}, 5, 0},
		{[]string{"--mtbf", "24h"}, coord.DefaultSyncEvery, coord.DefaultLogLimit},
	} {
		o, _, err := splitRunArgs(append([]string{"--pes", "1"}, c.args...))
		require.NoError(t, err, "%v", c.args)
		syncEvery, logLimit, _ := o.syncPolicy()
		require.Equal(t, c.syncEvery, syncEvery, "1 PE %v", c.args)
		require.Equal(t, c.logLimit, logLimit, "1 PE %v", c.args)
	}
	for args, why := range map[string]string{
		"--log-limit -1":                     "want a number >= 0",
		"--log-limit lots":                   "want a number >= 0",
		"--log-limit 1.5":                    "want a number >= 0",
		"--log-limit":                        "needs a value",
		"--log-limit 2000000000":             "at most",
		"--log-limit 3 --checkpoint-every 5": "give one of them",
		"--ft none --log-limit 3":            "keeps no sender log",
		"--mtbf 1h --checkpoint-every 5":     "give one of them",
		"--mtbf 1h --ft none":                "give --checkpoint-every",
		"--mtbf 1h --log-limit 0":            "give one of them",
		"--mtbf soon":                        "want a duration",
		"--mtbf -1h":                         "want a duration",
	} {
		_, _, err := splitRunArgs(append([]string{"--pes", "2"}, strings.Fields(args)...))
		require.ErrorIs(t, err, errUsage, args)
		require.ErrorContains(t, err, why, args)
	}
	// A kill at a checkpoint the default policy may take is accepted; one
	// past every sync point is not.
	lim := killLimits{PEs: 3, App: "stencil3d", LastStep: 98, KnowLastStep: true, CheckpointEvery: coord.DefaultSyncEvery, LogLimit: true}
	_, _, err := parseKill("pe=1,at=checkpoint:3", lim, 0)
	require.NoError(t, err)
	_, _, err = parseKill("pe=1,at=checkpoint:12", lim, 0)
	require.ErrorContains(t, err, "this job takes checkpoints 1 to 10 at most")
}

var (
	passedLine     = regexp.MustCompile(`sync point of step (\d+) passed without a checkpoint: the largest sender log holds (\d+) bytes \(PE \d+\), under the limit of (\d+)`)
	checkpointLine = regexp.MustCompile(`sync point of step (\d+) checkpoints: PE \d+'s sender log holds (\d+) bytes, the limit is (\d+)`)
	committedLine  = regexp.MustCompile(`checkpoint (\d+) staged and copied to buddies`)
	skippedLine    = regexp.MustCompile(`sync points? of steps? (?:\d+ to )?(\d+) skipped: the largest sender log would hold about (\d+) bytes`)
)

// The default policy on real PE processes with a small --log-limit and a
// SIGKILL: the sync points where every sender log is under the limit pass
// without a checkpoint, those that would pass too are skipped (the job
// does not stop there), the job checkpoints only at those where a log
// reached it, the killed PE's tasks, restored from a checkpoint older
// than sync points the job passed, pass those by themselves, and the
// result is the reference one.
func TestLogLimitOnRealPEs(t *testing.T) {
	const limit = 1 << 20
	for _, ft := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet} {
		t.Run(protocolName(ft), func(t *testing.T) {
			j := startJob(t, "run", "stencil3d", "--pes", "3", "--grid", "48,48,32", "--chunk", "16,16,16", "--iterations", "100",
				"--ft", protocolName(ft), "--log-limit", "1", "--kill", "pe=1,at=step:75")
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 .*killed by signal 9`), time.Second)
			j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)

			var passed, skipped, decided, committed int
			decidedSinceCommit := false
			for _, l := range strings.Split(j.output(), "\n") {
				if m := passedLine.FindStringSubmatch(l); m != nil {
					passed++
					log, _ := strconv.Atoi(m[2])
					require.Less(t, log, limit, l)
					require.Equal(t, strconv.Itoa(limit), m[3], l)
				}
				if m := skippedLine.FindStringSubmatch(l); m != nil {
					skipped++
					log, _ := strconv.Atoi(m[2])
					require.Less(t, log, limit, l)
				}
				if m := checkpointLine.FindStringSubmatch(l); m != nil {
					decided++
					decidedSinceCommit = true
					log, _ := strconv.Atoi(m[2])
					require.GreaterOrEqual(t, log, limit, l)
				}
				if m := committedLine.FindStringSubmatch(l); m != nil {
					committed++
					if m[1] != "1" {
						require.True(t, decidedSinceCommit, "checkpoint %s without a log at the limit:\n%s", m[1], j.output())
					}
					decidedSinceCommit = false
				}
			}
			t.Logf("%d sync points passed without a checkpoint, %d skipped, %d decided to checkpoint, %d checkpoints committed (the initial one included)", passed, skipped, decided, committed)
			require.GreaterOrEqual(t, passed, 2, "sync points passed without a checkpoint:\n%s", j.output())
			require.GreaterOrEqual(t, skipped, 2, "sync points skipped:\n%s", j.output())
			require.GreaterOrEqual(t, committed, 3, "the initial checkpoint and two at a log limit:\n%s", j.output())
			require.Less(t, committed-1, 100/coord.DefaultSyncEvery, "not every sync point checkpointed")
			require.GreaterOrEqual(t, decided, committed-1)
			job := j.waitLine(t, jobStatsLine, 5*time.Second)
			require.NotEqual(t, "0", job[3], "tasks were restored")
			require.Equal(t, "0", job[4], "no task rolled back")
			// A PE logs about 0.25 MB in 10 steps (only the faces sent to
			// other PEs are logged), so the job passes the sync point of
			// step 9, skips that of step 19 (0.5 MB there), passes step
			// 29, skips step 39 (1.0 MB), checkpoints at step 49
			// (1.26 MB), skips step 59 and passes step 69. PE 1 died at
			// step 75: each of its 6 chunks (18 on 3 PEs), restored from
			// the checkpoint of step 49, passed the sync point of step 69
			// again by itself, once (and that of step 59, which every
			// task passed by itself the first time: not counted).
			again := j.waitLine(t, regexp.MustCompile(`msg="job stats" .*sync_points_passed_again=(\d+)`), time.Second)
			require.Equal(t, "6", again[1])
		})
	}
}

// --mtbf on real PE processes: with an MTBF so short that Daly's period
// is shorter than a sync period, every sync point after the initial
// checkpoint checkpoints and says why, whatever the logs hold; a SIGKILL
// in between is recovered with the reference result.
func TestMTBFOnRealPEs(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "3", "--grid", "48,48,32", "--chunk", "16,16,16", "--iterations", "100",
		"--mtbf", "1ms", "--kill", "pe=1,at=step:25")
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
	daly := regexp.MustCompile(`sync point of step (\d+) checkpoints: .* since the last checkpoint, Daly's period for an MTBF of 1ms and a checkpoint of .* is `)
	var steps []string
	for _, l := range strings.Split(j.output(), "\n") {
		if m := daly.FindStringSubmatch(l); m != nil {
			steps = append(steps, m[1])
		}
		require.NotContains(t, l, "passed without a checkpoint", "Daly's period is shorter than any sync period")
	}
	// Every sync point, from step 9 to step 89 (the tasks of PE 1,
	// restored from step 19's checkpoint, reach step 29's with the
	// others: none passed it yet).
	require.Equal(t, []string{"9", "19", "29", "39", "49", "59", "69", "79", "89"}, steps, j.output())
}
