package logging

import (
	"errors"
	"fmt"
	"iter"
	"slices"
)

// An event logger (Config.EventLogger, FullDet and PartialDet) is a
// logger process that stores the records the PEs create (determinants,
// and PartialDet's progress records) and makes them stable: a record is
// stable once a live event logger has acknowledged it, whatever the
// number of PEs that hold it. Each PE sends the records it creates, in
// creation order, on its stream to one logger (Ready.EventLog; the PE's
// own, Config.PE modulo the loggers, while that one lives). Every record
// carries a stamp, its creator and its number among the creator's records
// of the checkpoint period (Determinant.Seq, Progress.Seq), and the logger
// acknowledges cumulatively per creator (EventLogAck): "I store every
// record of creator c numbered up to n". Every PE gets the logger's
// acknowledgements (EventLogAcked; the caller may bring them late or
// fold several into the latest: one only spares envelopes records), so
// every PE knows which records are stable without any PE-to-PE
// acknowledgement: a vector of one number per creator, which costs a PE
// a few bytes per logger batch, where a stability vector riding on every
// application envelope would cost as many numbers as PEs on each.
//
// The piggyback rule is the protocols' (doc.go) with stable meaning
// acknowledged by a live logger: a PE carries a record on its application
// envelopes until it learns the logger has it, and a PE that received an
// unstable record carries it on likewise. So whatever fails, a survivor
// that depends on a record either holds it or the logger does: any number
// of PE failures at once is recovered (CheckFailures accepts them all)
// as long as the checkpoints survive. A restored task waits, besides the
// survivors' recovery envelopes, for one from each live logger
// (Ready.Fetches asks for it; the logger answers with EventLogger.Fetch,
// which the caller hands to Arrive like any recovery envelope).
//
// A logger's death (EventLoggerFailed): the records it acknowledged are
// no longer stable. Every PE carries those it holds again, and a PE whose
// logger it was sends its unstable records to the next live logger. But a
// PE that depended on a record without holding it (it was stable) still
// does: a PE failure after a logger failure, before the next checkpoint
// commits, cannot be recovered by replay (CheckEventLogFailures); the
// job's coordinator checkpoints at the next sync point after a logger
// dies and rolls every task back to the last committed checkpoint on such
// a PE failure (job/loggers.go). A logger failure after a PE failure is
// harmless once every restored task has the logger's answer: every record
// of a failed PE is one of its tasks' receptions or progress, so the
// restored tasks' hosts hold what the dead logger had of it, and the live
// creators hold their own. A task restored without the dead logger's
// answer (still waiting for it, or restored after its death) may lack
// records only it had (EventLogLost): the job stops with
// ErrEventLogLost. With no logger left, records are never stable again:
// they ride on every envelope until the next checkpoint, which keeps any
// number of later PE failures recoverable by the survivors alone, at the
// cost of the piggyback.

// EventLogBatch is records of one creator for one event logger, in order,
// for checkpoint period Epoch (the logger keeps the latest period only).
// With Config.ReuseRecords the first batch of a Ready or of a
// TakeEventLog has its slices cut from arrays the protocol reuses: they
// are the caller's until its next call of Ready, TakeEventLog or Advance
// (the caller encodes them at once).
type EventLogBatch struct {
	Logger       int
	Epoch        uint64
	Creator      PEID
	Determinants []Determinant
	Progress     []Progress
}

// Bytes is the encoded size of the batch's records.
func (b EventLogBatch) Bytes() int {
	n := 0
	for _, d := range b.Determinants {
		n += d.EncodedSize()
	}
	for _, p := range b.Progress {
		n += p.EncodedSize()
	}
	return n
}

// EventLogAck says that Logger stores every record of Creator of period
// Epoch numbered up to UpTo.
type EventLogAck struct {
	Logger  int
	Epoch   uint64
	Creator PEID
	UpTo    uint64
}

// EventLogFetch asks Logger, for PE, the records of Tasks (restored on PE)
// of period Epoch; the answer is one recovery envelope per task of
// recovery epoch Recovery (Envelope.Epoch). Failed are the PEs PE knows
// failed: the logger closes their streams (EventLogger.PEsFailed) before
// it answers, whether or not it heard of the failures otherwise.
type EventLogFetch struct {
	Logger   int
	PE       PEID
	Epoch    uint64
	Recovery uint32
	Tasks    []TaskID
	Failed   []PEID
}

