package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
)

// Memory-bounded sender logs (Config.LogQuota): the protocol's log keeps
// at most the quota in memory by dumping its oldest entries to the job's
// loggers (logging.LogQuota decides; this file carries it out). The PE
// sends each dump through Config.Dumps between two handlers and after
// every transmit, and the acknowledgements and the loggers' deaths come
// back as posted events (DumpAcked, LoggerLost), or the
// acknowledgements are taken from a DumpAckSource after each slice. Before each handler the PE
// asks the protocol for room: when a handler's sends could take the log
// past the quota, the PE runs no handler until a logger acknowledges a
// dump or dies (it is not idle meanwhile: a probe gets no answer while
// work waits), and the time it waits is counted (Stats.LogBlocked). With
// no live logger left and the log full, the PE stops the job with
// logging.ErrNoLoggerLeft. A failure notice whose recovery resends
// entries dumped to loggers fetches them back first (fetchDumped: the PE
// goroutine waits for the loggers' answers, which end with the logger's
// connection if it dies), so that the resend takes them in log order
// from the loggers and from memory; a needed run on a dead logger stops
// the job (logging.ErrLogEntriesLost).

// DumpSink carries a PE's dumps to the loggers (launcher/dumpstream.go
// over sockets). Dump is called on the PE goroutine and must not block
// for long; the sink reports each logger's cumulative acknowledgement
// with Net.Post(DumpAcked{...}) and a logger it lost with
// Net.Post(LoggerLost{...}).
type DumpSink interface {
	Dump(b logging.DumpBatch)
	// Fetch returns the entries [from, to) of period epoch that logger
	// stores for this PE (encoded as in a DumpBatch). It waits for the
	// logger's answer, and fails if the logger cannot give it.
	Fetch(logger int, epoch uint64, from, to int) ([]byte, error)
}

// DumpPicker is a DumpSink that fetches only some entries of a run (the
// launcher's: its logger picks them out with logging.PickDumped): a
// recovery needs about a quarter of what LeanMD's survivors dumped.
// Without it the PE fetches whole runs and picks the entries itself.
type DumpPicker interface {
	// FetchSome returns entries need (sorted, within [from, to)) of
	// period epoch that logger stores for this PE, one after the other,
	// encoded as in a DumpBatch.
	FetchSome(logger int, epoch uint64, from, to int, need []int) ([]byte, error)
}

// DumpBatcher is a DumpSink that takes the dumps decided together at
// once (the launcher's: in one vectored write per logger, so that the
// logger wakes once for them and acknowledges them once, where a write
// per dump woke it per dump).
type DumpBatcher interface {
	DumpAll(bs []logging.DumpBatch)
}

// DumpBufferer is a DumpSink that gives the memory a dump to logger is
// encoded into (the launcher's: a ring shared with a logger on the same
// host, which copies the dump out of it; nil where it has none): the
// dump is then neither copied again nor written through a socket.
type DumpBufferer interface {
	DumpBuffer(logger, size int) []byte
}

// LogSharer is a DumpSink that shares memory with the loggers on its
// host (the launcher's): the sender log cuts its chunks from it
// (logging.Config.LogShared), and a dump to a logger that maps it
// (DumpPlaced) names where the payloads lie in it instead of carrying
// them (logging.LogQuota.TakeDumpsPlaced).
type LogSharer interface {
	SharedLogMemory() logging.SharedLogMemory
	DumpPlaced(logger int) bool
}

// DumpAckSource is a DumpSink that keeps the acknowledgements it
// receives for the PE to take between two slices of handlers
// (TakeDumpAcks, called on the PE goroutine after each slice's transmit;
// it may read the sink's connections itself, without waiting), rather
// than posting each: with one thread per PE a goroutine that reads them
// runs only when the PE waits. It posts DumpAcksPending when
// acknowledgements wait and the PE may be idle or blocked.
type DumpAckSource interface {
	DumpSink
	TakeDumpAcks(into []DumpAcked) []DumpAcked
}

