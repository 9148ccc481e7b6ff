package logging

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/gochare/gochare/commutative"
)

// A log quota (Config.LogQuota) bounds the memory of the sender log: the
// engine holds a Dumper, and the caller (the scheduler) carries out what
// it decides through the methods below, which the three protocols share
// (LogQuota). The engine stays free of I/O: it hands out the dumps to send
// (TakeDumps), takes in the loggers' acknowledgements (DumpAcked) and
// deaths (DumpLoggerFailed), frees the memory of what loggers stored, and
// tells the caller whether a handler may run now (LogRoom): a handler's
// sends are logged as it makes them, so the room is judged before it
// runs, against the most this PE has logged between two calls so far (a
// burst: one handler's sends, or those of the tasks an event resumed
// at once). The dumps start early enough to keep that room free while
// the loggers keep up.

// LogQuota is what a caller of a Protocol uses to bound its sender log by
// Config.LogQuota. Every Protocol this package makes implements it; with
// no quota its methods do nothing (LogRoom always has room).
type LogQuota interface {
	// LogRoom reports whether a handler may run now without the log's
	// memory going past the quota. False: the caller runs no handler
	// until DumpAcked or DumpLoggerFailed has been called. An error: the
	// quota cannot hold (no live logger is left) and the caller must stop.
	LogRoom() (bool, error)
	// TakeDumps returns, and forgets, the dumps the caller must send now,
	// in order.
	TakeDumps() []DumpBatch
	// DumpAcked records a logger's cumulative acknowledgement: it stored
	// the entries of period epoch below to.
	DumpAcked(logger int, epoch uint64, to int)
	// DumpLoggerFailed records that logger l is gone for this PE.
	DumpLoggerFailed(l int)
	// DumpStats returns the quota's metrics (zero without a quota).
	DumpStats() DumpStats
	// DumpedEntryNeeded returns, after a FailureNotice, the error that
	// says it had to resend entries it no longer holds (nil if none).
	DumpedEntryNeeded() error
	// NeedDumped returns the runs of entries stored on loggers that a
	// FailureNotice of failed and relocated would resend, in log order,
	// or ErrLogEntriesLost when one was on a logger that died. The
	// caller fetches each run from its logger and hands the entries over
	// with Fetched before it calls FailureNotice.
	NeedDumped(failed []PEID, relocated []Relocation) ([]Source, error)
	// Fetched hands over the entries of run [from, from+len(entries)),
	// fetched back from a logger, for the next FailureNotice; it fails
	// when they are not the entries this PE logged there.
	Fetched(from int, entries []DumpedEntry) error
	// DropFetched forgets the fetched entries (once the FailureNotice's
	// envelopes are sent: they point into them).
	DropFetched()
	// DumpEpoch is the period the log is in (DumpBatch.Epoch).
	DumpEpoch() uint64
}

var (
	_ LogQuota = (*FullDet)(nil)
	_ LogQuota = (*PartialDet)(nil)
	_ LogQuota = (*None)(nil)
)

// DumpBatch is a dump to send: entries [From, To) of the log of period
// Epoch, encoded in Payload (see DecodeDumped), for Logger.
type DumpBatch struct {
	Logger  int
	Epoch   uint64
	From    int
	To      int
	Payload []byte
}

// ErrNoLoggerLeft reports a log quota that cannot hold: every logger is
// dead, and nothing can be dumped any more.
var ErrNoLoggerLeft = errors.New("logging: the sender log reached its quota and no logger is left to dump to")

// ErrDumpedEntryNeeded reports a recovery that needs log entries this PE
// dumped to a logger: they are not in memory (see FailureNotice).
var ErrDumpedEntryNeeded = errors.New("logging: a recovery needs log entries dumped to a logger")

// quota is the engine's part of a log quota.
type quota struct {
	d *Dumper
	// burst is the bytes logged since the last LogRoom, maxBurst the most
	// that has been between two calls (one handler's sends).
	burst, maxBurst int
	// needDumped is set by a FailureNotice that had to resend entries no
	// longer in memory; fetched are such entries, fetched back from the
	// loggers for it (Fetched), by log position.
	needDumped error
	fetched    map[int]Message
}

// newQuota returns the quota of cfg, nil without one. With no logger
// (Config.Loggers 0) nothing can be dumped: LogRoom fails once the log
// is full.
func newQuota(cfg Config) *quota {
	if cfg.LogQuota <= 0 {
		return nil
	}
	// Dumps start at a quarter of the quota, and a quarter may be on its
	// way to a logger: with a logger that keeps up the log holds about
	// half the quota, and the other half takes a handler's sends (which
	// are logged as the handler makes them, LogRoom) without a wait.
	d, err := NewDumper(DumpConfig{Quota: cfg.LogQuota, Threshold: max(cfg.LogQuota/4, 1), Window: max(cfg.LogQuota/4, 1),
		Loggers: max(cfg.Loggers, 0), Prefer: int(cfg.PE), Epoch: cfg.DumpEpoch})
	if err != nil {
		panic(err) // the quota and the loggers are checked above
	}
	return &quota{d: d}
}

