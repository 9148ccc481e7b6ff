package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The three applications' result lines, as they print them.
const (
	stencilLine = `{"app":"stencil3d","grid":[32,32,32],"chunk":[8,8,8],"chunks":64,"iterations":4,"pes":3,"chunk_sum":74516.395251978582,"chunk_fnv1a":"d88df63cfbbd30ad","chunks_equal":true,"job_digest":"782d4ca31c54a0a5","reference":"none","elapsed_s":0.199794271}`
	leanmdLine  = `{"app":"leanmd","cells":[3,3,3],"steps":4,"pes":3,"ke_initial":4.417879688715878e-16,"pe_initial":-9.860800414891136e-17,"ke_final":4.414946353162613e-16,"pe_final":-9.8157487007121e-17,"atoms_migrated":0,"digest":"63a64c0d12658af3","ms_per_step":167.93875}`
	luleshLine  = `{"app":"lulesh","size":12,"chunk":[6,6,6],"chunks":8,"pes":3,"iterations":4,"final_origin_energy":592771.63972538279,"max_abs_diff":4.320099833421409e-12,"total_abs_diff":4.3227887632293904e-12,"max_rel_diff":7.094459918311538e-13,"elapsed_s":0.182487774,"fom":37.87651001759713,"digest":"a069cb66a5a2623b","reference":"none"}`
)

func TestDigest(t *testing.T) {
	for line, want := range map[string]string{stencilLine: "782d4ca31c54a0a5", leanmdLine: "63a64c0d12658af3", luleshLine: "a069cb66a5a2623b"} {
		d, err := Digest([]string{"job digest 1111", "elapsed 0.2 s", line})
		require.NoError(t, err)
		require.Equal(t, want, d)
	}
	_, err := Digest([]string{"job digest 782d4ca31c54a0a5"})
	require.ErrorIs(t, err, errNoDigest, "the text line is not the result")
	_, err = Digest([]string{`{"app":"x","elapsed_s":1}`})
	require.ErrorIs(t, err, errNoDigest)
	_, err = Digest([]string{`{"app":"lulesh","digest":"ab`})
	require.ErrorContains(t, err, "unreadable JSON result line")
}

func TestClassify(t *testing.T) {
	stderr := []string{
		`level=INFO msg="started PEs" app=lulesh pes=3 pids="[1 2 3]"`,
		`level=ERROR msg="PE failed" detail="PE 1 (pid 2 on vm) was killed by signal 9 (killed)" after_begin_ms=20`,
		`level=INFO msg="job stats" ft=none`,
	}
	ok := Outcome{Stdout: []string{luleshLine}, Stderr: stderr}
	c, d, detail := Classify(ok, "a069cb66a5a2623b")
	require.Equal(t, Right, c)
	require.Equal(t, "a069cb66a5a2623b", d)
	require.Empty(t, detail)

	c, _, detail = Classify(ok, "0000000000000000")
	require.Equal(t, Wrong, c)
	require.Contains(t, detail, "digest a069cb66a5a2623b, failure-free 0000000000000000")

	// A wrong digest stays wrong when the job also failed.
	failedWrong := ok
	failedWrong.ExitCode = 1
	c, _, _ = Classify(failedWrong, "0000000000000000")
	require.Equal(t, Wrong, c)

	// The right digest with a failed exit is an error.
	c, _, detail = Classify(failedWrong, "a069cb66a5a2623b")
	require.Equal(t, Error, c)
	require.Contains(t, detail, "exit status 1")

	failed := Outcome{ExitCode: 1, Stderr: append(stderr[:2:2],
		"gochare: launcher: a PE failed: PE 2 and its buddy PE 0 both failed",
		"[pe 1] level=INFO msg=bye")}
	c, d, detail = Classify(failed, "a069cb66a5a2623b")
	require.Equal(t, Error, c)
	require.Empty(t, d)
	require.Equal(t, "exit status 1: gochare: launcher: a PE failed: PE 2 and its buddy PE 0 both failed", detail)

	silent := Outcome{Stdout: []string{"Run completed:"}, Stderr: stderr}
	c, _, detail = Classify(silent, "a069cb66a5a2623b")
	require.Equal(t, Error, c)
	require.Contains(t, detail, "no JSON result line")
	require.Contains(t, detail, `msg="PE failed"`, "the last error line")

	// A hang is a hang even if a result came; its detail is the last
	// line before the deadline, not a goroutine dump's.
	hung := Outcome{TimedOut: true, Stdout: []string{luleshLine}, Stderr: append(stderr[:2:2], "goroutine 1 [select]:", "main.main()"), StderrAtDeadline: 2, ExitCode: -1}
	c, _, detail = Classify(hung, "a069cb66a5a2623b")
	require.Equal(t, Hang, c)
	require.Contains(t, detail, `msg="PE failed"`)
	require.NotContains(t, detail, "goroutine")
}