// LoggerPE is the PEID under which event logger l sends recovery
// envelopes (negative: no PE has it).
func LoggerPE(l int) PEID { return PEID(-1 - l) }

// IsLoggerPE reports whether p names an event logger, and which.
func IsLoggerPE(p PEID) (int, bool) { return int(-1 - p), p < 0 }

// EventLogging is what a caller of a Protocol with Config.EventLogger
// uses to pass on the loggers' events. Every Protocol this package makes
// implements it; without an event logger its methods do nothing.
type EventLogging interface {
	// EventLogAcked records an acknowledgement of a logger (sent to every
	// PE).
	EventLogAcked(a EventLogAck)
	// EventLoggerFailed records that logger l is dead.
	EventLoggerFailed(l int)
	// TakeEventLog returns the record batches for the loggers that the
	// next Ready would carry (Ready.EventLog), made now, and takes them
	// out of it: a caller that sends them at once, between two handlers,
	// makes the records stable sooner, so fewer ride on the envelopes it
	// sends after. Nil without an event logger. With
	// Config.ReuseRecords they are the caller's until its next call of
	// Ready, TakeEventLog or Advance (EventLogBatch).
	TakeEventLog() []EventLogBatch
	// EventLogLost returns an error wrapping ErrEventLogLost when a task
	// restored here since the last checkpoint has not had the answer of
	// a logger that died since (it waits for it, or was restored after
	// the death and could not ask): the records only that logger held of
	// it are lost, and the caller must stop. The caller asks after
	// EventLoggerFailed and after FailureNotice.
	EventLogLost() error
}

var (
	_ EventLogging = (*FullDet)(nil)
	_ EventLogging = (*PartialDet)(nil)
	_ EventLogging = (*None)(nil)
)

// ErrEventLoggerConfig reports an event logger asked for where none can
// work.
var ErrEventLoggerConfig = errors.New("logging: bad event logger configuration")

// CheckEventLogger says whether protocol kind can run with an event
// logger among loggers logger processes.
func CheckEventLogger(kind Kind, loggers int) error {
	if kind == KindNone {
		return fmt.Errorf("%w: checkpoint/restart (None) records nothing to log", ErrEventLoggerConfig)
	}
	if loggers <= 0 {
		return fmt.Errorf("%w: it needs at least one logger process", ErrEventLoggerConfig)
	}
	return nil
}

// eventLog is a PE's side of the event logger.
type eventLog struct {
	dead []bool
	// target is the logger this PE's records go to (-1: none left).
	target int
	// epoch is the checkpoint period, seq the stamp of this PE's last
	// record in it.
	epoch uint64
	seq   uint64
	// acked is, per creator (indexed by PEID), the live logger's
	// cumulative acknowledgement (upTo 0: none).
	acked []elAck
	// pendingDeterminants and pendingProgress are the records made
	// unstable here (created, received or made unstable again) since the
	// last fillEventLog, in that order: the candidates for the logger,
	// so that a batch costs O(its records), not O(unstable records).
	// The determinants are their slots in the store (a checkpoint
	// empties both).
	pendingDeterminants []uint32
	pendingProgress     []TaskID
	// diedInPeriod are the loggers known to have died since the last
	// checkpoint (EventLogLost).
	diedInPeriod []int
	// batchDeterminants and batchProgress are the arrays of the first
	// batch of a Ready or a TakeEventLog, reused with
	// Config.ReuseRecords (EventLogBatch).
	batchDeterminants []Determinant
	batchProgress     []Progress
	batches           []EventLogBatch
}

type elAck struct {
	logger int
	upTo   uint64
}

func newEventLog(cfg Config) *eventLog {
	if cfg.Loggers <= 0 {
		panic(fmt.Sprintf("logging: pe%d: an event logger with %d loggers", cfg.PE, cfg.Loggers))
	}
	return &eventLog{
		dead: make([]bool, cfg.Loggers), target: int(cfg.PE) % cfg.Loggers,
		epoch: cfg.DumpEpoch, acked: make([]elAck, max(cfg.PEs, 0)),
	}
}

// stable reports whether the record of creator numbered seq is stored on a
// live logger.
func (l *eventLog) stable(creator PEID, seq uint64) bool {
	if creator < 0 || int(creator) >= len(l.acked) {
		return false
	}
	a := l.acked[creator]
	return seq != 0 && seq <= a.upTo && !l.dead[a.logger]
}