// logged records an entry of size bytes, appended to the log.
func (e *engine) logged(size int) {
	q := e.quota
	if q == nil {
		return
	}
	q.burst += size
	q.d.Logged(size)
	e.stats.PeakLogBytes = max(e.stats.PeakLogBytes, q.d.Stats().InMemory)
	e.applyDumpActions()
}

// applyDumpActions frees what loggers stored, and keeps the dumps for
// TakeDumps.
func (e *engine) applyDumpActions() {
	for _, a := range e.quota.d.Actions() {
		switch a := a.(type) {
		case Dump:
			e.dumpsDue = append(e.dumpsDue, a)
		case Release:
			e.log.release(a.To)
		}
	}
}

func (e *engine) LogRoom() (bool, error) {
	q := e.quota
	if q == nil {
		return true, nil
	}
	if q.burst > q.maxBurst {
		// The log must keep room for the largest burst: dumps start
		// early enough, and enough go at once, that the memory stays
		// below the quota less one burst while the logger keeps up.
		q.maxBurst = q.burst
		room := max(q.d.cfg.Quota-q.maxBurst, 0)
		q.d.Tune(min(q.d.cfg.Quota/4, room/3), min(q.d.cfg.Quota/4, room/3))
		e.applyDumpActions()
	}
	q.burst = 0
	st := q.d.Stats()
	if st.InMemory+q.maxBurst <= q.d.cfg.Quota {
		return true, nil
	}
	if !q.d.Live() {
		return false, fmt.Errorf("%w: PE %d holds %d bytes of %d", ErrNoLoggerLeft, e.pe, st.InMemory, q.d.cfg.Quota)
	}
	if q.d.InFlight() == 0 && len(e.dumpsDue) == 0 {
		// Nothing on its way to a logger that could make room: the log
		// is near the threshold and one handler's sends are larger than
		// what lies between it and the quota. Waiting would never end.
		return true, nil
	}
	q.d.stats.Refused++
	return false, nil
}

func (e *engine) TakeDumps() []DumpBatch {
	if e.quota == nil || len(e.dumpsDue) == 0 {
		return nil
	}
	out := make([]DumpBatch, 0, len(e.dumpsDue))
	for _, d := range e.dumpsDue {
		size := 0
		for i := d.From; i < d.To; i++ {
			en := e.log.entry(i)
			size += 11*binary.MaxVarintLen64 + int(en.pathLen) + int(en.requiresLen) + int(en.payloadLen)
		}
		b := make([]byte, 0, size)
		for i := d.From; i < d.To; i++ {
			b = e.log.appendEntry(b, i)
		}
		out = append(out, DumpBatch{Logger: d.Logger, Epoch: d.Epoch, From: d.From, To: d.To, Payload: b})
	}
	e.dumpsDue = e.dumpsDue[:0]
	return out
}

func (e *engine) DumpAcked(logger int, epoch uint64, to int) {
	if e.quota == nil {
		return
	}
	e.quota.d.Acked(logger, epoch, to)
	e.applyDumpActions()
}

func (e *engine) DumpLoggerFailed(l int) {
	if e.quota == nil {
		return
	}
	// Dumps not sent yet to l go to the next logger (the Dumper drops
	// its own; those taken out already are re-dumped by it).
	kept := e.dumpsDue[:0]
	for _, d := range e.dumpsDue {
		if d.Logger != l {
			kept = append(kept, d)
		}
	}
	e.dumpsDue = kept
	e.quota.d.LoggerFailed(l)
	e.applyDumpActions()
}

func (e *engine) DumpStats() DumpStats {
	if e.quota == nil {
		return DumpStats{}
	}
	return e.quota.d.Stats()
}

// DumpedEntryNeeded returns the error of the last FailureNotice that had
// to resend entries dumped to a logger (nil if none).
func (e *engine) DumpedEntryNeeded() error {
	if e.quota == nil {
		return nil
	}
	return e.quota.needDumped
}

// quotaCheckpoint empties the quota's log with the log.
func (e *engine) quotaCheckpoint() {
	if e.quota != nil {
		e.quota.d.Checkpoint()
		e.dumpsDue = e.dumpsDue[:0]
		e.quota.needDumped = nil
		e.quota.fetched = nil
	}
}