func TestLastError(t *testing.T) {
	require.Equal(t, "gochare: launcher: boom", LastError([]string{"level=ERROR msg=x", "gochare: launcher: boom", "level=INFO msg=after"}))
	require.Equal(t, "[pe 2] panic: oops", LastError([]string{"level=ERROR msg=x", "[pe 2] panic: oops", "[pe 2] goroutine 1 [running]:"}))
	require.Equal(t, `level=ERROR msg="PE failed"`, LastError([]string{`level=WARN msg=w`, `level=ERROR msg="PE failed"`, "level=INFO msg=after"}))
	require.Equal(t, `level=WARN msg=w`, LastError([]string{`level=WARN msg=w`, "level=INFO msg=after"}))
	require.Equal(t, "level=INFO msg=after", LastError([]string{"level=INFO msg=after"}))
	require.Empty(t, LastError(nil))
}

func TestLogLines(t *testing.T) {
	pids, ok := StartedPIDs(`level=INFO msg="started PEs" app=stencil3d pes=3 pids="[28029 28031 28032]" coordinator=127.0.0.1:43923`)
	require.True(t, ok)
	require.Equal(t, []int{28029, 28031, 28032}, pids)
	_, ok = StartedPIDs(`[pe 1] level=INFO msg="started PEs" pids="[]"`)
	require.False(t, ok)

	require.True(t, IsFailureNotice(`level=ERROR msg="PE failed" detail="PE 1 (pid 31697 on vm) was killed by signal 9 (killed)" after_begin_ms=2451`))
	rank, ok := FailedPE(`level=ERROR msg="PE failed" detail="PE 12 (pid 31697 on vm) was killed by signal 9 (killed)" after_begin_ms=2451`)
	require.True(t, ok)
	require.Equal(t, 12, rank)
	_, ok = FailedPE(`level=INFO msg="PE 1 failed: restoring 3 tasks on 3 survivors (generation 1)"`)
	require.False(t, ok)
	require.False(t, IsFailureNotice(`[pe 2] level=ERROR msg="PE failed" detail="x"`), "a PE's line is not the launcher's notice")
	require.False(t, IsFailureNotice(`level=INFO msg="PE 1 failed: restoring 3 tasks on 3 survivors (generation 1)"`))
	require.True(t, IsEarlyFailureNotice(`level=WARN msg="PE failed before it joined the job; started again" detail="PE 0 (pid 19279 on vm) did not join" pid=19301 attempt=1`))
	require.True(t, IsEarlyFailureNotice(`level=ERROR msg="PE failed before the job began; its tasks will be created on the other PEs" detail="PE 2"`))
	require.False(t, IsFailureNotice(`level=WARN msg="PE failed before it joined the job; started again" detail="x"`), "no recovery follows an early failure")
	require.False(t, IsEarlyFailureNotice(`level=ERROR msg="PE failed" detail="PE 1 (pid 31697 on vm) was killed by signal 9 (killed)"`))
	late := `level=WARN msg="PE failed after the job's exit was requested; the job ends as decided" pe=2 detail="was killed by signal 9 (killed)"`
	rank, ok = LateFailure(late)
	require.True(t, ok)
	require.Equal(t, 2, rank)
	require.False(t, IsFailureNotice(late), "no recovery follows a failure after the exit")
	require.False(t, IsEarlyFailureNotice(late))
	_, ok = LateFailure(`level=ERROR msg="PE failed" detail="PE 1"`)
	require.False(t, ok)

	rank, ok = SelfKill(`[pe 1] level=WARN msg="failure injection: killing this PE" pe=1 step=29`)
	require.True(t, ok)
	require.Equal(t, 1, rank)
	_, ok = SelfKill(`level=INFO msg="injected failure: SIGKILL" pe=1`)
	require.False(t, ok)

	require.True(t, IsJobBegin(`level=INFO msg="all PEs ready; job begins" pes=3 ft=partialdet`))
	require.False(t, IsJobBegin(`[pe 0] level=INFO msg="all PEs ready; job begins"`))
}