// noteUnstable queues the determinant at slot for the logger
// (fillEventLog).
func (l *eventLog) noteUnstable(slot uint32) {
	l.pendingDeterminants = append(l.pendingDeterminants, slot)
}

// noteProgress queues task's progress record for the logger: it was made
// or replaced here and is not logged (fillEventLog).
func (l *eventLog) noteProgress(task TaskID) {
	l.pendingProgress = append(l.pendingProgress, task)
}

// nextLive is the first live logger from from on, cyclically (-1: none).
func (l *eventLog) nextLive(from int) int {
	for i := range l.dead {
		if c := (from + i) % len(l.dead); !l.dead[c] {
			return c
		}
	}
	return -1
}

// live are the live loggers.
func (l *eventLog) live() []int {
	var out []int
	for i, d := range l.dead {
		if !d {
			out = append(out, i)
		}
	}
	return out
}

// batch is the Ready's batch to the target logger, made if needed (nil
// with no logger left).
func (e *engine) batch() *EventLogBatch {
	l := e.el
	if l.target < 0 {
		return nil
	}
	n := len(e.ready.EventLog)
	if n > 0 && e.ready.EventLog[n-1].Logger == l.target && e.ready.EventLog[n-1].Epoch == l.epoch {
		return &e.ready.EventLog[n-1]
	}
	b := EventLogBatch{Logger: l.target, Epoch: l.epoch, Creator: e.pe}
	if n == 0 && e.reuseRecords {
		// The caller is done with the arrays of the batch before.
		b.Determinants, b.Progress = l.batchDeterminants[:0], l.batchProgress[:0]
		e.ready.EventLog = l.batches[:0]
	}
	e.ready.EventLog = append(e.ready.EventLog, b)
	return &e.ready.EventLog[n]
}

// logDeterminant stamps a determinant created here (it goes to the
// logger with the Ready: fillEventLog).
func (e *engine) logDeterminant(d *Determinant) {
	if e.el == nil {
		return
	}
	e.el.seq++
	d.Creator, d.Seq = e.pe, e.el.seq
}

// logProgress stamps a progress record made here.
func (e *engine) logProgress(p *Progress) {
	if e.el == nil {
		return
	}
	e.el.seq++
	p.Creator, p.Seq = e.pe, e.el.seq
}

// fillEventLog puts in the Ready's batch every record this PE holds that
// is not stable and not yet sent to its logger: the ones it created, and
// like any message that leaves the PE, the unstable ones of others that
// they may depend on. A logger then never holds a record without the
// records it depends on being on a logger too or held by every PE that
// depends on them: a determinant on a logger whose message a restored
// sender could not send again would make its receiver wait forever. The
// logger's acknowledgement counts this PE's own records only (their
// stamps are consecutive on this stream); the others become stable by
// their creators' streams. Every such record was queued when it became
// unstable here (noteUnstable, noteProgress), so only the queues are
// read.
func (e *engine) fillEventLog() {
	l := e.el
	if l.target < 0 {
		// No logger left: the records ride on envelopes until the
		// next checkpoint.
		l.pendingDeterminants, l.pendingProgress = l.pendingDeterminants[:0], l.pendingProgress[:0]
		return
	}
	var b *EventLogBatch
	for _, slot := range l.pendingDeterminants {
		d := e.determinants.slab.at(slot)
		if d.flags&detLogged != 0 || e.isStable(d) {
			continue
		}
		if b == nil {
			b = e.batch()
		}
		d.flags |= detLogged
		det := e.determinants.determinant(d)
		b.Determinants = append(b.Determinants, det)
		e.stats.EventLogRecords++
		e.stats.EventLogBytes += det.EncodedSize()
	}
	l.pendingDeterminants = l.pendingDeterminants[:0]
	for _, task := range l.pendingProgress {
		p, ok := e.progress[task]
		if !ok || p.logged || e.progressStable(p) {
			continue
		}
		if b == nil {
			b = e.batch()
		}
		p.logged = true
		rec := progressOf(task, p)
		b.Progress = append(b.Progress, rec)
		e.stats.EventLogRecords++
		e.stats.EventLogBytes += rec.EncodedSize()
	}
	l.pendingProgress = l.pendingProgress[:0]
	if e.reuseRecords && len(e.ready.EventLog) > 0 {
		// Keep the first batch's arrays, grown, for the next one.
		first := e.ready.EventLog[0]
		if cap(first.Determinants) > cap(l.batchDeterminants) {
			l.batchDeterminants = first.Determinants[:0]
		}
		if cap(first.Progress) > cap(l.batchProgress) {
			l.batchProgress = first.Progress[:0]
		}
		if cap(e.ready.EventLog) > cap(l.batches) {
			l.batches = e.ready.EventLog[:0]
		}
	}
}

