package logging

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
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
	// TakeDumpsIn is TakeDumps with each dump encoded into
	// buffer(logger, size) (len 0, capacity at least size: memory the
	// caller shares with the dump's logger) where it gives one, else
	// into the log's own buffer: a dump then reaches its logger with no
	// other copy on the PE.
	TakeDumpsIn(buffer func(logger, size int) []byte) []DumpBatch
	// TakeDumpsPlaced is TakeDumpsIn where placed(logger) says that
	// the dump's logger maps the log's shared memory (Config.LogShared)
	// and reads the dumps from the buffer buffer gives: a dump encoded
	// there names where the payloads of shared chunks lie instead of
	// carrying them (DumpBatch.Placed, see ExpandPlaced).
	TakeDumpsPlaced(buffer func(logger, size int) []byte, placed func(logger int) bool) []DumpBatch
	// DumpsPressing reports whether the dumps due should be taken and
	// sent before the caller's next transmit (between two handlers of a
	// slice, which transmits at its end): they hold a quarter of what
	// may be on its way to the loggers (the window) or more. Sent one
	// by one as they come, each dump would cost its own write, read and
	// acknowledgement; held to the slice's end, the log was found full
	// with a third of the window not sent yet.
	DumpsPressing() bool
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
	// NeedDumped returns, per run of entries stored on a logger, the
	// entries of it that a FailureNotice of failed and relocated would
	// resend (DumpFetch.Need), in log order, or ErrLogEntriesLost when
	// one was on a logger that died. The caller fetches them from the
	// run's logger (only those: PickDumped) and hands them over with
	// Fetched before it calls FailureNotice.
	NeedDumped(failed []PEID, relocated []Relocation) ([]DumpFetch, error)
	// Fetched hands over entries need (as NeedDumped gave them),
	// fetched back from a logger, for the next FailureNotice; it fails
	// when they are not the entries this PE logged there.
	Fetched(need []int, entries []DumpedEntry) error
	// DropFetched forgets the fetched entries (once the FailureNotice's
	// envelopes are sent: they point into them).
	DropFetched()
	// DumpEpoch is the period the log is in (DumpBatch.Epoch).
	DumpEpoch() uint64
	// RecycleDump gives back the Payload of a DumpBatch once it is sent
	// (nothing refers to it any more): the next TakeDumps fills it again
	// instead of allocating (and clearing) a new one.
	RecycleDump(b []byte)
	// ResumeStart and Resumed bracket a resume of tasks tasks (those
	// waiting at a sync point, or those a recovery restored here), which
	// the caller starts one by one, each after a LogRoom as a handler:
	// their sends together (often far more than a handler's) are what
	// the log dumps ahead of the next resume while the PE waits at its
	// sync point (AtSync).
	ResumeStart()
	Resumed(tasks int)
	// AtSync tells the log that the PE is idle with tasks tasks waiting
	// at a sync point: it dumps now what their resume will need room
	// for (before the first resume: all it holds), while the PE has
	// nothing else to do.
	AtSync(tasks int)
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
	// Placed: Payload is in the placed form (ExpandPlaced), which only
	// a logger that maps the log's shared memory can read.
	Placed bool
}

// DumpFetch is what a recovery fetches back from a logger: the entries
// Need (sorted) of the run Source holds.
type DumpFetch struct {
	Source
	Need []int
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
	// that has been between two calls (one handler's sends, or one
	// task's start in a resume). resumeBurst is the most a whole resume
	// logged (resumed: one has run); draining is set by AtSync until the
	// PE runs a handler or a resume starts, while the log dumps down to
	// what the next resume needs.
	burst, maxBurst int
	resumeBurst     int
	resumed         bool
	draining        bool
	// resumeTasks is the number of tasks the coming resume starts (as
	// AtSync last said), perTask the most a resume logged per task it
	// started; inResume is set between ResumeStart and Resumed, while
	// resumeAcc sums the resume's bursts.
	resumeTasks int
	perTask     int
	inResume    bool
	resumeAcc   int
	// needDumped is set by a FailureNotice that had to resend entries no
	// longer in memory; fetched are such entries, fetched back from the
	// loggers for it (Fetched), by log position.
	needDumped error
	fetched    map[int]Message
	// spare are dump buffers given back (RecycleDump), at most maxSpare.
	spare [][]byte
}