func (e *engine) NeedDumped(failed []PEID, relocated []Relocation) ([]Source, error) {
	if e.quota == nil || e.log.released == 0 {
		return nil, nil
	}
	restored := map[TaskID]bool{}
	for _, r := range relocated {
		restored[r.Task] = true
	}
	var idx []int
	for i := range e.log.released {
		en := e.log.entry(i)
		if restored[en.to] || slices.Contains(failed, en.toPE) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	if err := e.quota.d.Need(idx); err != nil {
		return nil, err
	}
	var out []Source
	k := 0
	for _, s := range e.quota.d.Sources() {
		if s.Logger < 0 {
			break
		}
		for k < len(idx) && idx[k] < s.From {
			k++
		}
		if k < len(idx) && idx[k] < s.To {
			out = append(out, s)
		}
	}
	return out, nil
}

func (e *engine) Fetched(from int, entries []DumpedEntry) error {
	if e.quota == nil {
		return nil
	}
	if e.quota.fetched == nil {
		e.quota.fetched = map[int]Message{}
	}
	for k, d := range entries {
		i := from + k
		if i >= e.log.len() {
			return fmt.Errorf("%w: entry %d fetched, the log holds %d", ErrBadDump, i, e.log.len())
		}
		en := e.log.entry(i)
		if en.sender != d.Message.ID.Sender || en.srn != d.Message.ID.SRN || en.to != d.Message.To || en.toPE != d.ToPE {
			return fmt.Errorf("%w: entry %d fetched is message %v to %d, the log has %d.%d to %d",
				ErrBadDump, i, d.Message.ID, d.Message.To, en.sender, en.srn, en.to)
		}
		e.quota.fetched[i] = d.Message
	}
	return nil
}

func (e *engine) DumpEpoch() uint64 {
	if e.quota == nil {
		return 0
	}
	return e.quota.d.Epoch()
}

func (e *engine) DropFetched() {
	if e.quota != nil {
		e.quota.fetched = nil
	}
}

// Dumped entries on the wire: per entry, uvarints sender, srn, to, key,
// handler, order, region size, toPE, path length, requires length,
// payload length, then those bytes.

// appendEntry appends entry i, encoded, to b.
func (l *senderLog) appendEntry(b []byte, i int) []byte {
	e := l.entry(i)
	for _, v := range []uint64{uint64(e.sender), e.srn, uint64(e.to), e.key, uint64(e.handler), uint64(e.order),
		uint64(e.regionSize), uint64(e.toPE), uint64(e.pathLen), uint64(e.requiresLen), uint64(e.payloadLen)} {
		b = binary.AppendUvarint(b, v)
	}
	n := int(e.pathLen) + int(e.requiresLen) + int(e.payloadLen)
	return append(b, l.chunks[e.chunk][int(e.off):int(e.off)+n]...)
}

// DumpedEntry is a log entry as a logger returns it: the message, and the
// PE it was sent to.
type DumpedEntry struct {
	Message Message
	ToPE    PEID
}

// ErrBadDump reports dumped entries that do not decode.
var ErrBadDump = errors.New("logging: malformed dumped log entries")

// DecodeDumped decodes the entries of a DumpBatch's Payload; their
// payloads point into b.
func DecodeDumped(b []byte) ([]DumpedEntry, error) {
	var out []DumpedEntry
	for len(b) > 0 {
		var v [11]uint64
		for j := range v {
			x, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, fmt.Errorf("%w: entry %d: bad field %d", ErrBadDump, len(out), j)
			}
			v[j], b = x, b[n:]
		}
		for _, n := range v[8:] {
			if n > 1<<31 {
				return nil, fmt.Errorf("%w: entry %d: length %d", ErrBadDump, len(out), n)
			}
		}
		n := v[8] + v[9] + v[10]
		if n > uint64(len(b)) {
			return nil, fmt.Errorf("%w: entry %d: %d bytes, %d left", ErrBadDump, len(out), n, len(b))
		}
		le := logEntry{sender: TaskID(v[0]), srn: v[1], to: TaskID(v[2]), key: v[3], handler: uint32(v[4]),
			order: commutative.Order(v[5]), regionSize: int32(v[6]), toPE: PEID(v[7]),
			pathLen: int32(v[8]), requiresLen: int32(v[9]), payloadLen: int32(v[10])}
		m, err := le.rebuild(b[:n:n])
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrBadDump, len(out), err)
		}
		out = append(out, DumpedEntry{Message: m, ToPE: le.toPE})
		b = b[n:]
	}
	return out, nil
}

// resendable returns logged message i for a resend, unless it was dumped
// to a logger and is no longer in memory: then the recovery cannot resend
// it from here, and DumpedEntryNeeded says so.
func (e *engine) resendable(i int) (Message, bool) {
	if i < e.log.released {
		if m, ok := e.quota.fetched[i]; ok {
			return m, true
		}
		if e.quota != nil && e.quota.needDumped == nil {
			e.quota.needDumped = fmt.Errorf("%w: PE %d must resend entry %d of its log, stored on a logger (%d entries are)",
				ErrDumpedEntryNeeded, e.pe, i, e.log.released)
		}
		return Message{}, false
	}
	return e.log.message(i), true
}