// eventLogReady readies the Ready for the caller: its batches for the
// logger, and its envelopes stripped of the records that became stable
// since they were made.
func (e *engine) eventLogReady() {
	e.fillEventLog()
	e.stripStable()
}

// stripStable drops from the Ready's application envelopes the records
// acknowledged since each envelope was made (the caller takes the
// acknowledgements between its handlers, and sends the envelopes of a
// slice of handlers together at its end): a record stable when its
// envelope leaves need not ride on it, as it would not have had it been
// stable at the send. Recovery envelopes keep theirs.
func (e *engine) stripStable() {
	l := e.el
	for i := range e.ready.Envelopes {
		env := &e.ready.Envelopes[i]
		if env.Kind != EnvelopeMessage || (len(env.Determinants) == 0 && len(env.Progress) == 0) {
			continue
		}
		before := env.PiggybackBytes()
		nd, np := len(env.Determinants), len(env.Progress)
		env.Determinants = slices.DeleteFunc(env.Determinants, func(d Determinant) bool { return l.stable(d.Creator, d.Seq) })
		env.Progress = slices.DeleteFunc(env.Progress, func(p Progress) bool { return l.stable(p.Creator, p.Seq) })
		if len(env.Determinants) == nd && len(env.Progress) == np {
			continue
		}
		e.stats.PiggybackedBytes -= before - env.PiggybackBytes()
		e.stats.PiggybackedDeterminants -= nd - len(env.Determinants)
		e.stats.ProgressRecords -= np - len(env.Progress)
		if len(env.Determinants) == 0 {
			env.Determinants = nil
		}
		if len(env.Progress) == 0 {
			env.Progress = nil
		}
	}
}

func (e *engine) TakeEventLog() []EventLogBatch {
	if e.el == nil {
		return nil
	}
	e.fillEventLog()
	out := e.ready.EventLog
	e.ready.EventLog = nil
	return out
}

func (e *engine) EventLogAcked(a EventLogAck) {
	l := e.el
	if l == nil || a.Epoch != l.epoch || a.Logger < 0 || a.Logger >= len(l.dead) || l.dead[a.Logger] {
		return
	}
	if a.Creator < 0 || a.UpTo == 0 {
		return
	}
	if int(a.Creator) >= len(l.acked) {
		l.acked = append(l.acked, make([]elAck, int(a.Creator)+1-len(l.acked))...)
	}
	cur := &l.acked[a.Creator]
	if cur.upTo != 0 && cur.logger == a.Logger && cur.upTo >= a.UpTo {
		return
	}
	*cur = elAck{logger: a.Logger, upTo: a.UpTo}
}

func (e *engine) EventLoggerFailed(dead int) {
	l := e.el
	if l == nil || dead < 0 || dead >= len(l.dead) || l.dead[dead] {
		return
	}
	l.dead[dead] = true
	l.diedInPeriod = append(l.diedInPeriod, dead)
	for c, a := range l.acked {
		if a.upTo != 0 && a.logger == dead {
			l.acked[c] = elAck{}
		}
	}
	// What the dead logger made stable is not any more: carry it again,
	// from the next envelope to each PE on.
	e.forgetCarried()
	e.requeueUnstable()
	for _, task := range e.sortedProgressTasks() {
		e.markMaybeUnstable(task, e.progress[task])
	}
	// The logger gets those of them it has not had: every unstable
	// record is a candidate again (requeueUnstable leaves in e.unstable
	// those that were queued for piggybacking already, and queues the
	// others).
	l.pendingDeterminants = append(l.pendingDeterminants, e.unstable...)
	l.pendingProgress = append(l.pendingProgress, e.sortedProgressTasks()...)
	if l.target != dead {
		return
	}
	// The next logger gets every unstable record again (fillEventLog),
	// this PE's own in stamp order, so that its cumulative
	// acknowledgement means what it says.
	l.target = l.nextLive(dead + 1)
	for d := range e.determinants.all() {
		d.flags &^= detLogged
	}
	for _, p := range e.progress {
		p.logged = false
	}
	l.pendingDeterminants = append(l.pendingDeterminants[:0], e.unstable...)
	l.pendingProgress = append(l.pendingProgress[:0], e.sortedProgressTasks()...)
}

