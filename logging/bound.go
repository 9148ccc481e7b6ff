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

// MaxFailures is the largest f a job may ask for (Config.Failures): a
// record rides on envelopes until f+1 PEs hold it, so the forward cost
// grows with f; a job expecting more PE failures between two checkpoints
// than that checkpoints more often, or runs an event logger (which has
// no f).
const MaxFailures = 8

// ErrFailureBoundConfig reports a failure bound asked for where none can
// apply or out of its range.
var ErrFailureBoundConfig = errors.New("logging: bad failure bound")

// CheckFailureBound says whether f is a failure bound a job of pes PEs
// running protocol kind (with an event logger if eventLogger) can be
// given (Config.Failures). f must be from 1 to MaxFailures and below pes:
// a record on every PE already survives the failure of all but one, so a
// larger f would ask for more than every PE's copy (the protocol would
// act as with pes-1; the default, DefaultFailures, is clamped that way
// on fewer PEs, see engine.updateBound), and on one PE there is no f. None and an
// event logger have no f: None keeps no record and rolls every task back
// at any failure, and with an event logger a record is stable once a
// logger acknowledges it, whatever the number of PE failures.
func CheckFailureBound(kind Kind, eventLogger bool, pes, f int) error {
	switch {
	case kind == KindNone:
		return fmt.Errorf("%w: checkpoint/restart (None) keeps no record and rolls every task back at any failure", ErrFailureBoundConfig)
	case eventLogger:
		return fmt.Errorf("%w: with an event logger a record is stable once a logger holds it, and any number of PE failures is survived", ErrFailureBoundConfig)
	case f < 1:
		return fmt.Errorf("%w: f=%d, want at least 1", ErrFailureBoundConfig, f)
	case f > MaxFailures:
		return fmt.Errorf("%w: f=%d, at most %d", ErrFailureBoundConfig, f, MaxFailures)
	case pes < 2:
		return fmt.Errorf("%w: on %d PE no other PE can hold a record", ErrFailureBoundConfig, pes)
	case f > pes-1:
		return fmt.Errorf("%w: f=%d on %d PEs, at most %d: a record on every PE already survives all failures but the last PE's", ErrFailureBoundConfig, f, pes, pes-1)
	}
	return nil
}
