package sim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// ErrCheck is wrapped by every broken property Check reports.
var ErrCheck = errors.New("sim: check failed")

// Outcome classifies a run that passed its checks.
type Outcome uint8

func (o Outcome) String() string {
	if o == Unrecoverable {
		return "unrecoverable"
	}
	return "completed"
}

const (
	// Completed: the job ended with the failure-free results.
	Completed Outcome = iota
	// Unrecoverable: the job stopped with the documented error for a
	// failure that lost both copies of a checkpoint, or for a PE failure
	// that needed log entries dumped to a dead logger.
	Unrecoverable
)

// Check checks a run against the failure-free run of the same program
// (clean): the job ended (no hang), with the failure-free results and
// status, and no PE dropped input as malformed; or it stopped with the
// documented error of an unrecoverable case (two PEs or more lost, both
// copies of some checkpoint among them).
func Check(cfg Config, res, clean Result) (Outcome, error) {
	if res.Hung {
		return 0, fmt.Errorf("%w: hang: %v", ErrCheck, res.Err)
	}
	dead := 0
	for _, d := range res.Dead {
		if d {
			dead++
		}
	}
	if len(res.LogLeaks) > 0 {
		return 0, fmt.Errorf("%w: logs outlive a checkpoint: %s", ErrCheck, strings.Join(res.LogLeaks[:min(3, len(res.LogLeaks))], "; "))
	}
	if res.Err != nil {
		// Both copies of a checkpoint lost: the job falls back to the
		// latest complete disk checkpoint if there is one, and stops
		// with ErrNoDiskCheckpoint otherwise.
		if errors.Is(res.Err, migrate.ErrUnrecoverable) && errors.Is(res.Err, job.ErrNoDiskCheckpoint) && dead >= 2 &&
			(!cfg.Disk && cfg.CheckpointDir == "" || strings.Contains(res.Err.Error(), "none is complete yet")) {
			return Unrecoverable, nil
		}
		// A PE failed after a logger that held dumped log entries and
		// before a checkpoint made them useless: the job stops, it does
		// not replay without them.
		if errors.Is(res.Err, job.ErrDumpedEntriesLost) && cfg.Dumping && res.LoggersDead > 0 && dead > 0 {
			return Unrecoverable, nil
		}
		// The same, seen by a survivor that dumped to that logger: it
		// cannot fetch what the restored tasks need back.
		if strings.Contains(res.Err.Error(), logging.ErrLogEntriesLost.Error()) && cfg.LogQuota > 0 && res.LoggersDead > 0 && dead > 0 {
			return Unrecoverable, nil
		}
		// Every logger dead and a PE's log full: the quota cannot hold.
		if strings.Contains(res.Err.Error(), logging.ErrNoLoggerLeft.Error()) && cfg.LogQuota > 0 && res.LoggersDead == cfg.Loggers {
			return Unrecoverable, nil
		}
		// A task restored without the records of an event logger that
		// died since the checkpoint (logging.EventLogLost).
		if strings.Contains(res.Err.Error(), logging.ErrEventLogLost.Error()) && cfg.EventLogger && res.LoggersDead > 0 && dead > 0 {
			return Unrecoverable, nil
		}
		return 0, fmt.Errorf("%w: the job failed (%d PEs dead): %v", ErrCheck, dead, firstLines(res.Err.Error(), 30))
	}
	if res.Status != clean.Status {
		return 0, fmt.Errorf("%w: status %d, failure-free %d", ErrCheck, res.Status, clean.Status)
	}
	got, want := Results(res.Output), Results(clean.Output)
	if !slices.Equal(got, want) {
		return 0, fmt.Errorf("%w: results differ from the failure-free run's:\n got  %q\n want %q", ErrCheck, got, want)
	}
	for r, st := range res.Stats {
		for reason, n := range st.DroppedByReason {
			if !strings.Contains(reason, "no such element") {
				return 0, fmt.Errorf("%w: PE %d dropped %d inputs: %s", ErrCheck, r, n, reason)
			}
		}
	}
	if res.Transport.Malformed > 0 {
		return 0, fmt.Errorf("%w: the transport dropped %d malformed frames", ErrCheck, res.Transport.Malformed)
	}
	if len(res.Misplaced) > 0 {
		return 0, fmt.Errorf("%w: tasks out of place: %s", ErrCheck, strings.Join(res.Misplaced[:min(3, len(res.Misplaced))], "; "))
	}
	// A job ends when its program says so: a task still re-executing
	// what a failure undid may then be behind, or not restored yet at
	// all. Such a task is behind the failure-free run (its final history
	// holds fewer deeds), and only a run in which a PE died has one.
	behind := func(ref migrate.TaskRef) bool {
		got, ok := res.Deeds[ref]
		want := clean.Deeds[ref]
		return dead > 0 && (!ok || got.Sent+got.Handled < want.Sent+want.Handled)
	}
	if !cfg.OrderDependentStates {
		if err := compareStates(res.States, clean.States, behind); err != nil {
			return 0, err
		}
	}
	if len(res.HandledTwice) > 0 {
		return 0, fmt.Errorf("%w: %d messages handled twice: %s", ErrCheck, len(res.HandledTwice), strings.Join(res.HandledTwice[:min(3, len(res.HandledTwice))], "; "))
	}
	var orphans []string
	for _, o := range res.Orphans {
		// A sender behind has not sent again yet what its failed
		// execution had sent (with other contents, it is an orphan
		// all the same).
		if o.Unsent && !isSystemTask(o.Sender) && behind(taskRef(o.Sender)) {
			continue
		}
		orphans = append(orphans, o.String())
	}
	if len(orphans) > 0 {
		return 0, fmt.Errorf("%w: %d orphan messages: %s", ErrCheck, len(orphans), strings.Join(orphans[:min(3, len(orphans))], "; "))
	}
	return Completed, nil
}

// compareStates compares the final states of a run's tasks with the
// failure-free run's, task by task, whatever PE each ended on; a task
// behind may differ, or be on no live PE.
func compareStates(got, want map[migrate.TaskRef][]byte, behind func(migrate.TaskRef) bool) error {
	var diff []string
	for _, ref := range slices.SortedFunc(maps.Keys(want), migrate.CompareTaskRefs) {
		g, ok := got[ref]
		switch {
		case ok && bytes.Equal(g, want[ref]) || behind(ref):
		case !ok:
			diff = append(diff, fmt.Sprintf("task %v is on no live PE", ref))
		default:
			diff = append(diff, fmt.Sprintf("task %v: %d bytes, failure-free %d, first difference at byte %d", ref, len(g), len(want[ref]), firstDiff(g, want[ref])))
		}
	}
	for ref := range got {
		if _, ok := want[ref]; !ok {
			diff = append(diff, fmt.Sprintf("task %v is not of the failure-free run", ref))
		}
	}
	if len(diff) > 0 {
		return fmt.Errorf("%w: %d final task states differ from the failure-free run's: %s", ErrCheck, len(diff), strings.Join(diff[:min(3, len(diff))], "; "))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