func (e *engine) EventLogLost() error {
	if e.el == nil {
		return nil
	}
	for _, l := range e.el.diedInPeriod {
		if task, ok := e.awaitsLogger(l); ok {
			return fmt.Errorf("%w: pe%d: task %d was restored since the last checkpoint without the records logger %d held, and it died",
				ErrEventLogLost, e.pe, task, l)
		}
	}
	return nil
}

// awaitsLogger returns a task restored here since the last checkpoint
// that has not had logger l's answer.
func (e *engine) awaitsLogger(l int) (TaskID, bool) {
	for _, r := range e.relocated {
		t, ok := e.tasks[r.Task]
		if !ok || r.PE != e.pe {
			continue
		}
		if _, answered := t.recovered[LoggerPE(l)]; !answered {
			return r.Task, true
		}
	}
	return 0, false
}

// requeueUnstable queues for piggybacking every determinant that is not
// stable and not queued.
func (e *engine) requeueUnstable() {
	queued := e.queuedUnstable()
	for d := range e.determinants.all() {
		if !queued[d.slot] && !e.isStable(d) {
			e.markUnstable(d)
		}
	}
}

// eventLogCheckpoint starts a new period: records and acknowledgements
// of the one before are forgotten (the loggers drop them when they see the
// new period).
func (e *engine) eventLogCheckpoint() {
	l := e.el
	if l == nil {
		return
	}
	l.epoch++
	l.seq = 0
	clear(l.acked)
	l.pendingDeterminants = l.pendingDeterminants[:0]
	l.pendingProgress = l.pendingProgress[:0]
	l.diedInPeriod = l.diedInPeriod[:0]
	if l.target < 0 || l.dead[l.target] {
		l.target = l.nextLive(int(e.pe) % len(l.dead))
	}
}

// fetchFor asks every live logger for the records of the tasks restored
// here by a failure notice of recovery epoch epoch, and makes them wait
// for the answers.
func (e *engine) fetchFor(restored []TaskID, epoch uint32) {
	if e.el == nil || len(restored) == 0 {
		return
	}
	for _, l := range e.el.live() {
		for _, task := range restored {
			t := e.tasks[task]
			t.awaiting[LoggerPE(l)] = struct{}{}
			t.fetchEpoch = epoch
		}
		e.ready.Fetches = append(e.ready.Fetches, EventLogFetch{
			Logger: l, PE: e.pe, Epoch: e.el.epoch, Recovery: epoch, Tasks: slices.Clone(restored), Failed: slices.Clone(e.failed),
		})
	}
}

// EventLogger is the logger process's side: it stores the records the PEs
// send (Store), acknowledges them, and answers a restored task's fetch
// (Fetch). A pure state machine, like the protocols.
//
// Store appends a batch's determinants to the period's log as they come
// (one copy of the batch, no work per record but its stamp's look); the
// index by task that Fetch and HoldsDeterminant read is made from the log
// when they are called (index), for what came since the last call. A
// logger is asked for its records only after a failure, and stores some
// ten thousand batches a second.
type EventLogger struct {
	id    int
	epoch uint64
	// log is the period's determinants in the order they came; dets
	// indexes the first indexed.
	log     detLog
	indexed int
	dets    map[TaskID]*loggedDeterminants
	prog    map[TaskID]Progress
	// acked is the acknowledgement of each creator (by PEID) in the
	// period.
	acked []uint64
	dead  map[PEID]bool
	stats EventLoggerStats
}

// loggedDeterminants are a task's determinants on a logger, by RSN: the
// one at RSN first+i is byRSN[i] (RSN 0: none there). A task's RSNs in a
// period are few and close together, so a slice costs less than a map,
// and a fetch reads them in order.
type loggedDeterminants struct {
	task  TaskID
	first uint64
	byRSN []Determinant
}

