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
// (Ready.Fetches); the loggers' acknowledgements (of every PE's records)
// and answers come back as posted events (EventLogAcked,
// EventLogAnswer), a logger's death as LoggerLost. While a fetch is unanswered the PE does
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

// EventLogAckSource is an EventLogSink that keeps the acknowledgements
// it receives for the PE to take between two handlers and before each
// transmit (TakeAcks, called on the PE goroutine, cheap when there is
// none; it may read the sink's connections itself), rather than posting
// each: an acknowledgement taken in the middle of a slice of handlers
// spares the rest of the slice's envelopes its records. It posts
// EventLogAcksPending when acknowledgements wait and the PE may be idle.
type EventLogAckSource interface {
	EventLogSink
	TakeAcks(into []logging.EventLogAck) []logging.EventLogAck
}

// EventLogAcksPending tells the PE that its EventLogAckSource holds
// acknowledgements.
type EventLogAcksPending struct{}

// eventLogEvery is how many handlers a PE runs between two sends of its
// new records to its logger within a slice (besides the send at every
// transmit). Each send costs a write, the logger's wake-up, read, store
// and reply, and the PE's read of the reply: about 0.1 ms of CPU in all
// on LeanMD (a determinant per handler), where 32 sent a quarter of 8's
// batches for the same piggyback (docs/benchmarks.md, "elfwd"), and 64
// 0.6 of 32's for a piggyback of 4-7 % of FullDet's without the event
// logger instead of 3-5 % ("elcost"). 128 sent 0.7 of 64's batches
// once the PE read the replies itself between handlers, for the
// piggyback 64 gave before at a load of 10, but at a load of 15-30 on
// two cores (one thread per PE) the piggyback of some runs rose to
// 10-30 % of FullDet's without the event logger ("el2").
const eventLogEvery = 64

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

// eventLogBetweenHandlers takes the acknowledgements come in since the
// last handler and, every eventLogEvery handlers, sends the records made
// since to the logger at once: the sooner a record is acknowledged, the
// fewer envelopes carry it.
func (pe *PE) eventLogBetweenHandlers() {
	if !pe.cfg.EventLogger {
		return
	}
	pe.takeEventLogAcks()
	pe.eventLogHandlers++
	if pe.eventLogHandlers < eventLogEvery {
		return
	}
	pe.eventLogHandlers = 0
	el := pe.eventLogging()
	if el == nil {
		return
	}
	for _, b := range el.TakeEventLog() {
		pe.cfg.EventLog.Log(b)
	}
}

// takeEventLogAcks hands the protocol the acknowledgements the sink
// holds.
func (pe *PE) takeEventLogAcks() {
	if !pe.cfg.EventLogger {
		return
	}
	src, ok := pe.cfg.EventLog.(EventLogAckSource)
	if !ok {
		return
	}
	pe.ackBuf = src.TakeAcks(pe.ackBuf[:0])
	if len(pe.ackBuf) == 0 {
		return
	}
	if el := pe.eventLogging(); el != nil {
		for _, a := range pe.ackBuf {
			el.EventLogAcked(a)
		}
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