// DumpAcksPending tells the PE that its DumpAckSource holds
// acknowledgements.
type DumpAcksPending struct{}

type (
	// DumpAcked is logger Logger's acknowledgement: it stores the entries
	// of period Epoch below To.
	DumpAcked struct {
		Logger int
		Epoch  uint64
		To     int
	}
	// LoggerLost tells the PE that logger Logger is gone (Why).
	LoggerLost struct {
		Logger int
		Why    error
	}
	// DumpSent gives back the Payload of a dump the sink has sent (or
	// dropped): nothing refers to it any more, and the protocol fills it
	// again (logging.LogQuota.RecycleDump). Optional for a DumpSink.
	DumpSent struct{ Payload []byte }
)

// ErrLogQuota reports a log quota configured wrong.
var ErrLogQuota = errors.New("scheduler: log quota")

// checkQuota checks the quota's part of cfg.
func checkQuota(cfg Config) error {
	switch {
	case cfg.LogQuota < 0:
		return fmt.Errorf("%w: %d bytes: want > 0", ErrLogQuota, cfg.LogQuota)
	case cfg.LogQuota == 0:
		return nil
	case cfg.Loggers < 1:
		return fmt.Errorf("%w: %d bytes with no logger to dump to", ErrLogQuota, cfg.LogQuota)
	case cfg.Dumps == nil:
		return fmt.Errorf("%w: no DumpSink", ErrLogQuota)
	}
	return nil
}

// quota returns the protocol's log quota, nil without one.
func (pe *PE) quota() logging.LogQuota {
	if pe.cfg.LogQuota <= 0 {
		return nil
	}
	return pe.quotaOf
}

// quotaInterfaces keeps the protocol's LogQuota and what the dump sink
// implements beside DumpSink, for quota and the dump paths: asked
// before every handler, at every transmit and between handlers, the
// type assertions took about 5 ms of LeanMD's CPU a run under a quota
// (itab lookups). Called whenever pe.proto changes.
func (pe *PE) quotaInterfaces() {
	pe.quotaOf, _ = pe.proto.(logging.LogQuota)
	pe.dumpBuffer, pe.dumpPlaced = nil, nil
	if m, ok := pe.cfg.Dumps.(DumpBufferer); ok {
		pe.dumpBuffer = m.DumpBuffer
		if s, ok := pe.cfg.Dumps.(LogSharer); ok {
			pe.dumpPlaced = s.DumpPlaced
		}
	}
	pe.dumpBatcher, _ = pe.cfg.Dumps.(DumpBatcher)
	pe.dumpAckSource, _ = pe.cfg.Dumps.(DumpAckSource)
}

// logFull reports whether the next handler must wait for room in the log
// (and starts counting the wait); it halts the PE when the quota cannot
// hold.
func (pe *PE) logFull() bool {
	q := pe.quota()
	if q == nil {
		return false
	}
	ok, err := q.LogRoom()
	if err != nil {
		pe.halt(err)
		return true
	}
	if ok {
		if !pe.holding() {
			pe.unblock()
		}
		return false
	}
	if pe.blockedAt.IsZero() {
		pe.blockedAt = time.Now()
	}
	return true
}

// unblock ends a wait for room, counting it.
func (pe *PE) unblock() {
	if !pe.blockedAt.IsZero() {
		pe.blocked += time.Since(pe.blockedAt)
		pe.blockedAt = time.Time{}
	}
}

// quotaLocalPayload copies payload p of a message to a task on this PE,
// the log's copy, into memory of its own, as marshalLocal does under
// None: a payload of aliasMin bytes or more into memory its handler
// message aliases (ownPayload), any other into a free buffer, taken back
// once delivered (freeLocal), rather than a fresh allocation per message
// (80 ms of a LeanMD PE's 900 ms of CPU in one profile under a quota,
// most of it clearing new heap memory).
func (pe *PE) quotaLocalPayload(p []byte) []byte {
	if len(p) >= aliasMin {
		c := append([]byte(nil), p...)
		pe.ownPayload(c)
		return c
	}
	c := append(pe.localBuffer(), p...)
	pe.lendLocal(c)
	return c
}