// add keeps d unless one is held at its RSN, and reports whether it did.
func (t *loggedDeterminants) add(d Determinant) bool {
	if len(t.byRSN) == 0 {
		t.first = d.RSN
	}
	if d.RSN < t.first {
		grown := make([]Determinant, t.first-d.RSN, uint64(len(t.byRSN))+t.first-d.RSN)
		t.byRSN, t.first = append(grown, t.byRSN...), d.RSN
	}
	i := d.RSN - t.first
	if i == uint64(len(t.byRSN)) {
		// The next RSN, as they mostly come.
		t.byRSN = append(t.byRSN, d)
		return true
	}
	if i > uint64(len(t.byRSN)) {
		t.byRSN = append(t.byRSN, make([]Determinant, i+1-uint64(len(t.byRSN)))...)
	}
	if t.byRSN[i].RSN != 0 {
		return false
	}
	t.byRSN[i] = d
	return true
}

// reset empties t, keeping its array.
func (t *loggedDeterminants) reset() {
	clear(t.byRSN)
	t.byRSN, t.first = t.byRSN[:0], 0
}

// at returns the determinant held at rsn.
func (t *loggedDeterminants) at(rsn uint64) (Determinant, bool) {
	if t == nil || rsn < t.first || rsn-t.first >= uint64(len(t.byRSN)) || t.byRSN[rsn-t.first].RSN == 0 {
		return Determinant{}, false
	}
	return t.byRSN[rsn-t.first], true
}

// EventLoggerStats are an event logger's counters.
type EventLoggerStats struct {
	Batches, Records, Bytes int
	// Stale counts batches of an earlier period or a failed PE, dropped.
	Stale int
}

// NewEventLogger returns logger id's state.
func NewEventLogger(id int) *EventLogger {
	return &EventLogger{id: id, dets: map[TaskID]*loggedDeterminants{}, prog: map[TaskID]Progress{},
		dead: map[PEID]bool{}}
}

// Store keeps a batch and returns the acknowledgement to send to every
// PE, or false when the batch is dropped: it is of a period before the
// latest one seen, or from a PE known failed (its stream is closed: what
// a recovery fetched from this logger is all it will ever have of it).
// A batch of a later period drops every record of the earlier ones.
func (l *EventLogger) Store(b EventLogBatch) (EventLogAck, bool) {
	if l.dead[b.Creator] || b.Epoch < l.epoch {
		l.stats.Stale++
		return EventLogAck{}, false
	}
	if b.Epoch > l.epoch {
		l.epoch = b.Epoch
		// The tasks' arrays serve the new period: a task's
		// determinants in one period are about as many as in the
		// next, and growing them again cost a copy per doubling.
		for _, byTask := range l.dets {
			byTask.reset()
		}
		l.log.reset()
		l.indexed = 0
		clear(l.prog)
		clear(l.acked)
	}
	if b.Creator < 0 {
		panic(fmt.Sprintf("logging: logger %d: a batch of creator %d", l.id, b.Creator))
	}
	if int(b.Creator) >= len(l.acked) {
		l.acked = append(l.acked, make([]uint64, int(b.Creator)+1-len(l.acked))...)
	}
	l.stats.Batches++
	upTo := l.acked[b.Creator]
	bytes := 0
	for i := range b.Determinants {
		d := &b.Determinants[i]
		bytes += d.EncodedSize()
		// RSNs count from 1: a determinant at 0 names no reception
		// and is not kept (index).
		if d.Creator == b.Creator && d.RSN != 0 {
			upTo = max(upTo, d.Seq)
		}
	}
	l.log.append(b.Determinants)
	for _, p := range b.Progress {
		bytes += p.EncodedSize()
		if cur, ok := l.prog[p.Task]; !ok || cur.RSN < p.RSN {
			l.prog[p.Task] = p
		}
		if p.Creator == b.Creator {
			upTo = max(upTo, p.Seq)
		}
	}
	l.stats.Records += len(b.Determinants) + len(b.Progress)
	l.stats.Bytes += bytes
	l.acked[b.Creator] = upTo
	return EventLogAck{Logger: l.id, Epoch: l.epoch, Creator: b.Creator, UpTo: upTo}, true
}

// index indexes by task the determinants stored since the last call:
// the first held at a task's RSN is kept, as it came first (a record of
// another creator may come from several PEs).
func (l *EventLogger) index() {
	var byTask *loggedDeterminants
	for d := range l.log.from(l.indexed) {
		// RSNs count from 1: a determinant at 0 names no reception.
		if d.RSN == 0 {
			continue
		}
		// A task's receptions often follow each other in a batch.
		if byTask == nil || d.Receiver != byTask.task {
			byTask = l.dets[d.Receiver]
			if byTask == nil {
				byTask = &loggedDeterminants{task: d.Receiver}
				l.dets[d.Receiver] = byTask
			}
		}
		byTask.add(d)
	}
	l.indexed = l.log.n
}