// A kill whose PE the launcher had already reaped counts as missed
// because the job ended first when the launcher exited soon after and
// announced no failure of that PE; otherwise it says the process was
// gone. A failure of another PE just before the end (a recovery that
// finished as the job did) does not make it gone.
func TestReapedPEBeforeTheKill(t *testing.T) {
	exited := time.Now()
	f := Failure{PE: 2, Signal: SigKill, Fraction: 0.84}
	for _, tc := range []struct {
		name      string
		before    time.Duration
		announced []int
		want      string
	}{
		{"at the end", 50 * time.Millisecond, nil, "the job ended first (its PE had exited, and the launcher 50ms after)"},
		{"long before the end", 3 * endGrace, nil, "the process is gone (reaped)"},
		{"with its failure announced", 50 * time.Millisecond, []int{2}, "the process is gone (reaped)"},
		{"with another PE's failure announced", 50 * time.Millisecond, []int{1}, "the job ended first (its PE had exited, and the launcher 50ms after)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &jobRun{res: &jobResult{}, announced: tc.announced}
			j.res.FailureNotices = len(tc.announced)
			j.gone = []signalled{{f, exited.Add(-tc.before)}}
			j.endedFirst(exited)
			require.Equal(t, []string{f.String() + ": " + tc.want}, j.res.Missed)
		})
	}
}

func TestLoggerLines(t *testing.T) {
	pids, ok := LoggerPIDs(`level=INFO msg="started loggers" loggers=1 pids=[28249]`)
	require.True(t, ok)
	require.Equal(t, []int{28249}, pids)
	pids, ok = LoggerPIDs(`level=INFO msg="started loggers" loggers=2 pids="[28249 28250]"`)
	require.True(t, ok)
	require.Equal(t, []int{28249, 28250}, pids)
	_, ok = LoggerPIDs(`[pe 0] level=INFO msg="started loggers" loggers=1 pids=[1]`)
	require.False(t, ok, "only the launcher's own line")
	_, ok = StartedPIDs(`level=INFO msg="started loggers" loggers=1 pids=[28249]`)
	require.False(t, ok, "a logger is not a PE")

	require.True(t, IsLoggerFailureNotice(`level=ERROR msg="logger failed; the job goes on" detail="logger 1 (pid 7 on vm) was killed by signal 9 (killed)" loggers_left=1`))
	require.False(t, IsFailureNotice(`level=ERROR msg="logger failed; the job goes on" detail="logger 1"`))
	require.True(t, IsLateLoggerFailure(`level=WARN msg="logger failed after the job's end was decided" detail="logger 0"`))
	require.True(t, IsLateLoggerFailure(`level=WARN msg="logger failed after the job's end" logger=0 detail="x"`))
	require.False(t, IsLoggerFailureNotice(`level=WARN msg="logger failed after the job's end was decided" detail="logger 0"`))

	peak, ok := LogPeakBytes([]string{
		`level=INFO msg="PE stats" pe=0 log_peak_bytes=256986`,
		`level=INFO msg="job stats" ft=fulldet stats_from_pes=3 handled=11776 log_bytes=2080296 largest_log_peak_bytes=267714 restored_tasks=0`,
	})
	require.True(t, ok)
	require.Equal(t, int64(267714), peak)
	_, ok = LogPeakBytes([]string{`level=INFO msg="PE stats" pe=0 log_peak_bytes=256986`})
	require.False(t, ok)
}

