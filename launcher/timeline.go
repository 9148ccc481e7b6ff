package launcher

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
)

// timeline follows the milestones of a job for the launcher's log, its
// trace and the end-of-job report of each recovery: when the job began,
// when each checkpoint was taken and committed, when a PE failed, when
// its recovery restored the tasks, regained the progress at the failure
// and reached the next checkpoint. It decides nothing: the job's
// coordinator says what happened (coord.Started, coord.Restored,
// coord.ProgressRegained, and the events the PEs are sent), the launcher
// says when.
type timeline struct {
	log      *slog.Logger
	trace    *tracer
	pes      int
	protocol logging.Kind
	// failures is the job's f if given (--failures), else 0.
	failures int

	// began is when the job began (or resumed, restarted from disk);
	// checkpointAt when the last TakeCheckpoint went out; failedAt when
	// the last PE failed; restoredAt when the tasks of the last recovery
	// were restored, until the next checkpoint commits; watchAt when the
	// PEs were asked to watch for the progress at the failure.
	began, checkpointAt, failedAt, restoredAt, watchAt time.Time
	// recovery describes each recovery, for the end-of-job report.
	recovery []recoveryReport
}

// started notes that the job began or, resumed, that a job restarted from
// disk resumed.
func (t *timeline) started(now time.Time, resumed bool) {
	t.began = now
	attrs := []any{"pes", t.pes, "ft", protocolName(t.protocol)}
	if t.failures > 0 {
		attrs = append(attrs, "failures", t.failures)
	}
	if resumed {
		t.trace.instant("job resumes", "job")
		t.log.Info("all PEs ready; job resumes from the disk checkpoint", attrs...)
		return
	}
	t.trace.instant("job begins", "job")
	t.log.Info("all PEs ready; job begins", attrs...)
}

// failed notes that PE rank was declared dead (detail says how).
func (t *timeline) failed(now time.Time, rank int, detail string) {
	t.failedAt = now
	t.trace.instant(fmt.Sprintf("PE %d failed", rank), "recovery")
	if t.began.IsZero() {
		t.log.Error("PE failed", "detail", detail)
		return
	}
	t.log.Error("PE failed", "detail", detail, "after_begin_ms", now.Sub(t.began).Milliseconds())
}

// checkpointTaken notes that the PEs were asked to stage a checkpoint.
func (t *timeline) checkpointTaken(now time.Time) { t.checkpointAt = now }

// committed notes that checkpoint epoch committed. The first commit after
// a recovery restored the tasks ends the recovery's replay and catch-up.
func (t *timeline) committed(now time.Time, epoch uint64) {
	t.log.Info("checkpoint committed", "epoch", epoch, "ms", now.Sub(t.checkpointAt).Milliseconds())
	t.trace.span(fmt.Sprintf("checkpoint %d", epoch), "checkpoint", t.checkpointAt)
	if t.restoredAt.IsZero() {
		return
	}
	t.trace.span("replay and catch-up", "recovery", t.restoredAt)
	r := t.current()
	r.checkpointed, r.toCheckpoint = true, now.Sub(t.restoredAt)
	t.log.Info("recovery report: first checkpoint after the failure",
		"replay_and_catch_up_ms", r.toCheckpoint.Milliseconds(), "since_failure_ms", now.Sub(t.failedAt).Milliseconds())
	t.restoredAt = time.Time{}
}

// restored notes that the last recovery put the tasks back.
func (t *timeline) restored(now time.Time, r coord.Restored) {
	if r.RolledBack {
		t.log.Info("recovery: every task rolled back to the checkpoint", "restore_ms", now.Sub(t.failedAt).Milliseconds())
		t.trace.span("rollback", "recovery", t.failedAt)
	} else {
		t.trace.span("restore", "recovery", t.failedAt)
		t.log.Info("recovery: tasks restored, replay starts", "failed", fmt.Sprint(r.Failed), "restore_ms", now.Sub(t.failedAt).Milliseconds(), "relocated", r.Relocated)
	}
	t.restoredAt = now
	rep := t.current()
	rep.restored, rep.restore = true, now.Sub(t.failedAt)
}

// watching notes that the PEs were asked to tell when the progress at the
// failure is regained.
func (t *timeline) watching(now time.Time) { t.watchAt = now }

// regained notes that the job regained the progress it had at the last
// failure.
func (t *timeline) regained(now time.Time, ev coord.ProgressRegained) {
	t.trace.span("catch-up to the failure point", "recovery", t.watchAt)
	r := t.current()
	r.regained, r.step, r.catchUp, r.sinceFailure = true, ev.Step, now.Sub(t.watchAt), now.Sub(t.failedAt)
	t.log.Info("recovery report: progress at the failure regained", "step", ev.Step,
		"catch_up_ms", r.catchUp.Milliseconds(), "since_failure_ms", r.sinceFailure.Milliseconds())
}

// migrating notes a load balancing round that moves tasks.
func (t *timeline) migrating(moves int) {
	t.trace.instant(fmt.Sprintf("load balancing: %d moves", moves), "balance")
}

// report logs the summary of every recovery.
func (t *timeline) report() {
	for i, r := range t.recovery {
		t.log.Info(fmt.Sprintf("recovery %d of %d: %s", i+1, len(t.recovery), r))
	}
}

// current returns the report of the recovery from the last failure,
// started if need be.
func (t *timeline) current() *recoveryReport {
	if n := len(t.recovery); n > 0 && t.recovery[n-1].failedAt.Equal(t.failedAt) {
		return &t.recovery[n-1]
	}
	t.recovery = append(t.recovery, recoveryReport{failedAt: t.failedAt})
	return &t.recovery[len(t.recovery)-1]
}

// recoveryReport is what the launcher measured of one recovery, for the
// end-of-job summary.
type recoveryReport struct {
	failedAt time.Time
	// restore: failure → restored tasks told to go on (or every task
	// rolled back).
	restored bool
	restore  time.Duration
	// catchUp: from then until every task offered again the step the job
	// had reached at the failure (step); sinceFailure: failure → then.
	regained              bool
	step                  uint64
	catchUp, sinceFailure time.Duration
	// toCheckpoint: from the restore until the first checkpoint after the
	// failure committed.
	checkpointed bool
	toCheckpoint time.Duration
}

func (r recoveryReport) String() string {
	var parts []string
	if r.restored {
		parts = append(parts, fmt.Sprintf("restore %d ms", r.restore.Milliseconds()))
	}
	if r.regained {
		parts = append(parts, fmt.Sprintf("catch-up to the failure point (step %d) %d ms, failure → progress regained %d ms",
			r.step, r.catchUp.Milliseconds(), r.sinceFailure.Milliseconds()))
	} else {
		parts = append(parts, "progress at the failure not regained (the job ended or another PE failed first)")
	}
	if r.checkpointed {
		parts = append(parts, fmt.Sprintf("replay and catch-up to the next checkpoint %d ms", r.toCheckpoint.Milliseconds()))
	}
	return strings.Join(parts, ", ")
}
