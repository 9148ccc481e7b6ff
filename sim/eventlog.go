package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// simEventLoggers are the job's event loggers (Config.EventLogger): real
// logging.EventLogger state machines behind simulated links. A PE's
// batches reach a logger in order (one stream) after a delay drawn as the
// network's (Config.Net's MinDelay to MaxDelay; see LoggerLink for the
// others); each acknowledgement reaches
// every PE after a delay of its own, and a fetch's answer its PE. A
// LoggerFault kills one (every PE hears of it, scheduler.LoggerLost); a
// PE's failure closes its streams as the coordinator learns of it.
type simEventLoggers struct {
	w    *world
	rng  *rand.Rand
	dead []bool
	logs []*logging.EventLogger
	// last is, per logger and PE, when the PE's last batch reaches it.
	last [][]time.Duration
}

func newSimEventLoggers(w *world) *simEventLoggers {
	n := w.cfg.Loggers
	s := &simEventLoggers{w: w, rng: newRand(w.cfg.Seed, 12), dead: make([]bool, n)}
	for l := range n {
		s.logs = append(s.logs, logging.NewEventLogger(l))
		s.last = append(s.last, make([]time.Duration, w.cfg.PEs))
	}
	return s
}

func (s *simEventLoggers) delay() time.Duration {
	lo, hi := s.w.cfg.Net.MinDelay, max(s.w.cfg.Net.MaxDelay, s.w.cfg.Net.MinDelay+time.Microsecond)
	if s.w.cfg.EventLoggerLink == LoggerInstant {
		return 0
	}
	if s.w.cfg.EventLoggerLink == LoggerSlowAtTimes && s.rng.IntN(10) == 0 {
		hi *= 10
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// kill makes logger l die: what it holds is lost.
func (s *simEventLoggers) kill(l int) {
	if l < 0 || l >= len(s.dead) || s.dead[l] {
		return
	}
	s.dead[l] = true
	s.logs[l] = nil
	for _, p := range s.w.pes {
		(*simNet)(p).Post(scheduler.LoggerLost{Logger: l, Why: errors.New("sim: event logger died")})
	}
}

// peFailed closes PE pe's streams on every live logger.
func (s *simEventLoggers) peFailed(pe int) {
	for l, lg := range s.logs {
		if !s.dead[l] {
			lg.PEsFailed([]logging.PEID{logging.PEID(pe)})
		}
	}
}

// LoggerLink is how the simulated event loggers' links delay what they
// carry.
type LoggerLink uint8

const (
	// LoggerLikeNet draws each delay as the network's, from MinDelay to
	// MaxDelay.
	LoggerLikeNet LoggerLink = iota
	// LoggerSlowAtTimes draws a tenth of them up to ten times MaxDelay:
	// a logger that falls behind now and then (and, its stream being in
	// order, holds back the batches after a slow one).
	LoggerSlowAtTimes
	// LoggerInstant delivers at once: the bound of what a logger can do.
	LoggerInstant
)

// simEventLog is PE p's EventLogSink.
type simEventLog struct {
	s *simEventLoggers
	p *simPE
}

func (e simEventLog) check(l int) {
	if l < 0 || l >= len(e.s.dead) {
		panic(fmt.Sprintf("sim: PE %d logs to event logger %d of %d", e.p.rank, l, len(e.s.dead)))
	}
}

func (e simEventLog) Log(b logging.EventLogBatch) {
	s, p := e.s, e.p
	e.check(b.Logger)
	if s.dead[b.Logger] {
		(*simNet)(p).Post(scheduler.LoggerLost{Logger: b.Logger, Why: errors.New("sim: event logger is dead")})
		return
	}
	b.Determinants, b.Progress = slices.Clone(b.Determinants), slices.Clone(b.Progress)
	w := s.w
	at := max(w.now+s.delay(), s.last[b.Logger][p.rank])
	s.last[b.Logger][p.rank] = at
	w.at(at-w.now, fmt.Sprintf("event logger %d stores PE %d's batch of %d records", b.Logger, p.rank, len(b.Determinants)+len(b.Progress)), func() {
		if s.dead[b.Logger] {
			return
		}
		ack, ok := s.logs[b.Logger].Store(b)
		if !ok {
			return
		}
		for _, q := range w.pes {
			w.at(s.delay(), fmt.Sprintf("event logger %d's ack of PE %d up to %d reaches PE %d", ack.Logger, ack.Creator, ack.UpTo, q.rank), func() {
				if !s.dead[ack.Logger] {
					(*simNet)(q).Post(scheduler.EventLogAcked{Ack: ack})
				}
			})
		}
	})
}

func (e simEventLog) Fetch(f logging.EventLogFetch) {
	s, p := e.s, e.p
	e.check(f.Logger)
	f.Tasks = slices.Clone(f.Tasks)
	s.w.at(s.delay(), fmt.Sprintf("event logger %d answers PE %d's fetch for %d tasks", f.Logger, p.rank, len(f.Tasks)), func() {
		if s.dead[f.Logger] {
			(*simNet)(p).Post(scheduler.LoggerLost{Logger: f.Logger, Why: errors.New("sim: event logger is dead")})
			return
		}
		(*simNet)(p).Post(scheduler.EventLogAnswer{Logger: f.Logger, Envelopes: s.logs[f.Logger].Fetch(f)})
	})
}
