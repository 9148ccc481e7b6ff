package logging

import (
	"errors"
	"fmt"
)

// ErrTooManyFailures is what CheckFailures reports when a failure may have
// lost a determinant or progress record that surviving PEs depend on.
var ErrTooManyFailures = errors.New("logging: more PE failures since the last checkpoint than the protocol survives")

// CheckFailures says whether a job whose PEs run protocol kind with cfg
// can recover correctly when failed PEs, the latest included, have failed
// since the last checkpoint every PE committed: at failure after failure,
// as long as it returns nil. The job's coordinator calls it on every
// failure and stops the job with the error it returns.
//
// Why the count since the checkpoint: a record another PE may depend on
// without holding it was stable, i.e. stored on f+1 PEs (or on every PE
// then alive), and a checkpoint discards every record. With at most f
// failures since the checkpoint one of those PEs is alive, whether the
// failures came at the same time or one during another's recovery. With
// more, each failure may be the one that takes the last copy: a task
// restored on a survivor could then replay a reception differently from
// the first execution that other tasks saw, a wrong result nothing would
// show. With an event logger (Config.EventLogger) a record is stable on
// a logger, and one that is not rides on until it is: any number of
// failures is recoverable (but not a PE failure in the same period as a
// logger failure: eventlog.go). (A failure that leaves no copy of a task's checkpoint is the
// checkpoint store's to report.) None rolls every task back to the
// checkpoint and keeps no record: any number of failures is recoverable.
func CheckFailures(kind Kind, cfg Config, failed int) error {
	if kind == KindNone || cfg.EventLogger || failed <= cfg.failures() {
		return nil
	}
	return fmt.Errorf("%w: %d PEs failed since the last checkpoint, %v keeps each record on %d PEs (f=%d)",
		ErrTooManyFailures, failed, kind, cfg.failures()+1, cfg.failures())
}