// TestDesignedError: the errors README documents are designed errors when
// the run's failures can lead to them, and only then.
func TestDesignedError(t *testing.T) {
	logger := Failure{PE: 0, Logger: true, Signal: SigKill, Trigger: AtTime}
	pe := func(p int) Failure { return Failure{PE: p, Signal: SigKill, Trigger: AtStep, Step: 3} }
	quota := Run{Setup: LoggersQuota, Loggers: 1, QuotaFraction: 0.5}
	withFailures := func(r Run, fs ...Failure) Run { r.Failures = fs; return r }
	for _, c := range []struct {
		detail string
		run    Run
		want   string
	}{
		{"exit status 1: gochare: launcher: migrate: unrecoverable from memory: PE 0 and its buddy PE 1 both failed", withFailures(Run{}, pe(0), pe(1)), "both copies of a checkpoint lost, no disk checkpoint"},
		{"exit status 1: gochare: launcher: migrate: unrecoverable from memory: PE 0 and its buddy PE 1 both failed", withFailures(Run{}, pe(0)), ""},
		{"exit status 1: gochare: PE 2: logging: the sender log reached its quota and no logger is left to dump to: PE 2 holds 9 bytes of 8", withFailures(quota, logger), "a full log and no logger left"},
		{"exit status 1: gochare: PE 2: logging: the sender log reached its quota and no logger is left to dump to", withFailures(Run{Setup: LoggersQuota, Loggers: 2}, logger), ""},
		{"exit status 1: gochare: job: logged messages dumped to a failed logger may be needed: PE 1 failed after logger(s) [0] failed", withFailures(quota, logger, pe(1)), "dumped log entries lost with a logger"},
		{"exit status 1: gochare: logging: log entries needed by a recovery were held by a failed logger: entry 4", withFailures(quota, logger, pe(1)), "dumped log entries lost with a logger"},
		{"exit status 1: gochare: job: logged messages dumped to a failed logger may be needed", withFailures(quota, logger), ""},
		{"exit status 1: gochare: logging: a PE and an event logger failed in the same checkpoint period", withFailures(Run{Setup: LoggersEvent, Loggers: 1}, logger, pe(2)), "event log lost with a logger"},
		{"exit status 1: gochare: logging: a message is larger than the sender log's quota: 900 bytes, quota 800", quota, "a message larger than the quota"},
		{"exit status 1: gochare: logging: a message is larger than the sender log's quota", Run{Setup: LoggersEvent, Loggers: 1}, ""},
		{"exit status 1: gochare: launcher: the job made no progress for 60s", withFailures(quota, logger, pe(1)), ""},
	} {
		require.Equal(t, c.want, DesignedError(c.detail, c.run, 0, 0), c.detail)
	}
	// Failures the launcher announced count as well as planned ones: two
	// PEs declared dead by their heartbeats (a tuned bound, under load).
	unrecoverable := "exit status 1: gochare: launcher: a PE failed: PE 4 (pid 6234 on vm) missed heartbeats: silent for 1.008s (bound 1s); killed with SIGKILL: migrate: unrecoverable from memory: PE 4 failed while it gave PE 0 the checkpoint of task c1[40], whose other copy was on failed PE 3"
	stopped := withFailures(Run{Setup: LoggersEvent, Loggers: 1, HeartbeatTimeout: time.Second}, Failure{PE: 0, Logger: true, Signal: SigStop, Trigger: AtTime})
	require.Empty(t, DesignedError(unrecoverable, stopped, 0, 1))
	require.Equal(t, "both copies of a checkpoint lost, no disk checkpoint", DesignedError(unrecoverable, stopped, 2, 1))
	require.Equal(t, "a full log and no logger left", DesignedError("logging: the sender log reached its quota and no logger is left to dump to", Run{Setup: LoggersQuota, Loggers: 2}, 0, 2))
}

func TestLoggerKilledAtEnd(t *testing.T) {
	n, ok := LoggerKilledAtEnd(`level=WARN msg="logger did not end after the job's end; killed" logger=1`)
	require.True(t, ok)
	require.Equal(t, 1, n)
	_, ok = LoggerKilledAtEnd(`[pe 0] level=WARN msg="logger did not end after the job's end; killed" logger=1`)
	require.False(t, ok)
	require.False(t, IsLateLoggerFailure(`level=WARN msg="logger did not end after the job's end; killed" logger=1`))
}
