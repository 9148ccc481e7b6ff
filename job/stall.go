package job

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Stall detection. The driver calls CheckStall at
// a fixed period (a quarter of the stall timeout); each call asks the PEs
// how many handlers they have run. Progress is a PE reporting more
// handlers than before, or the coordinator moving a checkpoint, a
// recovery or a migration forward. After StallChecks calls without
// progress, or when the job is quiescent before a task called Exit, the
// coordinator asks every PE for a diagnosis (what its tasks wait for, and
// from which PE) and stops the job with an error that holds the reports:
// a job never hangs silently.

// ErrStalled reports a job that made no progress for the stall timeout.
var ErrStalled = errors.New("job: stalled: no progress")

// ErrQuiescentWithoutExit reports a job in which nothing is left to do
// although nobody called Exit or asked for quiescence detection.
var ErrQuiescentWithoutExit = errors.New("job: quiescent but no task called Exit (a message that never comes?)")

// StallChecks is the number of CheckStall periods without progress after
// which a job is stalled.
const StallChecks = 4

// DefaultStallTimeout is how long a job may make no progress (no handler
// run, no checkpoint or recovery step) before it stops with a diagnosis:
// far above a step of any configuration we run, which takes seconds at
// most.
const DefaultStallTimeout = 60 * time.Second

// diagnosis is a diagnosis under way: the error the job will stop with,
// and the PEs' reports as they come.
type diagnosis struct {
	reason  error
	want    []bool
	reports map[int]string
	// checks counts CheckStall calls since it began: a PE that does not
	// answer within two is reported as such.
	checks int
}

// noteProgress records that the job moved forward.
func (c *Coordinator) noteProgress() { c.activity++ }

// CheckStall is called every window (a quarter of the stall timeout): it
// asks the live PEs for their handler counts and, after StallChecks
// windows without progress, starts a diagnosis; busy, if set, names what
// a PE is running when it does not answer (see PE.Busy).
func (c *Coordinator) CheckStall(window time.Duration, busy func(pe int) string) []Command {
	if c.done || c.phase == phaseStarting {
		return nil
	}
	c.busy = busy
	if d := c.diagnosing; d != nil {
		d.checks++
		if d.checks >= 2 {
			return c.finishDiagnosis()
		}
		return nil
	}
	if c.activity != c.lastActivity {
		c.lastActivity, c.quietChecks = c.activity, 0
	} else {
		c.quietChecks++
	}
	if c.quietChecks >= StallChecks {
		return c.diagnose(fmt.Errorf("%w for %v (--stall-timeout): no handler ran and no checkpoint or recovery moved on; %s",
			ErrStalled, time.Duration(StallChecks)*window, c.describePhase()))
	}
	return []Command{toEvery(ReportProgress{})}
}

// OnProgress takes a PE's handler count.
func (c *Coordinator) OnProgress(pe int, delivered uint64) {
	if pe < 0 || pe >= len(c.delivered) || !c.live[pe] {
		return
	}
	if delivered != c.delivered[pe] {
		c.delivered[pe] = delivered
		c.noteProgress()
	}
}

// diagnose asks every live PE what its tasks wait for; the job stops with
// reason and the reports once all have answered.
func (c *Coordinator) diagnose(reason error) []Command {
	if c.done || c.diagnosing != nil {
		return nil
	}
	c.diagnosing = &diagnosis{reason: reason, want: slices.Clone(c.live), reports: map[int]string{}}
	c.note("diagnosing: %v", firstLine(reason.Error()))
	return []Command{toEvery(Diagnose{})}
}

// OnDiagnosis takes a PE's report.
func (c *Coordinator) OnDiagnosis(pe int, report string) []Command {
	d := c.diagnosing
	if d == nil || pe < 0 || pe >= len(d.want) || !d.want[pe] {
		return nil
	}
	d.want[pe] = false
	d.reports[pe] = report
	if slices.Contains(d.want, true) {
		return nil
	}
	return c.finishDiagnosis()
}

// finishDiagnosis stops the job with the diagnosis's reason and reports.
func (c *Coordinator) finishDiagnosis() []Command {
	d := c.diagnosing
	var b strings.Builder
	b.WriteString(d.reason.Error())
	for pe := range d.want {
		if report, ok := d.reports[pe]; ok {
			b.WriteString("\n" + report)
			continue
		}
		if !d.want[pe] {
			continue // not live when the diagnosis began
		}
		line := fmt.Sprintf("PE %d did not answer", pe)
		if c.busy != nil {
			if what := c.busy(pe); what != "" {
				line += ": it is running " + what + " (a handler that does not return?)"
			}
		}
		b.WriteString("\n" + line)
	}
	return c.finish(1, &diagnosedError{reason: d.reason, text: b.String()})
}

// diagnosedError is a job's end with the PEs' reports.
type diagnosedError struct {
	reason error
	text   string
}

func (e *diagnosedError) Error() string { return e.text }
func (e *diagnosedError) Unwrap() error { return e.reason }

// describePhase says what the coordinator waits for.
func (c *Coordinator) describePhase() string {
	pending := func(flags []bool, ok func(int) bool) []int {
		var ps []int
		for p, live := range c.live {
			if live && p < len(flags) && ok(p) {
				ps = append(ps, p)
			}
		}
		return ps
	}
	switch c.phase {
	case phaseCheckpointing:
		return fmt.Sprintf("the coordinator waits for checkpoint %d: staged by PEs %v, buddy copies of PEs %v",
			c.staging, pending(c.staged, func(p int) bool { return !c.staged[p] }), pending(c.stored, func(p int) bool { return !c.stored[p] }))
	case phaseRestoring, phaseRollingBack:
		return fmt.Sprintf("the coordinator waits for recovery %d: restored on PEs %v", c.generation,
			pending(c.pendingRestored, func(p int) bool { return c.pendingRestored[p] }))
	case phaseBalancing:
		return fmt.Sprintf("the coordinator waits for the loads of PEs %v", pending(c.loadsFrom, func(p int) bool { return !c.loadsFrom[p] }))
	case phaseMigrating:
		return fmt.Sprintf("the coordinator waits for the moved tasks to arrive on PEs %v", pending(c.migrated, func(p int) bool { return c.migrated[p] }))
	}
	s := fmt.Sprintf("the job runs (checkpoint %d committed, %d failures so far)", c.committed, c.generation)
	if c.migrating() {
		s += fmt.Sprintf("; the moved tasks have not all arrived on PEs %v", pending(c.migrated, func(p int) bool { return c.migrated[p] }))
	}
	if c.roundOpen {
		s += fmt.Sprintf("; quiescence round %d waits for PEs %v", c.qd.round, c.qd.Waiting())
	}
	return s
}
