package scheduler

import (
	"errors"
	"fmt"

	"github.com/gochare/gochare/logging"
)

// An event logger (Config.EventLogger, logging/eventlog.go): the job's
// loggers store the determinants and progress records the PEs create and
// make them stable by their acknowledgements. The PE sends the protocol's
// record batches (Ready.EventLog) through Config.EventLog at every
// transmit, before Advance, and its fetches for restored tasks
// (Ready.Fetches); the loggers' acknowledgements (to every PE) and
// answers come back as posted events (EventLogAcked, EventLogAnswer), a
// logger's death as LoggerLost. While a fetch is unanswered the PE does
// not answer a quiescence probe: a restored task is waiting for it.

// EventLogSink carries a PE's record batches and fetches to the event
// loggers (launcher/eventlogstream.go over sockets). Its methods are
// called on the PE goroutine, must not block for long, and must not keep
// the batch's slices (they are the protocol's). The sink posts each
// acknowledgement with Net.Post(EventLogAcked{...}), each fetch's answer
// with Net.Post(EventLogAnswer{...}) and a lost logger with
// Net.Post(LoggerLost{...}) (a fetch to it then counts as answered: post
// EventLogAnswer with no envelope).
type EventLogSink interface {
	Log(b logging.EventLogBatch)
	Fetch(f logging.EventLogFetch)
}

type (
	// EventLogAcked is a logger's acknowledgement.
	EventLogAcked struct{ Ack logging.EventLogAck }
	// EventLogAnswer is a logger's answer to a fetch: one recovery
	// envelope per task (none if the logger died first).
	EventLogAnswer struct {
		Logger    int
		Envelopes []logging.Envelope
	}
)

// ErrEventLogger reports an event logger configured wrong.
var ErrEventLogger = errors.New("scheduler: event logger")

func checkEventLog(cfg Config) error {
	if !cfg.EventLogger {
		return nil
	}
	if err := logging.CheckEventLogger(cfg.Protocol, cfg.Loggers); err != nil {
		return fmt.Errorf("%w: %w", ErrEventLogger, err)
	}
	if cfg.EventLog == nil {
		return fmt.Errorf("%w: no EventLogSink", ErrEventLogger)
	}
	return nil
}

// eventLogging is the protocol's event logger side, nil without one.
func (pe *PE) eventLogging() logging.EventLogging {
	if !pe.cfg.EventLogger {
		return nil
	}
	el, _ := pe.proto.(logging.EventLogging)
	return el
}

// sendEventLog sends the Ready's record batches and fetches.
func (pe *PE) sendEventLog(r logging.Ready) {
	if !pe.cfg.EventLogger {
		return
	}
	for _, b := range r.EventLog {
		pe.cfg.EventLog.Log(b)
	}
	for _, f := range r.Fetches {
		pe.fetchesOut++
		pe.cfg.EventLog.Fetch(f)
	}
}

func (pe *PE) eventLogAcked(ev EventLogAcked) {
	if el := pe.eventLogging(); el != nil {
		el.EventLogAcked(ev.Ack)
	}
}

// eventLogAnswer takes a logger's recovery envelopes for restored tasks.
func (pe *PE) eventLogAnswer(ev EventLogAnswer) {
	if !pe.cfg.EventLogger {
		return
	}
	pe.fetchesOut = max(pe.fetchesOut-1, 0)
	for _, env := range ev.Envelopes {
		if int(env.To) != pe.cfg.Rank || env.Kind != logging.EnvelopeRecovery {
			continue
		}
		pe.proto.Arrive(env)
		pe.markRunnable(pe.element(env.Task))
	}
	pe.schedule()
}

// eventLoggerLost tells the protocol (and a rollback's new one, which
// eventLogProtocol tells again) that a logger is gone.
func (pe *PE) eventLoggerLost(ev LoggerLost) {
	if !pe.cfg.EventLogger || ev.Logger < 0 || ev.Logger >= pe.cfg.Loggers {
		return
	}
	if !pe.deadLoggers[ev.Logger] {
		pe.deadLoggers[ev.Logger] = true
		pe.log.Warn("event logger lost: its records ride on messages again until the next checkpoint", "logger", ev.Logger, "why", ev.Why)
	}
	if el := pe.eventLogging(); el != nil {
		el.EventLoggerFailed(ev.Logger)
		if !pe.checkEventLogLost() {
			return
		}
	}
	pe.schedule()
}

// checkEventLogLost halts the PE when a task restored here lacks the
// records of a dead logger (logging.ErrEventLogLost); false: it halted.
func (pe *PE) checkEventLogLost() bool {
	el := pe.eventLogging()
	if el == nil {
		return true
	}
	if err := el.EventLogLost(); err != nil {
		pe.halt(err)
		return false
	}
	return true
}

// eventLogProtocol tells a new protocol of the loggers known dead.
func (pe *PE) eventLogProtocol() {
	el := pe.eventLogging()
	if el == nil {
		return
	}
	pe.fetchesOut = 0
	for l, dead := range pe.deadLoggers {
		if dead {
			el.EventLoggerFailed(l)
		}
	}
}