// dumpBetweenHandlers sends the dumps due between two handlers of a
// slice (or two starts of a resume) once they are pressing
// (logging.LogQuota.DumpsPressing: a quarter of the window), not only at
// the slice's transmit: LeanMD under a quota of a tenth of its peak found
// its log full with up to five decided dumps, a third of the window,
// still waiting for the slice's end. Sending each dump as it came cost
// its own write, read and acknowledgement (the logger's CPU went from
// about 90 to 140 ms a run). The acknowledgements are taken between
// slices only (posted events): one taken within a slice would free log
// memory that envelopes of the slice not transmitted yet still point
// into.
func (pe *PE) dumpBetweenHandlers() {
	if pe.cfg.LogQuota <= 0 {
		return
	}
	if q := pe.quota(); q != nil && q.DumpsPressing() {
		pe.sendDumps()
	}
}

// sendDumps sends the dumps the protocol decided.
func (pe *PE) sendDumps() {
	q := pe.quota()
	if q == nil {
		return
	}
	var bs []logging.DumpBatch
	if pe.dumpPlaced != nil {
		bs = q.TakeDumpsPlaced(pe.dumpBuffer, pe.dumpPlaced)
	} else if pe.dumpBuffer != nil {
		bs = q.TakeDumpsIn(pe.dumpBuffer)
	} else {
		bs = q.TakeDumps()
	}
	if len(bs) == 0 {
		return
	}
	if all := pe.dumpBatcher; all != nil {
		all.DumpAll(bs)
		return
	}
	for _, b := range bs {
		pe.cfg.Dumps.Dump(b)
	}
}

// takeDumpAcks hands the protocol the acknowledgements the sink holds
// (a DumpAckSource's), between slices: the slice's envelopes, which may
// point into the log's memory an acknowledgement frees, are transmitted.
func (pe *PE) takeDumpAcks() {
	if pe.cfg.LogQuota <= 0 {
		return
	}
	src := pe.dumpAckSource
	if src == nil {
		return
	}
	pe.dumpAckBuf = src.TakeDumpAcks(pe.dumpAckBuf[:0])
	for _, a := range pe.dumpAckBuf {
		pe.dumpAcked(a)
	}
}

func (pe *PE) dumpAcked(ev DumpAcked) {
	if q := pe.quota(); q != nil {
		q.DumpAcked(ev.Logger, ev.Epoch, ev.To)
		pe.sendDumps()
		if pe.holding() {
			pe.resumeWhenRoom()
		} else if !pe.blockedAt.IsZero() {
			pe.schedule()
		}
	}
}

// A resume of the tasks waiting at a sync point starts them all at
// once, and their sends (LeanMD's: half of a tenth of its unbounded
// peak) are far more than one handler's; so do the tasks a recovery
// restored here (all the tasks of a failed PE: more than the whole quota
// of a small one). Under a quota the PE starts them one by one instead
// (resumeWhenRoom), each after a LogRoom as a handler, and waits for a
// logger's acknowledgement where there is no room, counting the wait
// (Stats.LogBlocked); and it dumps ahead what the next resume will need
// while it waits at the sync point (quotaAtSync, from answerProbe). The
// coordinator's events that come during a resume wait behind it, in
// their order (holdEvent), as if the resume were one step; a probe gets
// no answer (the PE is not idle).

// resumeStart is a task a resume starts: restored, a task a recovery
// restored here (resumeRestored), or one waiting at a sync point.
type resumeStart struct {
	el       *element
	restored bool
}

// holding reports whether a resume is under way.
func (pe *PE) holding() bool { return len(pe.resumeQueue) > 0 }