// maxSpare bounds the dump buffers a log keeps for reuse.
const maxSpare = 64

// quotaChunk is the size of the sender log's chunks under a quota of
// quota bytes: a sixteenth of it (a Dumper's batch), in 64 KiB, at most a
// mapped chunk. As loggers store the oldest entries their chunks go to
// the log's free list and are filled again, so the log's memory follows
// the quota: the chunks it holds stay within the quota and two chunks
// (one partly released, one partly filled), and once they are there no
// page is faulted in again.
func quotaChunk(quota int) int {
	const unit = 64 << 10
	return min(max((quota/16+unit-1)/unit*unit, unit), mappedChunk)
}

// QuotaChunk is the size of the sender log's chunks under a quota of
// quota bytes (what a SharedLogMemory is asked for).
func QuotaChunk(quota int) int { return quotaChunk(quota) }

// newQuota returns the quota of cfg, nil without one, and sizes the
// chunks of log for it. With no logger (Config.Loggers 0) nothing can be
// dumped: LogRoom fails once the log is full.
func newQuota(cfg Config, log *senderLog) *quota {
	if cfg.LogQuota <= 0 {
		return nil
	}
	chunk := quotaChunk(cfg.LogQuota)
	log.mem.size = chunk
	log.keepBytes = cfg.LogQuota + 2*chunk
	d, err := NewDumper(DumpConfig{Quota: cfg.LogQuota, Loggers: max(cfg.Loggers, 0), Prefer: int(cfg.PE), Epoch: cfg.DumpEpoch})
	if err != nil {
		panic(err) // the quota and the loggers are checked above
	}
	q := &quota{d: d}
	q.tune()
	return q
}

// dumpWindow is the most bytes a log keeps on their way to loggers:
// with the acknowledgements pipelined, a PE that logs r bytes a second
// waits for room only when a logger's acknowledgement takes longer than
// dumpWindow/r (LeanMD on a loaded 2-core machine logs about 25 MB/s per
// PE and sees acknowledgements after 5-40 ms, and after 150 ms now and
// then).
const dumpWindow = 8 << 20

// tune sets the dumper's threshold and window. The log keeps room for
// the largest handler burst; of what the quota leaves beside it (less a
// batch), up to dumpWindow may be on its way to a logger at once, and
// dumps start above the rest, but at an eighth of it at least: a small
// quota dumps nearly all it logs anyway, and gives the acknowledgements
// as much time as it can; a large one dumps only what goes past its
// threshold. While draining (a resume is coming), the threshold is what
// the resume's burst leaves.
func (q *quota) tune() {
	quota, batch := q.d.cfg.Quota, q.d.cfg.Batch
	room := max(quota-q.maxBurst-batch, 0)
	threshold := max(room-dumpWindow, room/8)
	window := max(room-threshold, batch)
	if q.draining {
		threshold = min(threshold, max(quota-q.resumeNeed()-batch, 0))
		window = quota
	}
	q.d.Tune(threshold, window)
}

// resumeNeed is the room a resume needs: the most a resume logged per
// task times the tasks it starts (or the largest resume, if more), and
// an eighth more (the tasks' state changes the sends a little); the
// whole quota before the first.
func (q *quota) resumeNeed() int {
	if !q.resumed {
		return q.d.cfg.Quota
	}
	need := max(q.resumeBurst, q.perTask*q.resumeTasks)
	return min(need+need/8, q.d.cfg.Quota)
}

// closeBurst ends a burst of handler sends: the largest so far sets the
// room the log keeps.
func (e *engine) closeBurst() {
	q := e.quota
	if q.inResume {
		q.resumeAcc += q.burst
	}
	if q.burst > q.maxBurst {
		q.maxBurst = q.burst
		q.tune()
		e.applyDumpActions()
	}
	q.burst = 0
}