// detLog is an append-only log of determinants in chunks of
// detLogChunk: appending never moves what is held, and a new period
// reuses the chunks.
type detLog struct {
	chunks [][]Determinant
	// n is the number held: the chunks before the last full, the
	// last's length the rest.
	n    int
	used int // chunks in use
}

const detLogChunk = 4096

func (g *detLog) append(ds []Determinant) {
	for len(ds) > 0 {
		if g.used == 0 || len(g.chunks[g.used-1]) == detLogChunk {
			if g.used == len(g.chunks) {
				g.chunks = append(g.chunks, make([]Determinant, 0, detLogChunk))
			}
			g.used++
		}
		last := &g.chunks[g.used-1]
		k := min(len(ds), detLogChunk-len(*last))
		*last = append(*last, ds[:k]...)
		ds = ds[k:]
		g.n += k
	}
}

// from yields the determinants from the i-th on.
func (g *detLog) from(i int) iter.Seq[Determinant] {
	return func(yield func(Determinant) bool) {
		for c := i / detLogChunk; c < g.used; c++ {
			start := 0
			if c == i/detLogChunk {
				start = i % detLogChunk
			}
			for _, d := range g.chunks[c][start:] {
				if !yield(d) {
					return
				}
			}
		}
	}
}

// reset empties g, keeping its chunks.
func (g *detLog) reset() {
	for c := range g.used {
		clear(g.chunks[c]) // their paths
		g.chunks[c] = g.chunks[c][:0]
	}
	g.n, g.used = 0, 0
}

// PEsFailed closes the streams of failed PEs: their later batches are
// dropped. The caller calls it before it answers a fetch of the recovery
// from their failure.
func (l *EventLogger) PEsFailed(pes []PEID) {
	for _, p := range pes {
		l.dead[p] = true
	}
}

// Fetch answers f: one recovery envelope per task, with the task's
// determinants (by RSN) and progress record of f's period (none if this
// logger holds another period: nothing of f's was stored here).
func (l *EventLogger) Fetch(f EventLogFetch) []Envelope {
	l.index()
	out := make([]Envelope, 0, len(f.Tasks))
	for _, task := range f.Tasks {
		env := Envelope{Kind: EnvelopeRecovery, From: LoggerPE(l.id), To: f.PE, Task: task, Epoch: f.Recovery}
		if f.Epoch == l.epoch {
			if byTask := l.dets[task]; byTask != nil {
				for _, d := range byTask.byRSN {
					if d.RSN != 0 {
						env.Determinants = append(env.Determinants, d)
					}
				}
			}
			if p, ok := l.prog[task]; ok {
				env.Progress = []Progress{p}
			}
		}
		out = append(out, env)
	}
	return out
}

// HoldsDeterminant reports whether the logger stores the determinant of
// receiver's reception at rsn (of its latest period).
func (l *EventLogger) HoldsDeterminant(receiver TaskID, rsn uint64) bool {
	l.index()
	_, ok := l.dets[receiver].at(rsn)
	return ok
}

// Epoch is the latest period the logger has seen.
func (l *EventLogger) Epoch() uint64 { return l.epoch }

// Stats returns the logger's counters.
func (l *EventLogger) Stats() EventLoggerStats { return l.stats }

// ErrEventLogLost reports a PE failure after an event logger failure in
// one checkpoint period (a PE may depend on a record only the dead logger
// stored), or a restored task that waits for a dead logger's answer.
var ErrEventLogLost = errors.New("logging: a PE and an event logger failed in the same checkpoint period")

// CheckEventLogFailures says whether a PE failure, the peFailures-th
// since the last checkpoint every PE committed, after loggerFailures
// event logger failures since it, can be recovered by replay (see the
// event logger above). The job's coordinator rolls every task back to the
// checkpoint when it refuses.
func CheckEventLogFailures(kind Kind, cfg Config, peFailures, loggerFailures int) error {
	if kind == KindNone || !cfg.EventLogger || peFailures == 0 || loggerFailures == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d PE(s) and %d logger(s) failed since the last checkpoint", ErrEventLogLost, peFailures, loggerFailures)
}