// resumeSync is the coordinator's Resume under a quota: the tasks
// waiting at a sync point go on one by one (resume does the same at
// once).
func (pe *PE) resumeSync(passed uint64) {
	pe.resumedBelow = passed
	var starts []resumeStart
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			if el := cs.local[lin]; el.atSync {
				starts = append(starts, resumeStart{el: el})
			}
		}
	}
	pe.queueResume(starts)
}

// resumeRestoredOneByOne starts the tasks a recovery restored here one
// by one.
func (pe *PE) resumeRestoredOneByOne(restored []*element) {
	starts := make([]resumeStart, len(restored))
	for i, el := range restored {
		starts[i] = resumeStart{el: el, restored: true}
	}
	pe.queueResume(starts)
}

func (pe *PE) queueResume(starts []resumeStart) {
	if len(starts) == 0 {
		pe.runAutoResumes()
		pe.transmit()
		pe.schedule()
		return
	}
	if !pe.holding() {
		pe.resumeTasks = 0
		pe.quota().ResumeStart()
	}
	pe.resumeQueue = append(pe.resumeQueue, starts...)
	pe.resumeWhenRoom()
}

// resumeWhenRoom starts the queued tasks while the log has room for
// their sends; once they all run, it hands the events held behind them
// over, in order.
func (pe *PE) resumeWhenRoom() {
	q := pe.quota()
	for len(pe.resumeQueue) > 0 {
		ok, err := q.LogRoom()
		if err != nil {
			pe.halt(err)
			return
		}
		if !ok {
			if pe.blockedAt.IsZero() {
				pe.blockedAt = time.Now()
			}
			pe.transmit()
			return
		}
		r := pe.resumeQueue[0]
		pe.resumeQueue[0] = resumeStart{}
		pe.resumeQueue = pe.resumeQueue[1:]
		pe.resumeTasks++
		switch {
		case r.restored:
			pe.resumeRestored(r.el)
		case r.el.atSync && r.el.coll.local[r.el.lin] == r.el:
			pe.resumeTask(r.el)
		}
		pe.runAutoResumes()
		if pe.halted != nil {
			return
		}
		pe.dumpBetweenHandlers()
	}
	pe.resumeQueue = nil
	pe.unblock()
	q.Resumed(pe.resumeTasks)
	pe.transmit()
	pe.schedule()
	held := pe.heldEvents
	pe.heldEvents = nil
	for i, ev := range held {
		if pe.halted != nil {
			return
		}
		if pe.holding() {
			pe.heldEvents = append(pe.heldEvents, held[i:]...)
			return
		}
		ev.Dispatch(&pe.events)
	}
}

// holdEvent reports whether ev must wait behind a resume under way (and
// keeps it); the queries the coordinator asks of a PE in any state are
// answered at once.
func (pe *PE) holdEvent(ev job.Event) bool {
	if !pe.holding() {
		return false
	}
	switch ev.(type) {
	case job.Probe, job.ReportProgress, job.Diagnose:
		return false
	}
	pe.heldEvents = append(pe.heldEvents, ev)
	return true
}

// quotaAtSync tells the log that the PE is idle with atSync tasks
// waiting at a sync point, and sends what it dumps for the resume.
func (pe *PE) quotaAtSync(atSync int) {
	if q := pe.quota(); q != nil && atSync > 0 {
		q.AtSync(atSync)
		pe.sendDumps()
	}
}

func (pe *PE) dumpSent(ev DumpSent) {
	if q := pe.quota(); q != nil {
		q.RecycleDump(ev.Payload)
	}
}

func (pe *PE) loggerLost(ev LoggerLost) {
	if pe.cfg.LogQuota <= 0 || ev.Logger < 0 || ev.Logger >= pe.cfg.Loggers {
		return
	}
	if !pe.deadLoggers[ev.Logger] {
		pe.deadLoggers[ev.Logger] = true
		pe.log.Warn("logger lost: dumping to the next one", "logger", ev.Logger, "why", ev.Why)
	}
	if q := pe.quota(); q != nil {
		q.DumpLoggerFailed(ev.Logger)
		pe.sendDumps()
		if pe.holding() {
			pe.resumeWhenRoom()
		}
	}
	pe.schedule()
}