// logged records the entry just appended to the log, of size bytes as
// a message. The quota counts the memory the log holds: an entry that
// shares the payload of the one before it (a multicast's, see
// senderLog.add) counts without it, and is Joined to it, so that a dump
// carries the payload once and no release frees it from under the entry
// (the log keeps the chunk of the first entry it keeps). One whose entry
// before is dumped already counts in full (its dump carries the payload
// again).
func (e *engine) logged(size int) {
	q := e.quota
	if q == nil {
		return
	}
	if i := e.log.len() - 1; e.log.sharesPrevious(i) && q.d.CanJoin() {
		size -= int(e.log.entry(i).payloadLen)
		q.burst += size
		q.d.Joined(size)
	} else {
		q.burst += size
		q.d.Logged(size)
	}
	e.stats.PeakLogBytes = max(e.stats.PeakLogBytes, q.d.inMemory())
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
	// The log must keep room for the largest burst: dumps start early
	// enough, and enough go at once, that the memory stays below the
	// quota less one burst while the logger keeps up (tune). A drain
	// (AtSync) lasts while the PE is idle: with handlers running, dumps
	// go in full batches again.
	if q.draining {
		q.draining = false
		q.tune()
	}
	e.closeBurst()
	inMemory := q.d.inMemory()
	if inMemory+q.maxBurst <= q.d.cfg.Quota {
		return true, nil
	}
	if !q.d.Live() {
		return false, fmt.Errorf("%w: PE %d holds %d bytes of %d", ErrNoLoggerLeft, e.pe, inMemory, q.d.cfg.Quota)
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

func (e *engine) ResumeStart() {
	q := e.quota
	if q == nil {
		return
	}
	e.closeBurst()
	q.inResume, q.resumeAcc = true, 0
	if q.draining {
		// The resume's sends are dumped in full batches.
		q.draining = false
		q.tune()
		e.applyDumpActions()
	}
}

func (e *engine) Resumed(tasks int) {
	q := e.quota
	if q == nil || !q.inResume {
		return
	}
	e.closeBurst()
	q.inResume = false
	q.resumeBurst = max(q.resumeBurst, q.resumeAcc)
	if tasks > 0 {
		q.perTask = max(q.perTask, (q.resumeAcc+tasks-1)/tasks)
	}
	q.resumed = true
}

func (e *engine) AtSync(tasks int) {
	q := e.quota
	if q == nil {
		return
	}
	q.resumeTasks = tasks
	if q.draining || q.d.inMemory()+q.resumeNeed() <= q.d.cfg.Quota {
		return
	}
	q.draining = true
	q.tune()
	e.applyDumpActions()
}

func (e *engine) TakeDumps() []DumpBatch { return e.TakeDumpsIn(nil) }

func (e *engine) TakeDumpsIn(buffer func(logger, size int) []byte) []DumpBatch {
	return e.TakeDumpsPlaced(buffer, nil)
}

func (e *engine) TakeDumpsPlaced(buffer func(logger, size int) []byte, placed func(logger int) bool) []DumpBatch {
	if e.quota == nil || len(e.dumpsDue) == 0 {
		return nil
	}
	out := make([]DumpBatch, 0, len(e.dumpsDue))
	shared := e.log.mem.shared()
	for _, d := range e.dumpsDue {
		if shared != nil && buffer != nil && placed != nil && placed(d.Logger) {
			if b, ok := e.log.appendPlaced(shared, d, buffer); ok {
				out = append(out, b)
				continue
			}
		}
		size := 0
		for i := d.From; i < d.To; i++ {
			en := e.log.entry(i)
			size += 11*binary.MaxVarintLen64 + int(en.pathLen) + int(en.requiresLen)
			if i == d.From || !e.log.sharesPrevious(i) {
				size += int(en.payloadLen)
			}
		}
		var b []byte
		if buffer != nil {
			if b = buffer(d.Logger, size); cap(b) < size {
				b = nil
			}
		}
		if b == nil {
			b = e.quota.dumpBuffer(size)
		}
		b = b[:0]
		for i := d.From; i < d.To; i++ {
			b = e.log.appendDumped(b, i, i > d.From && e.log.sharesPrevious(i))
		}
		out = append(out, DumpBatch{Logger: d.Logger, Epoch: d.Epoch, From: d.From, To: d.To, Payload: b})
	}
	e.dumpsDue = e.dumpsDue[:0]
	return out
}

func (e *engine) DumpsPressing() bool {
	if e.quota == nil || len(e.dumpsDue) == 0 {
		return false
	}
	due := 0
	for _, d := range e.dumpsDue {
		due += d.Bytes
	}
	return 4*due >= e.quota.d.cfg.Window
}

// dumpBuffer returns an empty buffer of capacity at least size, a spare
// one if one is large enough and not much larger.
func (q *quota) dumpBuffer(size int) []byte {
	for i := len(q.spare) - 1; i >= 0; i-- {
		if b := q.spare[i]; cap(b) >= size && cap(b) <= 2*size+4096 {
			q.spare[i] = q.spare[len(q.spare)-1]
			q.spare = q.spare[:len(q.spare)-1]
			return b[:0]
		}
	}
	return make([]byte, 0, size)
}

func (e *engine) RecycleDump(b []byte) {
	if q := e.quota; q != nil && cap(b) > 0 && len(q.spare) < maxSpare {
		q.spare = append(q.spare, b[:0])
	}
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

func (e *engine) NeedDumped(failed []PEID, relocated []Relocation) ([]DumpFetch, error) {
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
	var out []DumpFetch
	k := 0
	for _, s := range e.quota.d.Sources() {
		if s.Logger < 0 {
			break
		}
		for k < len(idx) && idx[k] < s.From {
			k++
		}
		lo := k
		for k < len(idx) && idx[k] < s.To {
			k++
		}
		if k > lo {
			out = append(out, DumpFetch{Source: s, Need: idx[lo:k:k]})
		}
	}
	return out, nil
}

func (e *engine) Fetched(need []int, entries []DumpedEntry) error {
	if e.quota == nil {
		return nil
	}
	if len(entries) != len(need) {
		return fmt.Errorf("%w: %d entries fetched for %d needed", ErrBadDump, len(entries), len(need))
	}
	if e.quota.fetched == nil {
		e.quota.fetched = map[int]Message{}
	}
	for k, d := range entries {
		i := need[k]
		if i < 0 || i >= e.log.len() {
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
// handler, order, region size, toPE, path length, requires length, and
// the payload's length times two plus one if the payload is the entry
// before's (a multicast's, which a dump carries once: the bytes do not
// follow), then those bytes. The first entry of a dump, and of an answer
// to a fetch, carries its payload.

// sameFlag is the bit of the payload length field that says the payload
// is the one of the entry before.
const sameFlag = 1

// appendEntry appends entry i, encoded with its payload, to b.
func (l *senderLog) appendEntry(b []byte, i int) []byte { return l.appendDumped(b, i, false) }

// appendDumped appends entry i, encoded, to b; same: its payload is the
// one of the entry appended just before (sharesPrevious), which it does
// not repeat.
func (l *senderLog) appendDumped(b []byte, i int, same bool) []byte {
	b = l.appendDumpedHead(b, i, same)
	if same {
		return b
	}
	return append(b, l.payload(l.entry(i))...)
}

// appendDumpedHead appends entry i's fields, path and requires, encoded
// as appendDumped does, to b.
func (l *senderLog) appendDumpedHead(b []byte, i int, same bool) []byte {
	e := l.entry(i)
	payloadField := uint64(e.payloadLen) << 1
	if same {
		payloadField |= sameFlag
	}
	b = appendDumpedFields(b, [11]uint64{uint64(e.sender), e.srn, uint64(e.to), e.key, uint64(e.handler), uint64(e.order),
		uint64(e.regionSize), uint64(e.toPE), uint64(e.pathLen), uint64(e.requiresLen), payloadField})
	return append(b, l.head(e)...)
}

func appendDumpedFields(b []byte, v [11]uint64) []byte {
	for _, x := range v {
		b = binary.AppendUvarint(b, x)
	}
	return b
}

// sharesPrevious reports whether entry i's payload is the very bytes of
// entry i-1's (senderLog.add shared them: same chunk, same place).
func (l *senderLog) sharesPrevious(i int) bool {
	if i < 1 || i >= l.n {
		return false
	}
	e, p := l.entry(i), l.entry(i-1)
	return e.payloadLen > 0 && e.chunk == p.chunk && e.payloadOff == p.payloadOff && e.payloadLen == p.payloadLen
}

// DumpMemory hands out memory for dumped entries outside the Go heap, in
// chunks mapped as the sender log's are (logmem.go: huge pages where the
// platform has them, the heap elsewhere): a logger keeps every PE's
// dumps of a period, as much as the logs themselves would, and writing
// them into fresh heap memory would cost a page fault every 4 KiB. Its
// chunks are unmapped with Release, or all at once when it is garbage
// (nothing may keep a slice of one beyond it). Not safe for concurrent
// use.
type DumpMemory struct{ mem logMemory }

// DumpSlab is the size of the chunks a logger cuts dumps from.
const DumpSlab = mappedChunk

// NewDumpMemory returns an empty DumpMemory.
func NewDumpMemory() *DumpMemory {
	return &DumpMemory{newLogMemory(true)}
}

// Fault faults in chunk c (from Chunk) from byte from, up to which it is
// faulted in, to the huge page that holds byte end-1, in one call per
// huge page rather than page by page as it is written, and returns how
// far c is faulted in then (cap(c) for a chunk that is not of whole huge
// pages, or not mapped: it faults as it is written). A chunk is not
// faulted in when it is mapped: a logger fills the last of a period's
// chunks partly.
func (m *DumpMemory) Fault(c []byte, from, end int) int {
	return m.mem.fault(c, from, end)
}

// Chunk returns a chunk of at least n bytes (len its capacity).
func (m *DumpMemory) Chunk(n int) []byte {
	c := m.mem.chunk(n)
	return c[:cap(c)]
}

// Release gives a chunk Chunk returned back.
func (m *DumpMemory) Release(c []byte) { m.mem.release(c) }

// DumpedEntry is a log entry as a logger returns it: the message, and the
// PE it was sent to.
type DumpedEntry struct {
	Message Message
	ToPE    PEID
}

// ErrBadDump reports dumped entries that do not decode.
var ErrBadDump = errors.New("logging: malformed dumped log entries")

// CountDumped checks the framing of a DumpBatch's Payload (every entry's
// fixed fields and lengths, the bytes they announce present, a payload
// that is the entry before's only after one) and returns how many
// entries it holds, without building them: what a logger, which only
// stores and returns the bytes, needs. The PE that fetches them back
// decodes them in full (DecodeDumped) and checks them against its log.
func CountDumped(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		size, ok := dumpedEntrySize(b, n > 0)
		if !ok {
			_, err := dumpedSize(b, n > 0) // what is wrong
			return 0, fmt.Errorf("%w (entry %d)", err, n)
		}
		b = b[size:]
		n++
	}
	return n, nil
}

// dumpedEntrySize is the size of the first dumped entry of b, checked as
// dumpedSize checks it (false: it is not well framed), without a
// dumpedEntry to fill and return per entry: the walk of CountDumped,
// which a logger makes over every dump it stores (LeanMD at a tenth of
// its peak: about 50,000 entries a run, which took the logger about 5
// ms through dumpedSize).
func dumpedEntrySize(b []byte, after bool) (int, bool) {
	at := skipEightFields(b)
	if at == 0 {
		return 0, false
	}
	var lengths [3]uint64 // path, requirements, payload field
	for j := range lengths {
		x, k := binary.Uvarint(b[at:])
		if k <= 0 {
			return 0, false
		}
		lengths[j] = x
		at += k
	}
	same := lengths[2]&sameFlag != 0
	lengths[2] >>= 1
	if (same && !after) || lengths[0] > 1<<31 || lengths[1] > 1<<31 || lengths[2] > 1<<31 {
		return 0, false
	}
	size := lengths[0] + lengths[1]
	if !same {
		size += lengths[2]
	}
	if size > uint64(len(b)-at) {
		return 0, false
	}
	return at + int(size), true
}

// PickDumped picks entries need (sorted) out of b, a run of dumped
// entries numbered from from: it appends to parts the parts of b that
// hold those of them b holds (adjacent ones in one part; nothing is
// copied), and returns need's rest, the entries past b's. A recovery
// fetches back only the entries its restored tasks need (about a
// quarter of the run on LeanMD): the logger picks them out of the runs
// it stores, walking their framing as CountDumped does. A picked entry
// whose payload is the entry before's, that entry not picked with it,
// gets its fields again with the payload's length and that payload (a
// part of b) after its own bytes: the parts decode on their own.
func PickDumped(parts [][]byte, b []byte, from int, need []int) ([][]byte, []int, error) {
	if len(need) > 0 && need[0] < from {
		return parts, need, fmt.Errorf("%w: entry %d needed from a run that starts at %d", ErrBadDump, need[0], from)
	}
	all := b
	at, start, end := 0, -1, -1 // the part being picked: all[start:end]
	var payload []byte          // the last payload carried
	for i := from; len(need) > 0 && len(b) > 0; i++ {
		f, err := dumpedFraming(b, i > from)
		if err != nil {
			return parts, need, fmt.Errorf("%w (entry %d)", err, i)
		}
		if !f.same {
			payload = b[f.size-f.payloadLen : f.size]
		}
		if need[0] == i {
			if f.same && end != at {
				// Its payload is not in the part: the entry is written
				// anew with it.
				if start >= 0 {
					parts = append(parts, all[start:end:end])
				}
				v := f.fields
				v[10] = uint64(len(payload)) << 1
				h := appendDumpedFields(nil, v)
				head := b[f.fieldsLen:f.size]
				parts = append(parts, h, head, payload)
				start, end = -1, -1
			} else {
				if end != at {
					if start >= 0 {
						parts = append(parts, all[start:end:end])
					}
					start = at
				}
				end = at + f.size
			}
			need = need[1:]
		}
		at += f.size
		b = b[f.size:]
	}
	if start >= 0 {
		parts = append(parts, all[start:end:end])
	}
	return parts, need, nil
}

// dumpedEntry is the framing of a dumped entry: its fields, their
// encoded length, the entry's whole size, whether its payload is the
// entry before's (same) and, if not, the payload's length.
type dumpedEntry struct {
	fields     [11]uint64
	fieldsLen  int
	size       int
	payloadLen int
	same       bool
}

// dumpedFraming reads the framing of the first dumped entry of b, checked
// as CountDumped says; after: an entry comes before it in the same bytes.
func dumpedFraming(b []byte, after bool) (dumpedEntry, error) {
	var f dumpedEntry
	if err := f.readFields(b, 0); err != nil {
		return f, err
	}
	return f, f.check(b, after)
}

// readFields reads the fields from the first'th on, from b[f.fieldsLen:].
func (f *dumpedEntry) readFields(b []byte, first int) error {
	for j := first; j < len(f.fields); j++ {
		x, k := binary.Uvarint(b[f.fieldsLen:])
		if k <= 0 {
			return fmt.Errorf("%w: bad field %d", ErrBadDump, j)
		}
		f.fields[j] = x
		f.fieldsLen += k
	}
	return nil
}

// skipDumpedFields returns the length of the first n uvarints of b (0:
// one is malformed or cut), without their values.
func skipDumpedFields(b []byte, n int) int {
	at := 0
	for range n {
		end := min(len(b), at+binary.MaxVarintLen64)
		k := at
		for k < end && b[k] >= 0x80 {
			k++
		}
		if k == end || (k-at == binary.MaxVarintLen64-1 && b[k] > 1) {
			return 0
		}
		at = k + 1
	}
	return at
}

// skipEightFields is skipDumpedFields(b, 8): where the eight uvarints
// end within b's first 24 bytes (almost always: they are the entry's
// ids, key, handler and sizes), it finds the eighth byte below 0x80
// there with a few word operations instead of a branch per byte, and
// checks that no uvarint before it is of 10 bytes or more (9 bytes of
// 0x80 or more in a row), the only way one of them can be malformed.
func skipEightFields(b []byte) int {
	if len(b) < 24 {
		return skipDumpedFields(b, 8)
	}
	ends := stopBytes(binary.LittleEndian.Uint64(b)) | stopBytes(binary.LittleEndian.Uint64(b[8:]))<<8 |
		stopBytes(binary.LittleEndian.Uint64(b[16:]))<<16
	if bits.OnesCount32(ends) < 8 {
		return skipDumpedFields(b, 8)
	}
	eighth := ends
	for range 7 {
		eighth &= eighth - 1
	}
	at := bits.TrailingZeros32(eighth) + 1
	more := ^ends & (1<<at - 1) // the bytes of 0x80 or more before it
	long := more
	for k := 1; k < 9; k++ {
		long &= more >> k
	}
	if long != 0 {
		return skipDumpedFields(b, 8)
	}
	return at
}

// stopBytes has bit i set where byte i of w (little-endian) is below
// 0x80: where a uvarint ends.
func stopBytes(w uint64) uint32 {
	const high = 0x8080808080808080
	m := (^w & high) >> 7 // 1 in the low bit of each such byte
	return uint32((m * 0x0102040810204080) >> 56)
}

// dumpedSize is the framing of the first dumped entry of b as
// dumpedFraming reads it, without the values of the fields before the
// lengths (what a logger's walk over the dumps needs).
func dumpedSize(b []byte, after bool) (dumpedEntry, error) {
	var f dumpedEntry
	f.fieldsLen = skipDumpedFields(b, 8)
	if f.fieldsLen == 0 {
		return f, fmt.Errorf("%w: bad field", ErrBadDump)
	}
	if err := f.readFields(b, 8); err != nil {
		return f, err
	}
	return f, f.check(b, after)
}

// check checks the lengths of f, the framing read from the start of b,
// and sets its size.
func (f *dumpedEntry) check(b []byte, after bool) error {
	f.same = f.fields[10]&sameFlag != 0
	if f.same && !after {
		return fmt.Errorf("%w: the first entry shares the payload of none", ErrBadDump)
	}
	lengths := [3]uint64{f.fields[8], f.fields[9], f.fields[10] >> 1}
	size := uint64(0)
	for k, x := range lengths {
		if x > 1<<31 {
			return fmt.Errorf("%w: length %d", ErrBadDump, x)
		}
		if k < 2 || !f.same {
			size += x
		}
	}
	if size > uint64(len(b)-f.fieldsLen) {
		return fmt.Errorf("%w: %d bytes, %d left", ErrBadDump, size, len(b)-f.fieldsLen)
	}
	if !f.same {
		f.payloadLen = int(lengths[2])
	}
	f.size = f.fieldsLen + int(size)
	return nil
}

// DecodeDumped decodes the entries of a DumpBatch's Payload; their
// payloads point into b.
func DecodeDumped(b []byte) ([]DumpedEntry, error) {
	var out []DumpedEntry
	var payload []byte // the last payload carried
	for len(b) > 0 {
		f, err := dumpedFraming(b, len(out) > 0)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d", err, len(out))
		}
		v := f.fields
		h := int(v[8] + v[9])
		raw := b[f.fieldsLen : f.fieldsLen+h : f.fieldsLen+h]
		if !f.same {
			payload = b[f.fieldsLen+h : f.size : f.size]
		} else if uint64(len(payload)) != v[10]>>1 {
			return nil, fmt.Errorf("%w: entry %d: a payload of %d bytes is the one before, of %d", ErrBadDump, len(out), v[10]>>1, len(payload))
		}
		le := logEntry{sender: TaskID(v[0]), srn: v[1], to: TaskID(v[2]), key: v[3], handler: uint32(v[4]),
			order: commutative.Order(v[5]), regionSize: int32(v[6]), toPE: PEID(v[7]),
			pathLen: int32(v[8]), requiresLen: int32(v[9]), payloadLen: int32(v[10] >> 1)}
		m, err := le.rebuild(raw, payload)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrBadDump, len(out), err)
		}
		out = append(out, DumpedEntry{Message: m, ToPE: le.toPE})
		b = b[f.size:]
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