// dumpEpochBase is the period a new protocol's log starts in: each
// protocol this PE makes (one at the start, one per rollback) gets
// periods of its own, 1<<32 apart, so that a logger's acknowledgement of
// the protocol before cannot count for the new one.
func (pe *PE) dumpEpochBase() uint64 {
	pe.protocols++
	return uint64(pe.protocols-1) << 32
}

// quotaProtocol tells a new protocol (a rollback's) of the loggers
// known dead, and keeps the metrics of the one it replaces.
func (pe *PE) quotaProtocol(old logging.Protocol) {
	pe.quotaInterfaces()
	if pe.cfg.LogQuota <= 0 {
		return
	}
	if q, ok := old.(logging.LogQuota); ok && old != nil {
		st := q.DumpStats()
		pe.dumpedBefore += st.Dumped
		pe.logPeakBefore = max(pe.logPeakBefore, st.HighWater)
	}
	q := pe.quota()
	for l, dead := range pe.deadLoggers {
		if dead && q != nil {
			q.DumpLoggerFailed(l)
		}
	}
}

// fetchDumped fetches back from the loggers the entries the failure
// notice of failed and relocs resends; false: it could not, and the PE
// halted.
func (pe *PE) fetchDumped(failed []logging.PEID, relocs []logging.Relocation) bool {
	q := pe.quota()
	if q == nil {
		return true
	}
	runs, err := q.NeedDumped(failed, relocs)
	if err != nil {
		pe.halt(err)
		return false
	}
	epoch := q.DumpEpoch()
	for _, r := range runs {
		b, err := pe.fetchRun(epoch, r)
		if err == nil {
			var entries []logging.DumpedEntry
			if entries, err = logging.DecodeDumped(b); err == nil {
				err = q.Fetched(r.Need, entries)
			}
		}
		if err != nil {
			pe.halt(fmt.Errorf("%w: PE %d could not fetch %d entries of [%d, %d) of its log back from logger %d: %w",
				logging.ErrLogEntriesLost, pe.cfg.Rank, len(r.Need), r.From, r.To, r.Logger, err))
			return false
		}
		pe.stats.LogFetchedBytes += len(b)
	}
	return true
}

// fetchRun fetches the entries r needs from its logger: only those
// where the sink can pick them (DumpPicker), else the whole run, out of
// which the PE picks them.
func (pe *PE) fetchRun(epoch uint64, r logging.DumpFetch) ([]byte, error) {
	if p, ok := pe.cfg.Dumps.(DumpPicker); ok {
		return p.FetchSome(r.Logger, epoch, r.From, r.To, r.Need)
	}
	b, err := pe.cfg.Dumps.Fetch(r.Logger, epoch, r.From, r.To)
	if err != nil {
		return nil, err
	}
	parts, rest, err := logging.PickDumped(nil, b, r.From, r.Need)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: entry %d is not in the run [%d, %d) fetched", logging.ErrBadDump, rest[0], r.From, r.To)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return bytes.Join(parts, nil), nil
}

// checkDumpedNeeded stops the PE when a FailureNotice needed entries it
// dumped to a logger.
func (pe *PE) checkDumpedNeeded() {
	if q := pe.quota(); q != nil {
		if err := q.DumpedEntryNeeded(); err != nil {
			pe.halt(err)
		}
		q.DropFetched()
	}
}

// quotaStats fills the quota's metrics in s.
func (pe *PE) quotaStats(s *Stats) {
	if pe.cfg.LogQuota <= 0 {
		return
	}
	blocked := pe.blocked
	if !pe.blockedAt.IsZero() {
		blocked += time.Since(pe.blockedAt)
	}
	s.LogBlocked = blocked
	s.LogDumpedBytes = pe.dumpedBefore
	if q := pe.quota(); q != nil {
		s.LogDumpedBytes += q.DumpStats().Dumped
	}
}
