package logging

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/internal/sortmerge"
)

// Protocol is one PE's fault-tolerance protocol: a pure state machine. The
// scheduler calls it on every send, arrival, delivery, checkpoint and
// failure, then performs what Ready returns and calls Advance. See the
// package documentation for the order of the calls.
type Protocol interface {
	Kind() Kind
	PE() PEID
	// HostTask places a task with fresh counters on this PE.
	HostTask(task TaskID)
	// RestoreTask places a failed PE's task, restored from its checkpoint,
	// on this PE. It delivers nothing until a recovery envelope has arrived
	// from each PE in survivors (the PEs alive at the failure, this one
	// included).
	RestoreTask(checkpoint TaskCheckpoint, survivors []PEID)
	// Send stamps the identity of a message sent by task from (inside its
	// running handler, its completion step, or outside any handler), logs it
	// and queues it for toPE with the determinants it depends on. FullDet
	// and PartialDet copy the payload of a message to another PE into the
	// sender log (the queued envelope carries the copy, valid until the
	// next Checkpoint), so the caller may reuse it as soon as Send returns.
	// A message between two tasks of this PE is logged by no protocol (no
	// recovery needs it: its sender rolls back with its receiver, and
	// sends it again; docs/design.md, "The sender log"), unless one of
	// them moved here since the last checkpoint (Logged), and None logs
	// nothing: then the envelope keeps msg.Payload itself.
	Send(from TaskID, toPE PEID, msg Message) MessageID
	// Logged reports whether Send logs a message from task from to task
	// to on PE toPE: under FullDet and PartialDet, one to another PE, or
	// to or from a task a migration brought to this PE since the last
	// Checkpoint.
	Logged(from TaskID, toPE PEID, to TaskID) bool
	// Arrive takes an envelope from the network. It may keep a message or
	// recovery envelope's message, payload (which it never writes),
	// Requires and Progress; it keeps no envelope's Determinants, nor
	// anything of an EnvelopeAck, so the caller may reuse those slices
	// once Arrive returns.
	Arrive(env Envelope)
	// Forward takes a message envelope that reached this PE for a task that
	// is not here but on PE to (it moved, and its sender did not know yet):
	// the envelope's records are stored and acknowledged as Arrive does,
	// and the message leaves again for PE to, in the next Ready, as an
	// envelope of this PE carrying the records its new receiver needs.
	Forward(env Envelope, to PEID)
	// NextDelivery returns the next message task may handle now, or false.
	// admits is the program's own buffering test (keys, phases); the
	// protocol adds duplicate removal, region isolation and replay order.
	// The caller must run the handler and then call EndHandler.
	NextDelivery(task TaskID, admits func(Message) bool) (Delivery, bool)
	// EndHandler reports that the handler of the last delivery returned.
	// If it completed a commutative region, the caller runs the region's
	// completion step next; its sends are ordinary sends.
	EndHandler(task TaskID) (regionComplete bool)
	// Checkpoint is called at a coordinated checkpoint (no application
	// message in flight). It returns the protocol part of each hosted
	// task's checkpoint, by task id, and discards logs and determinants.
	Checkpoint() []TaskCheckpoint
	// ExportTask and ImportTask move a task between PEs at a sync point.
	ExportTask(task TaskID) TaskCheckpoint
	ImportTask(checkpoint TaskCheckpoint)
	// OpenRegion reports whether a task is inside a commutative region.
	OpenRegion(task TaskID) (handler uint32, open bool)
	// FailureNotice tells a surviving PE that the failed PEs are gone and
	// where their tasks are restored. The PE resends logged messages and
	// hands over determinants to the restored tasks (through Ready).
	FailureNotice(failed []PEID, relocated []Relocation)
	// HoldsDeterminant reports whether this PE stores the determinant of
	// receiver's reception at rsn.
	HoldsDeterminant(receiver TaskID, rsn uint64) bool
	// Ready is the output since the last Advance. Its slices stay valid
	// until the second Advance after this call (the protocol reuses
	// them): the caller may read one Ready while it makes the next.
	Ready() Ready
	Advance()
	Stats() Stats
}

// Config configures a protocol instance.
type Config struct {
	PE PEID
	// PEs is the number of PEs of the job, numbered from 0.
	PEs int
	// Failures is f, the number of PE failures between two coordinated
	// checkpoints the protocol survives (see CheckFailures): a determinant
	// or progress record is stable once stored on f PEs besides the one
	// that created it, or on every PE alive when fewer than f+1 are. Zero
	// means DefaultFailures.
	Failures int
	// Locate, if set, returns the PE a task lives on now (negative if
	// unknown). FailureNotice uses it to send again the logged messages
	// that went to a failed PE for a task that had moved away from it:
	// that PE may have died before forwarding them.
	Locate func(TaskID) PEID
	// Failed are the PEs already failed when the protocol starts (one
	// made afresh when every task rolls back): they count as failed from
	// the start, as if a FailureNotice had named them, so that a later
	// failure's recovery neither waits for them nor counts them alive.
	Failed []PEID
	// LogOffHeap keeps the sender log's bytes in memory the log maps
	// itself, outside the Go heap (where the platform allows; see
	// logmem.go): the collector's pacing then does not grow with the log.
	// The log unmaps that memory when the Protocol is garbage, so the
	// caller must keep no slice of a logged payload (Envelope.Message.
	// Payload of a Ready's envelopes, a Delivery's of a message this PE
	// sent to itself) beyond its use of the Protocol that returned it, and
	// as always none beyond the next Checkpoint: copy it (encode it) to
	// send it elsewhere.
	LogOffHeap bool
	// LogShared, with LogOffHeap and a LogQuota, gives the sender log
	// chunks of memory it shares with its loggers (SharedLogMemory): a
	// dump to a logger that maps it then names where the payloads lie
	// instead of carrying them (TakeDumpsPlaced). Nil: none.
	LogShared SharedLogMemory
	// Values encodes the value of a message given to Send with one
	// (Message.Value) that Send logs: straight into the sender log, whose
	// bytes the envelope then carries. Without it Send panics on such a
	// message.
	Values ValueEncoder
	// ReuseRecords is the caller's promise that it keeps no Determinants
	// or Progress slice of a Ready's envelope beyond the second Advance
	// after that Ready (the scheduler encodes every envelope for another
	// PE into a batch before it calls Advance): the protocol then cuts
	// those slices from arrays it reuses, and a PE in steady state
	// allocates none per envelope. Without it they are the envelope's
	// for good (a simulator that holds envelopes in flight for longer
	// clones them, or leaves this off).
	ReuseRecords bool
	// LogQuota, if above 0, bounds the sender log's memory to that many
	// bytes of entries by dumping the oldest to Loggers logger processes
	// (quota.go, LogQuota). Under None nothing is logged and it does
	// nothing.
	LogQuota int
	Loggers  int
	// DumpEpoch is the period number the quota's log starts in (see
	// DumpConfig.Epoch), and the event logger's first period.
	DumpEpoch uint64
	// EventLogger (FullDet, PartialDet; needs Loggers > 0) makes the
	// Loggers logger processes event loggers: a record is stable once one
	// of them has acknowledged it (eventlog.go), and any number of PE
	// failures is recovered. None ignores it.
	EventLogger bool
	// Ordered is the caller's promise that every envelope this PE sends
	// to another live PE arrives there, and in the order of the Readies
	// that returned them (one ordered, reliable channel per pair of PEs,
	// as the scheduler's transports are). A determinant carried to a PE
	// once then rides there no more, whether or not its acknowledgement
	// has come back: the first copy arrives before anything sent after
	// it (docs/design.md, "Piggybacking and stability"). Without it
	// (the log simulator reorders Readies) a determinant rides on the
	// first envelope of every Ready to a PE until that PE acknowledges
	// it. Not under an event logger.
	Ordered bool
	// OrderFree, if set, reports whether a task can never receive an
	// order-dependent message (every handler of its collection is ordered
	// or commutative). PartialDet makes no progress record for the sends
	// of such a task: a record only tells a restored task how far to
	// replay before it may take an order-dependent message without a
	// determinant, and such a task takes none. Delivering an
	// order-dependent message to a task it names panics.
	OrderFree func(TaskID) bool
	// ReportDeterminants lists each determinant this PE creates in
	// Ready.Determinants (the log simulator's and the trace tests'
	// record of every reception). The scheduler reads none: without it
	// a reception appends nothing there.
	ReportDeterminants bool
}

// DefaultFailures is the f the runtime runs the protocols with: any two
// PE failures between two checkpoints, at the same time or one during the
// other's recovery, lose no determinant or progress record that a
// surviving PE depends on.
const DefaultFailures = 2

// failures is the configured f.
func (c Config) failures() int {
	if c.Failures <= 0 {
		return DefaultFailures
	}
	return c.Failures
}

// NewNone returns the checkpoint/restart protocol.
func NewNone(cfg Config) Protocol { return &None{newEngine(KindNone, cfg)} }

// NewFullDet returns causal message logging with a determinant per
// reception.
func NewFullDet(cfg Config) Protocol { return &FullDet{newEngine(KindFullDet, cfg)} }

// NewPartialDet returns causal message logging with determinants for
// order-dependent receptions only.
func NewPartialDet(cfg Config) Protocol { return &PartialDet{newEngine(KindPartialDet, cfg)} }

// New returns the protocol of the given kind.
func New(kind Kind, cfg Config) Protocol {
	switch kind {
	case KindNone:
		return NewNone(cfg)
	case KindFullDet:
		return NewFullDet(cfg)
	case KindPartialDet:
		return NewPartialDet(cfg)
	}
	panic(fmt.Sprintf("logging: New with %v", kind))
}

// None is checkpoint/restart. It keeps identities and removes duplicates
// but logs nothing and records no determinant; FailureNotice asks the
// caller to roll every task back.
type None struct{ *engine }

// FullDet records a determinant for every reception and replays a restored
// task's receptions in exactly their recorded order.
type FullDet struct{ *engine }

// PartialDet records determinants for order-dependent receptions only.
// During replay an order-dependent message is delivered only at its
// recorded position; ordered and commutative messages fill the other
// positions in whatever order the program admits.
type PartialDet struct{ *engine }

// engine is the machinery the three protocols share.
type engine struct {
	// carried is, per destination, how far into madeUnstable and updated
	// the records on envelopes of the current Ready go (see piggybackFor);
	// madeUnstable lists the determinants created or received unstable
	// during it, updated the progress records made or weakened during it.
	// Both are appended to only once an envelope of the Ready has gone to
	// another PE: until then, the first envelope to each PE carries all.
	carried      map[PEID]carriedUpTo
	madeUnstable []uint32 // slots in e.determinants
	updated      []Progress
	// unacked are the envelopes this PE sent with determinants that no
	// PE has acknowledged yet, and what they carried (unacked.go).
	unacked unackedEnvelopes

	kind Kind
	pe   PEID
	// movedIn are the tasks a migration brought here since the last
	// checkpoint: a message to or from one is logged even between two
	// tasks of this PE (see Logged).
	movedIn map[TaskID]struct{}
	// failures is the configured f; bound is the f in force: f, or one
	// less than the PEs alive when fewer than f+1 are (a record on every
	// live PE survives whatever fails).
	failures int
	bound    int
	locate   func(TaskID) PEID

	tasks    map[TaskID]*hostedTask
	unhosted map[TaskID][]Envelope // arrivals for tasks not (yet) placed here

	// log is every message sent since the checkpoint, in send order, with
	// the PE each went to (see senderlog.go: no allocation per message,
	// nothing for the garbage collector to scan).
	log         senderLog
	logBytes    int
	loggedCount int
	// determinants are the determinants this PE stores, by receiver and
	// RSN (detstore.go); their records are reused after a checkpoint.
	determinants determinantStore
	// recordedAt is the (highest) RSN recorded for each message a task
	// received: an index of determinants, so that the pinning test costs
	// O(1) whatever the number held since the checkpoint. It serves
	// replays only (isPinned): isPinned first indexes the determinants
	// stored since it last did, the slab's slots from indexed on (the
	// slab hands out slots in order from 0 after each checkpoint), so
	// that the forward path pays nothing per determinant instead of a map
	// entry keyed by a whole message identity (or, as before, an append
	// of its slot to a list that held every determinant of the period).
	recordedAt map[receivedMessage]uint64
	indexed    uint32
	// unstable lists the slots of the determinants this PE still
	// piggybacks, in creation or arrival order (piggyback reads the
	// records without looking them up), and some that have become stable
	// since: a walk over the whole list drops those, one from walked
	// does not (the list then holds at most every determinant stored
	// since the checkpoint, 12 bytes each). unstableSeq numbers the
	// entries in order (from unstableNext), so that walked names a
	// place in the list that dropping entries does not move.
	unstable     []uint32
	unstableSeq  []uint64
	unstableNext uint64
	// unstableDropAt is the length of unstable at which Advance drops
	// its stable entries (dropStableEntries).
	unstableDropAt int
	// walked holds, for each PE p below 64 under Config.Ordered, the
	// number of the first entry of unstable that piggyback has not
	// looked at for p since the last failure notice (0: none looked at).
	// Every entry before it was then stable, held by p or carried to p,
	// and stays so until a failure notice (holders and carried bits only
	// grow, the bound only falls, until then): piggyback starts there
	// (docs/design.md, "Piggybacking and stability").
	walked [64]uint64
	// progress is the highest known Progress of each task (PartialDet).
	progress map[TaskID]*storedProgress
	// progressTasks are the keys of progress, sorted up to
	// progressSorted (sortedProgressTasks sorts the rest when read: an
	// insertion in order would cost O(tasks) each).
	progressTasks  []TaskID
	progressSorted int
	// maybeUnstable are the tasks whose progress record may not be
	// stable yet: every record made or weakened since it was last found
	// stable (storedProgress.maybe marks them). They are sorted up to
	// maybeSorted; unstableProgress sorts the others in and prunes the
	// stable ones, so an envelope costs O(unstable records), not O(tasks
	// known), and marking a task O(1).
	maybeUnstable []TaskID
	maybeSorted   int
	mergeBuf      []TaskID

	// failed are the PEs known to have failed; relocated are the tasks
	// restored since the last checkpoint, where they now live.
	pes       int
	failed    []PEID
	relocated []Relocation

	ready Ready
	// spare is the Ready before the current one: Advance hands its arrays
	// to the next Ready, so that a PE in steady state allocates none.
	spare Ready
	// carriedRecords holds the Determinants and Progress slices of the
	// current Ready's envelopes (piggybackFor), one after the other;
	// spareRecords those of the Ready before it. With reuseRecords
	// (Config.ReuseRecords) Advance swaps them as it does ready and
	// spare: an envelope's records stay valid until the second Advance
	// after the Ready that holds it; without, they are the envelope's.
	carriedRecords records
	spareRecords   records
	reuseRecords   bool
	// ordered: Config.Ordered (see carriesTo).
	ordered bool
	// reportDeterminants: Config.ReportDeterminants.
	reportDeterminants bool
	// values encodes a logged message's value (Config.Values).
	values ValueEncoder
	// orderFree is Config.OrderFree (nil: no task is).
	orderFree func(TaskID) bool

	// lastSender is the task of the last send logged (see Send).
	lastSender TaskID

	stats Stats

	// quota bounds the log's memory (quota.go; nil without a quota);
	// dumpsDue are the dumps it decided and TakeDumps has not taken.
	quota    *quota
	dumpsDue []Dump
	// el is the PE's side of the event logger (eventlog.go; nil without).
	el *eventLog
}

// records are the arrays the piggybacked records of a Ready's envelopes
// are cut from.
type records struct {
	determinants []Determinant
	progress     []Progress
}

// determinantsFrom returns the determinants appended to r since from (a
// length of r.determinants), as a slice of their own length and capacity.
func (r *records) determinantsFrom(from int) []Determinant {
	if len(r.determinants) == from {
		return nil
	}
	return r.determinants[from:len(r.determinants):len(r.determinants)]
}

// progressFrom is determinantsFrom for progress records.
func (r *records) progressFrom(from int) []Progress {
	if len(r.progress) == from {
		return nil
	}
	return r.progress[from:len(r.progress):len(r.progress)]
}

// reset empties r, keeping its arrays; what the slices cut from them
// referred to holds no pointer (a determinant's path is a string: it is
// cleared so that the collector may free it).
func (r *records) reset() {
	clear(r.determinants)
	r.determinants, r.progress = r.determinants[:0], r.progress[:0]
}

// carriedUpTo is how far the envelopes of the current Ready to one PE
// carry the records made during the Ready: positions in e.madeUnstable and
// e.updated.
type carriedUpTo struct {
	determinants int
	progress     int
}

type receivedMessage struct {
	receiver TaskID
	message  MessageID
}

// storedDeterminant is a determinant this PE stores and what the protocol
// knows of it. It holds no pointer, so that the collector does not scan
// the slab (with the path string and a holders slice in each record, the
// marking of the slab cost ~0.1 G instructions in a LeanMD job at 4 PEs:
// docs/benchmarks.md, "fd3 (2026-11-28)"): the message's path is an index
// in the store's table of paths (determinantStore.paths), and the holders
// a bit set of the PEs below 64 with any other in a side table
// (determinantStore.moreHolders). determinantStore.determinant gives the
// Determinant back.
//
// A record is 64 bytes, one cache line of the slab's chunks (which are
// larger than a page, so line-aligned), with the fields a duplicate
// arrival and a walk of piggyback read first: storeReceived, for a
// determinant it holds already, compares the message and tests the
// sender's holder bit; piggyback tests holders and carried bits. At 72
// bytes every record straddled two lines. The event logger's stamp
// (Determinant.Creator, Seq), zero without one, is kept by slot beside
// the slab (determinantStore.stamps).
type storedDeterminant struct {
	// holders has bit p set for each PE p below 64 known to store the
	// determinant, this one included; the others are in the store's
	// moreHolders (flag detMoreHolders). A holder stays until the next
	// checkpoint or its failure.
	holders uint64
	// carried has bit p set once the determinant rode to PE p (p < 64;
	// Config.Ordered only; see carriesTo).
	carried uint64
	sender  TaskID
	srn     uint64
	// path is the message's path: an index in determinantStore.paths,
	// 0 for the empty path.
	path uint32
	// holderCount is the number of holders (at most maxHolderCount:
	// isStable compares it with the bound, which is far below).
	holderCount uint16
	flags       uint8
	// slot is the record's place in the slab (detSlab.at).
	slot     uint32
	receiver TaskID
	rsn      uint64
}

// maxHolderCount caps storedDeterminant.holderCount.
const maxHolderCount = math.MaxUint16

const (
	// detLogged: sent to this PE's event logger (fillEventLog).
	detLogged = 1 << iota
	// detMoreHolders: the store's moreHolders lists holders of the
	// determinant besides the bits of holders.
	detMoreHolders
)

// detSlab hands out storedDeterminants from chunks of detSlabChunk, so
// that storing a determinant allocates nothing in steady state: the
// records are reused once a checkpoint has forgotten them all (reset).
// Only the determinant store refers to the records, by slot. The chunks
// hold no pointer: the collector does not scan them.
type detSlab struct {
	chunks [][]storedDeterminant
	chunk  int // the chunk next hands out from
	next   int // its next free record
}

const detSlabChunk = 1024

// get returns a zeroed record and its slot (at returns it from there).
func (s *detSlab) get() (*storedDeterminant, uint32) {
	if s.chunk < len(s.chunks) && s.next == detSlabChunk {
		s.chunk, s.next = s.chunk+1, 0
	}
	if s.chunk == len(s.chunks) {
		s.chunks = append(s.chunks, make([]storedDeterminant, detSlabChunk))
	}
	slot := uint32(s.chunk*detSlabChunk + s.next)
	r := &s.chunks[s.chunk][s.next]
	s.next++
	*r = storedDeterminant{slot: slot}
	return r, slot
}

// at returns the record handed out at slot.
func (s *detSlab) at(slot uint32) *storedDeterminant {
	return &s.chunks[slot/detSlabChunk][slot%detSlabChunk]
}

// len is the number of records handed out since the last reset: their
// slots are 0 to len-1.
func (s *detSlab) len() uint32 { return uint32(s.chunk*detSlabChunk + s.next) }

// reset takes back every record handed out; the caller has forgotten
// them (get zeroes a record as it hands it out again).
func (s *detSlab) reset() {
	s.chunk, s.next = 0, 0
}

// noteRecovery records a recovery envelope of epoch from pe and stops
// waiting for the PEs that have sent one of the current epoch.
// It costs O(1): a restored task takes in one envelope from every
// survivor, so anything more would grow as the square of the PEs.
func (t *hostedTask) noteRecovery(pe PEID, epoch uint32) {
	if t.recovered == nil {
		t.recovered = map[PEID]uint32{}
	}
	if last, ok := t.recovered[pe]; !ok || last < epoch {
		t.recovered[pe] = epoch
	}
	if _, logger := IsLoggerPE(pe); logger {
		if t.recovered[pe] >= t.fetchEpoch {
			delete(t.awaiting, pe)
		}
		return
	}
	if t.recovered[pe] >= t.epoch {
		delete(t.awaiting, pe)
	}
}

// dropAwaited stops waiting for every PE that has sent a recovery
// envelope of the current epoch.
func (t *hostedTask) dropAwaited() {
	for p := range t.awaiting {
		if _, logger := IsLoggerPE(p); logger {
			continue // answers to a fetch: noteRecovery
		}
		if last, ok := t.recovered[p]; ok && last >= t.epoch {
			delete(t.awaiting, p)
		}
	}
}

// await makes the task wait for a recovery envelope from each of pes
// (and still for the event loggers' answers it waits for).
func (t *hostedTask) await(pes []PEID) {
	was := t.awaiting
	t.awaiting = make(map[PEID]struct{}, len(pes))
	for p := range was {
		if _, logger := IsLoggerPE(p); logger {
			t.awaiting[p] = struct{}{}
		}
	}
	for _, p := range pes {
		t.awaiting[p] = struct{}{}
	}
}

// awaited returns, sorted, the PEs whose recovery envelope the task waits
// for.
func (t *hostedTask) awaited() []PEID {
	out := make([]PEID, 0, len(t.awaiting))
	for p := range t.awaiting {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

type storedProgress struct {
	rsn     uint64
	holders []PEID
	// creator and seq are the record's stamp under an event logger;
	// logged: this record (this rsn) went to this PE's logger.
	creator PEID
	seq     uint64
	logged  bool
	// maybe: the task is in engine.maybeUnstable.
	maybe bool
}

type hostedTask struct {
	counters commutative.TaskState
	// received are the identities delivered since the checkpoint
	// (received.go).
	received receivedSet
	// requires is the task's causal past of region receptions since the
	// checkpoint (PartialDet), sorted: its sends carry it.
	requires []Dependency
	// buffer holds the messages that arrived and wait for their turn, in
	// arrival order; buffered indexes their identities once the buffer is
	// long (a reducer's region of one message per element of a large
	// collection), so that the duplicate check of an arrival does not scan
	// it (see pushBuffer).
	buffer   []Message
	buffered map[MessageID]struct{}
	// bufferArray is buffer's array from its first element: a buffer
	// emptied starts again there (pushBuffer), so that a task that
	// buffers a few messages at a time allocates no array per few
	// messages. Kept up to bufferKeepMax messages.
	bufferArray []Message
	// awaiting are the survivors whose recovery envelope of epoch (or a
	// later one) has not arrived; recovered is the latest epoch received
	// from each PE. A recovery envelope of an earlier failure does not
	// count: its sender may have stored more determinants of the task
	// since, whose only other holder the new failure took.
	awaiting  map[PEID]struct{}
	epoch     uint32
	recovered map[PEID]uint32
	// fetchEpoch is the recovery epoch of the event loggers' answers the
	// task waits for (they are in awaiting under LoggerPE).
	fetchEpoch uint32
	// replayEnd is the last reception position the task is known to have
	// reached before a failure (by a determinant or a progress record):
	// until its RSN passes it, the task is replaying.
	replayEnd uint64
	// progress is the task's record in engine.progress (PartialDet), once
	// its first send since the checkpoint made or found it: records are
	// never replaced, only forgotten all at once by Checkpoint.
	progress *storedProgress
	// orderFree: the task never receives an order-dependent message
	// (Config.OrderFree), so its sends make no progress record.
	orderFree bool
}

func newEngine(kind Kind, cfg Config) *engine {
	e := &engine{
		kind:               kind,
		pe:                 cfg.PE,
		pes:                cfg.PEs,
		failed:             slices.Clone(cfg.Failed),
		failures:           cfg.failures(),
		locate:             cfg.Locate,
		tasks:              map[TaskID]*hostedTask{},
		unhosted:           map[TaskID][]Envelope{},
		determinants:       newDeterminantStore(),
		recordedAt:         map[receivedMessage]uint64{},
		progress:           map[TaskID]*storedProgress{},
		reuseRecords:       cfg.ReuseRecords,
		values:             cfg.Values,
		ordered:            cfg.Ordered && !cfg.EventLogger,
		reportDeterminants: cfg.ReportDeterminants,
		orderFree:          cfg.OrderFree,
	}
	e.log.mem = newLogMemory(cfg.LogOffHeap && kind != KindNone)
	if e.log.mem.owner != nil && cfg.LogQuota > 0 && kind != KindNone {
		e.log.mem.setShared(cfg.LogShared)
	}
	if kind != KindNone {
		e.quota = newQuota(cfg, &e.log)
		if cfg.EventLogger {
			e.el = newEventLog(cfg)
		}
	}
	e.updateBound()
	return e
}

// updateBound sets the f in force from the PEs known alive.
func (e *engine) updateBound() {
	e.bound = e.failures
	if e.pes > 0 {
		e.bound = min(e.failures, max(e.pes-len(e.failed)-1, 0))
	}
}

func (e *engine) Kind() Kind { return e.kind }
func (e *engine) PE() PEID   { return e.pe }

func (e *engine) logs() bool { return e.kind != KindNone }

// Logged: see Protocol. A task a migration brought here since the last
// checkpoint rolls back with the tasks of the PE it left if that PE fails
// before the checkpoint after the migration commits (the coordinator
// counts it as that PE's task), while the tasks here go on: what they
// sent it here must be in their log.
func (e *engine) Logged(from TaskID, toPE PEID, to TaskID) bool {
	if !e.logs() {
		return false
	}
	if toPE != e.pe {
		return true
	}
	_, fromMoved := e.movedIn[from]
	_, toMoved := e.movedIn[to]
	return fromMoved || toMoved
}

func (e *engine) needsDeterminant(a commutative.Annotation) bool {
	switch e.kind {
	case KindFullDet:
		return true
	case KindPartialDet:
		return a.NeedsDeterminant()
	}
	return false
}

func (e *engine) HostTask(task TaskID) {
	e.place(task, &hostedTask{counters: commutative.NewTaskState(task)})
}

func (e *engine) RestoreTask(cp TaskCheckpoint, survivors []PEID) {
	t := &hostedTask{counters: cp.Counters}
	for _, d := range cp.Requires {
		t.addRequirement(d)
	}
	for _, id := range cp.Received {
		t.received.add(id)
	}
	if e.logs() {
		t.await(survivors)
		// At least one failure this PE has not been notified of yet;
		// FailureNotice sets the exact epoch.
		t.epoch = uint32(len(e.failed)) + 1
	}
	e.place(cp.Counters.Task, t)
	e.refreshReplayEnd(cp.Counters.Task)
}

func (e *engine) place(task TaskID, t *hostedTask) {
	if _, ok := e.tasks[task]; ok {
		panic(fmt.Sprintf("logging: pe%d already hosts task %d", e.pe, task))
	}
	t.orderFree = e.orderFree != nil && e.orderFree(task)
	e.tasks[task] = t
	if stored := e.determinants.of(task); stored != nil {
		stored.host = t
		if e.determinants.lastRSN(task) > t.replayEnd {
			// Determinants of the task stored before it came here (a
			// migration during its replay): storeReceived keeps a
			// hosted task's replay end at least the last RSN stored
			// for it.
			e.refreshReplayEnd(task)
		}
	}
	pending := e.unhosted[task]
	delete(e.unhosted, task)
	for _, env := range pending {
		e.Arrive(env)
	}
}

func (e *engine) task(id TaskID) *hostedTask {
	t, ok := e.tasks[id]
	if !ok {
		panic(fmt.Sprintf("logging: pe%d does not host task %d", e.pe, id))
	}
	return t
}

func (e *engine) Send(from TaskID, toPE PEID, msg Message) MessageID {
	sender := e.task(from)
	msg.ID = sender.counters.NextSendID()
	msg.Requires = nil
	if e.kind == KindPartialDet {
		if !sender.orderFree {
			e.noteOwnProgress(from, sender)
		}
		msg.Requires = slices.Clone(sender.requires)
	}
	e.stats.Sent++
	if e.Logged(from, toPE, msg.To) {
		if msg.Value != nil && e.values == nil {
			panic(fmt.Sprintf("logging: pe%d: a message with a value to log and no Config.Values", e.pe))
		}
		if from != e.lastSender {
			e.log.forget() // another task's sends share nothing with these
			e.lastSender = from
		}
		var shared int
		msg, shared = e.log.add(msg, toPE, e.values)
		size := msg.wireSize()
		// The log's size and LoggedBytes count a payload shared with
		// the message before (a multicast's, see senderLog.add) once:
		// it is the memory the log holds. So does the quota, whose
		// dumps carry it once too (logged).
		e.logBytes += size - shared
		if e.quota == nil {
			e.stats.PeakLogBytes = max(e.stats.PeakLogBytes, e.logBytes)
		}
		e.loggedCount++
		e.stats.Logged++
		e.stats.LoggedBytes += size - shared
		e.logged(size)
	}
	e.emitMessage(toPE, msg, false)
	return msg.ID
}

// sharePayloadMin is the smallest payload the sender log compares with
// the one logged before it, to share it (senderLog.add).
const sharePayloadMin = 64

// emitMessage queues an application envelope. The send may depend on any
// determinant and progress record this PE still has to make stable; the
// envelope carries those an earlier envelope of the same Ready to toPE
// does not (see piggybackFor).
func (e *engine) emitMessage(toPE PEID, msg Message, replayed bool) {
	env := Envelope{Kind: EnvelopeMessage, From: e.pe, To: toPE, Message: msg, Replayed: replayed}
	if toPE != e.pe {
		slots := len(e.unacked.slots)
		env.Determinants, env.Progress = e.piggybackFor(toPE)
		if len(env.Determinants) > 0 && !e.eventLogged() {
			env.Carry = e.unacked.add(toPE, slots)
		} else {
			e.unacked.slots = e.unacked.slots[:slots]
		}
		e.stats.ProgressRecords += len(env.Progress)
		e.stats.PiggybackedDeterminants += len(env.Determinants)
		e.stats.RemoteEnvelopes++
		e.stats.PiggybackedBytes += env.PiggybackBytes()
	}
	e.ready.Envelopes = append(e.ready.Envelopes, env)
}

// piggybackFor returns the unstable determinants and progress records an
// envelope to toPE must carry: those not already carried to toPE by an
// earlier envelope of the same Ready. The caller delivers a Ready's
// envelopes for one PE together and in order (one transport payload), so
// the first one carries them for all, and a later one only the records
// made (or weakened) since the previous one: e.madeUnstable and e.updated
// from the positions it reached. A later envelope costs O(records made
// since), not O(unstable records).
func (e *engine) piggybackFor(toPE PEID) ([]Determinant, []Progress) {
	if e.carried == nil {
		e.carried = map[PEID]carriedUpTo{}
	}
	from, ok := e.carried[toPE]
	e.carried[toPE] = carriedUpTo{determinants: len(e.madeUnstable), progress: len(e.updated)}
	if !ok {
		return e.piggyback(toPE), e.unstableProgress(toPE)
	}
	return e.determinantsSince(from.determinants, toPE), e.progressSince(from.progress, toPE)
}

// forgetCarried makes the next envelope to each PE carry every unstable
// record, as the first one of a Ready does.
func (e *engine) forgetCarried() {
	clear(e.carried)
	e.madeUnstable = e.madeUnstable[:0]
	e.updated = e.updated[:0]
}

// markUnstable queues a determinant that is not stable for piggybacking:
// on the first envelope of every Ready to each PE until it is stable, and
// on the next envelope of this Ready to each PE that already had one.
func (e *engine) markUnstable(d *storedDeterminant) {
	e.unstableNext++
	e.unstable = append(e.unstable, d.slot)
	e.unstableSeq = append(e.unstableSeq, e.unstableNext)
	if e.el != nil {
		e.el.noteUnstable(d.slot)
	}
	if len(e.carried) > 0 {
		e.madeUnstable = append(e.madeUnstable, d.slot)
	}
}

// unstableDropMin is the shortest unstable list Advance drops stable
// entries from.
const unstableDropMin = 1024

// dropStableEntries takes the entries of stable determinants out of
// e.unstable, as piggyback's walk over the whole list does, once the list
// has doubled since the last time (Advance calls it, between two
// Readies: never while a failure notice goes over the store). Under
// Config.Ordered the walks start from e.walked and drop nothing, and the
// list kept every determinant stored since the checkpoint (on LeanMD at 4
// PEs ~170,000 entries a PE, 2 MiB, and 6.8 MB allocated as it doubled),
// where a few thousand are unstable at any time. Numbers stay with their
// entries, so e.walked still names the same places.
func (e *engine) dropStableEntries() {
	if len(e.unstable) < max(e.unstableDropAt, unstableDropMin) {
		return
	}
	kept := 0
	for i, slot := range e.unstable {
		if !e.isStable(e.determinants.slab.at(slot)) {
			e.unstable[kept], e.unstableSeq[kept] = slot, e.unstableSeq[i]
			kept++
		}
	}
	e.unstable, e.unstableSeq = e.unstable[:kept], e.unstableSeq[:kept]
	e.unstableDropAt = max(2*kept, unstableDropMin)
}

// forgetWalked makes piggyback look at every entry of e.unstable again,
// for every PE: a failure took holders out and cleared carried bits.
func (e *engine) forgetWalked() {
	clear(e.walked[:])
}

// anyPE, given to piggyback as the destination, leaves in the
// determinants every PE already holds.
const anyPE = PEID(math.MinInt32)

// carriesTo reports whether a determinant that is not stable must ride to
// PE to: not if to is known to hold it (it sent it here, or acknowledged
// it), which it does until the next checkpoint or its failure (that
// takes it out of the holders), nor, when envelopes arrive in order
// (Config.Ordered), if it rode there already (sentTo). A PE that
// received a determinant from its creator would otherwise carry it back
// there on its next envelope, and a determinant acknowledged by a PE
// would ride to it again.
func (s *determinantStore) carriesTo(d *storedDeterminant, to PEID) bool {
	if uint32(to) < 64 {
		return (d.holders|d.carried)&(1<<uint32(to)) == 0
	}
	return to == anyPE || !s.holds(d, to)
}

// sentTo reports whether d rode to PE to since it was stored (under
// Config.Ordered; PEs from 64 on are not noted).
func (d *storedDeterminant) sentTo(to PEID) bool {
	return uint32(to) < 64 && d.carried&(1<<uint32(to)) != 0
}

// noteSent notes that d rides to PE to, under Config.Ordered.
func (e *engine) noteSent(d *storedDeterminant, to PEID) {
	if e.ordered && uint32(to) < 64 {
		d.carried |= 1 << uint32(to)
	}
}

// determinantsSince returns the determinants made unstable during this
// Ready, from position from of e.madeUnstable, that still are and that
// toPE does not hold. Each appears once: a record is added to
// e.madeUnstable when it is first stored, and a failure that makes
// determinants unstable again starts the Ready's carrying over
// (FailureNotice). Their slots go to e.unacked.slots, as piggyback's.
func (e *engine) determinantsSince(from int, toPE PEID) []Determinant {
	r := &e.carriedRecords
	start := len(r.determinants)
	for _, slot := range e.madeUnstable[from:] {
		if d := e.determinants.slab.at(slot); !e.isStable(d) && e.determinants.carriesTo(d, toPE) {
			r.determinants = append(r.determinants, e.determinants.determinant(d))
			e.unacked.slots = append(e.unacked.slots, slot)
			e.noteSent(d, toPE)
		}
	}
	return r.determinantsFrom(start)
}

// piggyback returns every determinant this PE still has to make stable
// that toPE does not hold (all of them with anyPE), in creation or
// arrival order. Under Config.Ordered it looks, for a PE below 64, only
// at the entries of e.unstable added since its last walk for that PE
// (e.walked); a walk over the whole list drops the entries that have
// become stable. It appends their slots to e.unacked.slots: emitMessage
// numbers the envelope that carries them (or takes the slots back).
//
// The slice returned is cut from e.carriedRecords: valid until the second
// Advance from now, as the Ready's.
func (e *engine) piggyback(toPE PEID) []Determinant {
	if len(e.unstable) == 0 {
		return nil
	}
	s := &e.determinants
	r := &e.carriedRecords
	start := len(r.determinants)
	cursor := e.ordered && uint32(toPE) < 64
	from := 0
	if cursor && e.walked[toPE] != 0 {
		from, _ = slices.BinarySearch(e.unstableSeq, e.walked[toPE])
	}
	if from == 0 {
		kept := 0
		for i, slot := range e.unstable {
			d := s.slab.at(slot)
			if e.isStable(d) {
				continue
			}
			e.unstable[kept], e.unstableSeq[kept] = slot, e.unstableSeq[i]
			kept++
			if s.carriesTo(d, toPE) {
				r.determinants = append(r.determinants, s.determinant(d))
				e.unacked.slots = append(e.unacked.slots, slot)
				if toPE != anyPE {
					e.noteSent(d, toPE)
				}
			}
		}
		e.unstable, e.unstableSeq = e.unstable[:kept], e.unstableSeq[:kept]
	} else {
		// cursor: toPE is below 64 (carriesTo, noteSent by its bit).
		bit := uint64(1) << uint32(toPE)
		for _, slot := range e.unstable[from:] {
			if d := s.slab.at(slot); (d.holders|d.carried)&bit == 0 && !e.isStable(d) {
				r.determinants = append(r.determinants, s.determinant(d))
				e.unacked.slots = append(e.unacked.slots, slot)
				d.carried |= bit
			}
		}
	}
	if cursor {
		e.walked[toPE] = e.unstableNext + 1
	}
	return r.determinantsFrom(start)
}

// noteOwnProgress notes a send of hosted task t: its progress record is
// its RSN now. A handler's sends after its first find the record already
// there (t.progress), without a lookup.
func (e *engine) noteOwnProgress(task TaskID, t *hostedTask) {
	if p := t.progress; p != nil && p.rsn >= t.counters.RSN {
		return
	}
	e.noteProgress(Progress{Task: task, RSN: t.counters.RSN}, e.pe)
	if t.progress == nil {
		t.progress = e.progress[task]
	}
}

// noteProgress keeps p if it is news; from is the PE it came from (this
// PE for its own tasks' progress), which holds it too.
func (e *engine) noteProgress(p Progress, from PEID) {
	received := from != e.pe
	stored, ok := e.progress[p.Task]
	if ok && stored.rsn > p.RSN {
		return
	}
	if ok && stored.rsn == p.RSN {
		if received {
			// Held by from and, now, by this PE.
			if !slices.Contains(stored.holders, from) {
				stored.holders = append(stored.holders, from)
			}
			if !slices.Contains(stored.holders, e.pe) {
				stored.holders = append(stored.holders, e.pe)
			}
		}
		if e.el != nil && received && !e.progressStable(stored) && e.el.stable(p.Creator, p.Seq) {
			stored.creator, stored.seq = p.Creator, p.Seq
		}
		return
	}
	if !received && p.Seq == 0 {
		e.logProgress(&p)
	}
	if !ok {
		e.progressTasks = append(e.progressTasks, p.Task)
		stored = &storedProgress{}
		e.progress[p.Task] = stored
	}
	// The record is replaced in place: a task's own progress changes on
	// every send.
	stored.rsn = p.RSN
	stored.creator, stored.seq, stored.logged = p.Creator, p.Seq, false
	if e.el != nil {
		e.el.noteProgress(p.Task)
	}
	stored.holders = stored.holders[:0]
	if received {
		stored.holders = append(stored.holders, from)
	}
	stored.holders = append(stored.holders, e.pe)
	e.markMaybeUnstable(p.Task, stored)
	if t, ok := e.tasks[p.Task]; ok && p.RSN > t.replayEnd {
		t.replayEnd = p.RSN
	}
}

// progressSince returns the progress records made or weakened during this
// Ready, from position from of e.updated, that are still the latest and
// unstable, and that toPE does not hold.
func (e *engine) progressSince(from int, toPE PEID) []Progress {
	r := &e.carriedRecords
	start := len(r.progress)
	for _, u := range e.updated[from:] {
		// A task updated twice in one Ready is carried once, at its
		// latest RSN (the one stored).
		if p, ok := e.progress[u.Task]; ok && p.rsn == u.RSN && !e.progressStable(p) && progressCarriesTo(p, toPE) {
			r.progress = append(r.progress, progressOf(u.Task, p))
		}
	}
	if out := r.progress[start:]; len(out) > 1 {
		slices.SortFunc(out, func(a, b Progress) int { return cmp.Compare(a.Task, b.Task) })
		r.progress = r.progress[:start+len(slices.CompactFunc(out, func(a, b Progress) bool { return a.Task == b.Task }))]
	}
	return r.progressFrom(start)
}

// unstableProgress returns every progress record this PE still has to
// make stable that toPE does not hold (all of them with anyPE), sorted by
// task, cut from e.carriedRecords as piggyback's.
func (e *engine) unstableProgress(toPE PEID) []Progress {
	r := &e.carriedRecords
	start := len(r.progress)
	e.maybeUnstable, e.mergeBuf = sortmerge.Into(e.maybeUnstable, e.maybeSorted, e.mergeBuf)
	kept := e.maybeUnstable[:0]
	for _, task := range e.maybeUnstable {
		p, ok := e.progress[task]
		if ok && !e.progressStable(p) {
			kept = append(kept, task)
			if progressCarriesTo(p, toPE) {
				r.progress = append(r.progress, progressOf(task, p))
			}
		} else if ok {
			p.maybe = false
		}
	}
	e.maybeUnstable, e.maybeSorted = kept, len(kept)
	return r.progressFrom(start)
}

// markMaybeUnstable notes that task's progress record p (e.progress[task])
// may have become unstable.
func (e *engine) markMaybeUnstable(task TaskID, p *storedProgress) {
	if len(e.carried) > 0 {
		e.updated = append(e.updated, Progress{Task: task, RSN: p.rsn})
	}
	if !p.maybe {
		p.maybe = true
		e.maybeUnstable = append(e.maybeUnstable, task)
	}
}

func (e *engine) sortedProgressTasks() []TaskID {
	e.progressTasks, e.mergeBuf = sortmerge.Into(e.progressTasks, e.progressSorted, e.mergeBuf)
	e.progressSorted = len(e.progressTasks)
	return e.progressTasks
}

// eventLogged reports whether the event logger decides stability: it is
// configured and a logger is left. With every logger dead the protocol's
// own rule is back (records stored on f+1 PEs, counted from receivers'
// acknowledgements), so that the records stop riding on envelopes once
// enough PEs hold them, as without an event logger; otherwise every
// record made until the next checkpoint rode on every envelope, which
// grows with the square of the job's length (with no periodic
// checkpoint, until its end).
func (e *engine) eventLogged() bool { return e.el != nil && e.el.target >= 0 }

// isStable reports whether d survives the failures still allowed (the
// bound): it is stored on one PE more than that.
// Under an event logger: a live logger acknowledged it.
func (e *engine) isStable(d *storedDeterminant) bool {
	if e.eventLogged() {
		stamp := e.determinants.stamp(d.slot)
		return e.el.stable(stamp.creator, stamp.seq)
	}
	return int(d.holderCount) > e.bound
}

// progressCarriesTo is carriesTo for a progress record: a PE among its
// holders (it sent the record here, or acknowledged it) keeps it until
// the next checkpoint or its failure; a newer record of the task starts
// its holders over. A record received from another PE would otherwise
// ride straight back to it.
func progressCarriesTo(p *storedProgress, to PEID) bool {
	return to == anyPE || !slices.Contains(p.holders, to)
}

// progressStable is isStable for a progress record.
func (e *engine) progressStable(p *storedProgress) bool {
	if e.eventLogged() {
		return e.el.stable(p.creator, p.seq)
	}
	return len(p.holders) > e.bound
}

// progressOf is task's stored record as it travels.
func progressOf(task TaskID, p *storedProgress) Progress {
	return Progress{Task: task, RSN: p.rsn, Creator: p.creator, Seq: p.seq}
}

func (e *engine) Arrive(env Envelope) {
	switch env.Kind {
	case EnvelopeAck:
		if env.Carry != 0 && !slices.Contains(e.failed, env.From) {
			s := &e.determinants
			for _, slot := range e.unacked.take(env.Carry) {
				if d := s.slab.at(slot); uint32(env.From) >= 64 || d.holders&(1<<uint32(env.From)) == 0 {
					s.addHolder(d, env.From)
				}
			}
			e.unacked.advance()
		}
		for _, d := range env.Determinants {
			if stored, ok := e.determinants.get(d.key()); ok {
				e.determinants.addHolder(stored, env.From)
			}
		}
		for _, p := range env.Progress {
			if stored, ok := e.progress[p.Task]; ok && stored.rsn == p.RSN && !slices.Contains(stored.holders, env.From) {
				stored.holders = append(stored.holders, env.From)
			}
		}
		return
	case EnvelopeRecovery:
		// The records are this PE's to hold whether or not the task is
		// here yet: the first recovery envelope from a survivor to this
		// PE carries the unstable records the others depend on, for every
		// task (FailureNotice).
		e.storeReceived(env.Determinants, env.From)
		for _, p := range env.Progress {
			e.noteProgress(p, env.From)
		}
		t, ok := e.tasks[env.Task]
		if !ok {
			env.Determinants, env.Progress = nil, nil
			e.unhosted[env.Task] = append(e.unhosted[env.Task], env)
			return
		}
		t.noteRecovery(env.From, env.Epoch)
		e.refreshReplayEnd(env.Task)
		return
	case EnvelopeMessage:
	default:
		panic(fmt.Sprintf("logging: pe%d: envelope kind %d", e.pe, env.Kind))
	}
	e.takeRecords(env)
	t, ok := e.tasks[env.Message.To]
	if !ok {
		// The caller reuses the determinants' array (see Arrive).
		env.Determinants = slices.Clone(env.Determinants)
		e.unhosted[env.Message.To] = append(e.unhosted[env.Message.To], env)
		return
	}
	e.stats.Received++
	id := env.Message.ID
	if t.received.contains(id) || t.isBuffered(id) {
		e.stats.Duplicates++
		return
	}
	t.pushBuffer(env.Message)
}

// bufferIndexMin is the buffer length from which a task indexes the
// identities of its buffered messages: below it a scan is cheaper than a
// map, above it the scans of every arrival would cost the square of the
// buffer's length.
const bufferIndexMin = 32

// isBuffered reports whether a message with identity id waits in the
// task's buffer.
func (t *hostedTask) isBuffered(id MessageID) bool {
	if t.buffered != nil {
		_, ok := t.buffered[id]
		return ok
	}
	return slices.ContainsFunc(t.buffer, func(m Message) bool { return m.ID == id })
}

// pushBuffer appends m to the task's buffer, indexing it once the buffer
// is long.
func (t *hostedTask) pushBuffer(m Message) {
	if len(t.buffer) == 0 {
		t.buffer = t.bufferArray[:0] // takeBuffered cleared what it took
	} else if len(t.buffer) == cap(t.buffer) && len(t.buffer) < cap(t.bufferArray) {
		// The buffer reached the end of its array, from which
		// takeBuffered took messages at the front: the messages move back
		// to its start, rather than into a new array (a task whose buffer
		// never empties, as one that gets the next step's messages before
		// it has handled this one's, would allocate one every few
		// messages).
		n := len(t.buffer)
		moved := t.bufferArray[:n]
		copy(moved, t.buffer)
		clear(t.buffer[max(0, n-(cap(t.bufferArray)-cap(t.buffer))):])
		t.buffer = moved
	}
	grow := len(t.buffer) == cap(t.buffer)
	t.buffer = append(t.buffer, m)
	if grow {
		t.bufferArray = nil
		if cap(t.buffer) <= bufferKeepMax {
			t.bufferArray = t.buffer[:0]
		}
	}
	switch {
	case t.buffered != nil:
		t.buffered[m.ID] = struct{}{}
	case len(t.buffer) >= bufferIndexMin:
		t.buffered = make(map[MessageID]struct{}, 2*len(t.buffer))
		for _, b := range t.buffer {
			t.buffered[b.ID] = struct{}{}
		}
	}
}

// bufferKeepMax bounds the buffer array a task keeps once emptied.
const bufferKeepMax = 64

// takeBuffered removes and returns the buffer's message at index i. The
// first message, the usual case, goes without moving the others: the
// buffer is resliced past it (append reallocates it when its end is
// reached, so that the array does not grow without bound), and a task that
// drains a long buffer from the front pays once per message, not once per
// message still waiting.
func (t *hostedTask) takeBuffered(i int) Message {
	m := t.buffer[i]
	if i == 0 {
		t.buffer[0] = Message{}
		t.buffer = t.buffer[1:]
	} else {
		t.buffer = slices.Delete(t.buffer, i, i+1)
	}
	if t.buffered != nil {
		delete(t.buffered, m.ID)
		if len(t.buffer) < bufferIndexMin/2 {
			t.buffered = nil
		}
	}
	return m
}

// takeRecords stores the determinants and progress records a message
// envelope carries, and acknowledges them to its sender.
func (e *engine) takeRecords(env Envelope) {
	for _, p := range env.Progress {
		e.noteProgress(p, env.From)
	}
	if len(env.Determinants) > 0 || len(env.Progress) > 0 {
		e.storeReceived(env.Determinants, env.From)
		if !e.eventLogged() {
			// Under an event logger stability comes from the loggers:
			// holders are not counted.
			e.ready.Envelopes = append(e.ready.Envelopes, Envelope{
				Kind: EnvelopeAck, From: e.pe, To: env.From, Carry: env.Carry, Progress: env.Progress,
			})
		}
	}
}

func (e *engine) Forward(env Envelope, to PEID) {
	if env.Kind != EnvelopeMessage || to == e.pe {
		panic(fmt.Sprintf("logging: pe%d: forward of a %d envelope for task %d to pe%d", e.pe, env.Kind, env.Message.To, to))
	}
	e.takeRecords(env)
	e.stats.Forwarded++
	e.emitMessage(to, env.Message, env.Replayed)
}

// storeReceived keeps determinants that came from PE from, which holds
// them too: a determinant received is stored on (at least) two PEs. One
// already stored gains from as a holder. A new one of a task hosted here
// may extend its replay (refreshReplayEnd); one already stored cannot
// (a hosted task's replayEnd is at least the last RSN stored for it).
func (e *engine) storeReceived(ds []Determinant, from PEID) {
	s := &e.determinants
	for i := range ds {
		d := &ds[i]
		t := s.of(d.Receiver)
		if t != nil {
			if j, ok := t.find(d.RSN); ok {
				stored := s.slab.at(t.entries[j].slot)
				if !s.names(stored, d.Message) {
					panic(fmt.Sprintf("logging: pe%d holds %v and receives %v for the same position", e.pe, s.determinant(stored), *d))
				}
				if from != e.pe && (uint32(from) >= 64 || stored.holders&(1<<uint32(from)) == 0) {
					s.addHolder(stored, from)
				}
				continue
			}
		} else {
			t = e.storedFor(d.Receiver)
		}
		var stored *storedDeterminant
		if from == e.pe {
			stored = e.store(t, *d, e.pe)
		} else {
			stored = e.store(t, *d, from, e.pe)
		}
		if !e.isStable(stored) {
			e.markUnstable(stored)
		}
		if h := t.host; h != nil && d.RSN > h.replayEnd {
			e.refreshReplayEnd(d.Receiver)
		}
	}
}

// storedFor returns receiver's determinants in the store, adding the
// task, with its host if this PE hosts it, when the store has none.
func (e *engine) storedFor(receiver TaskID) *taskDeterminants {
	if t := e.determinants.of(receiver); t != nil {
		return t
	}
	t := e.determinants.newTask(receiver)
	t.host = e.tasks[receiver]
	return t
}

// store keeps a determinant the PE does not hold yet, with holders as
// its holders (indexRecorded indexes it when asked); t is its receiver's
// determinants (storedFor).
func (e *engine) store(t *taskDeterminants, d Determinant, holders ...PEID) *storedDeterminant {
	stored, _ := e.determinants.add(t, d, holders...)
	return stored
}

// indexRecorded brings recordedAt up to date with the determinants
// stored since it was last called: the slab's slots from e.indexed on.
func (e *engine) indexRecorded() {
	n := e.determinants.slab.len()
	for slot := e.indexed; slot < n; slot++ {
		d := e.determinants.slab.at(slot)
		received := receivedMessage{d.receiver, e.determinants.message(d)}
		e.recordedAt[received] = max(e.recordedAt[received], d.rsn)
	}
	e.indexed = n
}

// refreshReplayEnd recomputes the last recorded reception position of a
// hosted task.
func (e *engine) refreshReplayEnd(task TaskID) {
	t := e.tasks[task]
	end := max(t.counters.RSN, e.determinants.lastRSN(task))
	if p, ok := e.progress[task]; ok && p.rsn > end {
		end = p.rsn
	}
	t.replayEnd = end
}

func (e *engine) NextDelivery(task TaskID, admits func(Message) bool) (Delivery, bool) {
	t := e.task(task)
	if t.counters.InReception() {
		panic(fmt.Sprintf("logging: pe%d: NextDelivery for task %d before EndHandler", e.pe, task))
	}
	if len(t.awaiting) > 0 {
		return Delivery{}, false
	}
	position := t.counters.RSN + 1
	replaying := position <= t.replayEnd
	var recorded *storedDeterminant
	if replaying {
		recorded, _ = e.determinants.get(determinantKey{task, position})
	}
	for i, m := range t.buffer {
		if !t.counters.Admits(m.Annotation, m.RegionKey()) || !admits(m) || !dependenciesMet(task, t, m) {
			continue
		}
		if recorded != nil {
			if !e.determinants.names(recorded, m.ID) {
				continue
			}
		} else if replaying && (e.isPinned(task, position, m.ID) ||
			(e.kind == KindPartialDet && m.Annotation.NeedsDeterminant())) {
			// An order-dependent message without a determinant here
			// waits for the end of replay; one recorded later waits for
			// its position.
			continue
		}
		rival, ambiguous := Message{}, false
		if e.kind == KindPartialDet && recorded == nil && !t.counters.Region.Open {
			rival, ambiguous = e.rivalOf(task, t, m, t.buffer[i+1:], admits)
		}
		t.takeBuffered(i)
		d := e.deliver(task, t, m)
		d.Rival, d.Ambiguous = rival, ambiguous
		return d, true
	}
	return Delivery{}, false
}

// rivalOf looks, among the buffered messages after m, for one without a
// determinant that task could handle now instead of m and that is not of
// m's region: two such messages admissible at once means the program does
// not fix their order, so without a determinant a replay could take them
// the other way round and every send after them would change identity.
// Only messages outside an open region are checked (inside one, region
// isolation admits the region's own messages only), and only while the
// buffer holds more than m, so the forward path pays one scan of the
// waiting messages per delivery.
func (e *engine) rivalOf(task TaskID, t *hostedTask, m Message, rest []Message, admits func(Message) bool) (Message, bool) {
	if m.Annotation.NeedsDeterminant() {
		return Message{}, false
	}
	region := m.Annotation.Order == commutative.Commutative
	for _, other := range rest {
		if other.Annotation.NeedsDeterminant() {
			continue
		}
		if region && other.Annotation.Order == commutative.Commutative && other.RegionKey() == m.RegionKey() {
			continue
		}
		if t.counters.Admits(other.Annotation, other.RegionKey()) && admits(other) && dependenciesMet(task, t, other) {
			return other, true
		}
	}
	return Message{}, false
}

// isPinned reports whether message id has a recorded position after
// position in task's reception sequence.
func (e *engine) isPinned(task TaskID, position uint64, id MessageID) bool {
	e.indexRecorded()
	rsn, ok := e.recordedAt[receivedMessage{task, id}]
	return ok && rsn > position && rsn <= e.tasks[task].replayEnd
}

// dependenciesMet reports whether task has handled every region message
// that m's send causally follows (always true outside replay).
func dependenciesMet(task TaskID, t *hostedTask, m Message) bool {
	for _, d := range m.Requires {
		if d.Task == task && !t.received.contains(d.Trigger) {
			return false
		}
	}
	if trigger, _, ok := m.ID.CPI.Trigger(); ok && m.ID.Sender == task {
		if !t.received.contains(trigger) {
			return false
		}
	}
	return true
}

// addRequirement adds d to the task's sorted causal past.
func (t *hostedTask) addRequirement(d Dependency) {
	i, found := slices.BinarySearchFunc(t.requires, d, Dependency.compare)
	if !found {
		t.requires = slices.Insert(t.requires, i, d)
	}
}

func (e *engine) deliver(task TaskID, t *hostedTask, m Message) Delivery {
	if t.orderFree && m.Annotation.NeedsDeterminant() {
		panic(fmt.Sprintf("logging: pe%d: order-dependent message %v for task %d, which Config.OrderFree says takes none", e.pe, m.ID, task))
	}
	rsn := t.counters.BeginReception(m.ID, m.Annotation, m.RegionKey())
	t.received.add(m.ID)
	if e.kind == KindPartialDet {
		for _, d := range m.Requires {
			t.addRequirement(d)
		}
		if trigger, _, ok := m.ID.CPI.Trigger(); ok {
			t.addRequirement(Dependency{Task: m.ID.Sender, Trigger: trigger})
		}
	}
	// Past the replay end the store holds nothing at rsn (replayEnd is
	// at least the last RSN stored for the task): no look-up.
	var stored *storedDeterminant
	if rsn <= t.replayEnd {
		stored, _ = e.determinants.get(determinantKey{task, rsn})
	}
	if stored != nil {
		if !e.determinants.names(stored, m.ID) {
			panic(fmt.Sprintf("logging: pe%d: replay of task %d diverged at RSN %d: recorded %v, delivering %v",
				e.pe, task, rsn, e.determinants.message(stored), m.ID))
		}
	} else if e.needsDeterminant(m.Annotation) {
		d := Determinant{Message: m.ID, Receiver: task, RSN: rsn}
		e.logDeterminant(&d)
		e.markUnstable(e.store(e.storedFor(task), d, e.pe))
		e.stats.Determinants++
		if e.reportDeterminants {
			e.ready.Determinants = append(e.ready.Determinants, NewDeterminant{Determinant: d, Creator: e.pe})
		}
	}
	return Delivery{Message: m, RSN: rsn}
}

func (e *engine) EndHandler(task TaskID) bool {
	// Only the sends of one handler share a payload in the log (a
	// multicast): which handlers run in one Ready depends on timing,
	// and the log's counts must not.
	e.log.forget()
	return e.task(task).counters.EndReception()
}

func (e *engine) Checkpoint() []TaskCheckpoint {
	ids := e.hostedIDs()
	out := make([]TaskCheckpoint, 0, len(ids))
	for _, id := range ids {
		t := e.tasks[id]
		if t.counters.InReception() || t.counters.Region.Open {
			panic(fmt.Sprintf("logging: pe%d: checkpoint of task %d inside a reception or region", e.pe, id))
		}
		if len(t.buffer) > 0 {
			panic(fmt.Sprintf("logging: pe%d: checkpoint with %d messages buffered for task %d", e.pe, len(t.buffer), id))
		}
		t.received.reset()
		t.requires = nil
		t.progress = nil
		t.replayEnd = t.counters.RSN
		out = append(out, TaskCheckpoint{Counters: t.counters})
	}
	clear(e.movedIn)
	e.log.reset()
	e.quotaCheckpoint()
	e.logBytes, e.loggedCount = 0, 0
	e.determinants.reset()
	clear(e.recordedAt)
	e.indexed = 0
	clear(e.progress)
	e.progressTasks, e.progressSorted = e.progressTasks[:0], 0
	e.maybeUnstable, e.maybeSorted = e.maybeUnstable[:0], 0
	e.unstable, e.unstableSeq = e.unstable[:0], e.unstableSeq[:0]
	e.forgetWalked()
	e.unacked.reset()
	e.relocated = nil
	e.eventLogCheckpoint()
	return out
}

func (e *engine) hostedIDs() []TaskID {
	ids := make([]TaskID, 0, len(e.tasks))
	for id := range e.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (e *engine) FailureNotice(failed []PEID, relocated []Relocation) {
	if e.kind == KindNone {
		e.ready.RollbackAll = true
		return
	}
	isFailed := func(p PEID) bool { return slices.Contains(failed, p) }
	// Determinants and progress records this failure makes unstable again
	// may already have been carried to a PE earlier in this Ready, or be
	// listed as made during it: start the Ready's carrying over, so that
	// the next envelope to each PE carries every unstable record (once).
	e.forgetCarried()
	for _, p := range failed {
		if !slices.Contains(e.failed, p) {
			e.failed = append(e.failed, p)
		}
	}
	e.updateBound()
	e.unacked.dropTo(isFailed)
	e.forgetWalked()
	queued := e.queuedUnstable()
	var failedBits uint64
	for _, p := range failed {
		if uint32(p) < 64 {
			failedBits |= 1 << uint32(p)
		}
	}
	for d := range e.determinants.all() {
		e.determinants.dropHolders(d, failedBits, isFailed)
		d.carried &^= failedBits
		if !e.isStable(d) && !queued[d.slot] {
			e.markUnstable(d)
		}
	}
	for _, task := range e.sortedProgressTasks() {
		p := e.progress[task]
		p.holders = slices.DeleteFunc(p.holders, isFailed)
		e.markMaybeUnstable(task, p)
	}
	for _, id := range e.hostedIDs() {
		t := e.tasks[id]
		for _, p := range failed {
			delete(t.awaiting, p)
		}
	}
	var live []PEID
	for p := range PEID(e.pes) {
		if !slices.Contains(e.failed, p) {
			live = append(live, p)
		}
	}
	// A task restored by an earlier failure may still miss determinants
	// that only the newly failed PEs had sent it, or that reached another
	// survivor after that survivor's recovery envelope: every survivor
	// sends all restored tasks a fresh recovery envelope, and their hosts
	// wait for them again.
	restoredNow := make(map[TaskID]bool, len(relocated))
	for _, r := range relocated {
		restoredNow[r.Task] = true
	}
	newlyRestored := func(task TaskID) bool { return restoredNow[task] }
	epoch := uint32(len(e.failed))
	for _, r := range e.relocated {
		if t, ok := e.tasks[r.Task]; ok && r.PE == e.pe && !newlyRestored(r.Task) {
			t.await(live)
			t.epoch = epoch
			t.dropAwaited()
		}
	}
	var restoredHere []TaskID
	for _, r := range relocated {
		if t, ok := e.tasks[r.Task]; ok && r.PE == e.pe {
			t.epoch = epoch
			t.dropAwaited()
			restoredHere = append(restoredHere, r.Task)
		}
	}
	e.fetchFor(restoredHere, epoch)
	at := make(map[TaskID]int, len(e.relocated))
	for i, old := range e.relocated {
		at[old.Task] = i
	}
	for _, r := range relocated {
		if i, ok := at[r.Task]; ok {
			e.relocated[i] = r
		} else {
			at[r.Task] = len(e.relocated)
			e.relocated = append(e.relocated, r)
		}
	}
	slices.SortFunc(e.relocated, func(a, b Relocation) int { return cmp.Compare(a.Task, b.Task) })
	resend := map[TaskID][]int{} // log positions, per newly restored task
	for _, r := range e.relocated {
		if newlyRestored(r.Task) {
			resend[r.Task] = nil
		}
	}
	for i := range e.log.len() {
		to := e.log.entry(i).to
		if ix, ok := resend[to]; ok {
			resend[to] = append(ix, i)
		}
	}
	// The unstable records the first recovery envelope to each other PE
	// carries (nothing below changes them).
	slots := len(e.unacked.slots)
	unstableDets, unstableProg := e.piggyback(anyPE), e.unstableProgress(anyPE)
	e.unacked.slots = e.unacked.slots[:slots] // not acknowledged
	carriedTo := map[PEID]bool{}
	for _, r := range e.relocated {
		var batch []Determinant
		for d := range e.determinants.ofTask(r.Task) {
			batch = append(batch, e.determinants.determinant(d))
		}
		recovery := Envelope{Kind: EnvelopeRecovery, From: e.pe, To: r.PE, Task: r.Task, Epoch: epoch}
		if p, ok := e.progress[r.Task]; ok {
			recovery.Progress = []Progress{progressOf(r.Task, p)}
		}
		if r.PE != e.pe && !carriedTo[r.PE] {
			// The batch depends on the determinants of its senders'
			// receptions: like any envelope it carries the unstable ones,
			// or a second failure could leave the restored task's host
			// with a determinant that names a message its restored sender
			// never sends again. The envelopes of one Ready to a PE
			// arrive together and in order, and the host stores a
			// recovery envelope's records as it arrives: the first one
			// to each PE carries them for all (carrying them on every
			// one would cost restored tasks times records).
			carriedTo[r.PE] = true
			for _, d := range unstableDets {
				if d.Receiver != r.Task {
					batch = append(batch, d)
				}
			}
			for _, p := range unstableProg {
				if p.Task != r.Task {
					recovery.Progress = append(recovery.Progress, p)
				}
			}
		}
		recovery.Determinants = batch
		e.ready.Envelopes = append(e.ready.Envelopes, recovery)
	}
	// The logs follow every recovery envelope, so that a restored task
	// starts replaying with what has arrived while the rest of the logs
	// are still on the way (its replay needs the determinants and the
	// replay bound, not the whole log).
	for _, r := range e.relocated {
		if !newlyRestored(r.Task) {
			continue
		}
		for _, i := range resend[r.Task] {
			if m, ok := e.resendable(i); ok {
				e.emitMessage(r.PE, m, true)
			}
		}
	}
	e.resendForwards(failed, newlyRestored)
}

// resendForwards sends again the logged messages that went to a failed PE
// for a task that was not there: the task had moved on, and the failed PE
// had to forward them, which it may not have done. Where the task lives
// comes from Config.Locate (without it nothing is sent). A copy that the
// failed PE did forward is a duplicate its receiver drops.
func (e *engine) resendForwards(failed []PEID, restored func(TaskID) bool) {
	if e.locate == nil {
		return
	}
	for i := range e.log.len() {
		en := e.log.entry(i)
		if !slices.Contains(failed, en.toPE) || restored(en.to) {
			continue
		}
		if to := e.locate(en.to); to >= 0 && !slices.Contains(e.failed, to) {
			if m, ok := e.resendable(i); ok {
				e.emitMessage(to, m, true)
			}
		}
	}
}

// queuedUnstable returns the slots in e.unstable, as a set.
func (e *engine) queuedUnstable() map[uint32]bool {
	queued := make(map[uint32]bool, len(e.unstable))
	for _, slot := range e.unstable {
		queued[slot] = true
	}
	return queued
}

func (e *engine) HoldsDeterminant(receiver TaskID, rsn uint64) bool {
	_, ok := e.determinants.get(determinantKey{receiver, rsn})
	return ok
}

func (e *engine) Ready() Ready {
	if e.el != nil {
		e.eventLogReady()
	}
	return e.ready
}

func (e *engine) Advance() {
	// The Ready just advanced past may still be read by the caller until
	// the next Advance; the one before it is done with and its arrays
	// (cleared of their references) serve the next Ready.
	// Only the used part holds references: past it, every entry was
	// cleared when its Ready was recycled before (clearing the whole
	// capacity, which one large Ready leaves for the rest of the run, made
	// every Advance cost as much as the largest Ready ever was).
	clear(e.spare.Envelopes)
	clear(e.spare.Determinants)
	next := Ready{Envelopes: e.spare.Envelopes[:0], Determinants: e.spare.Determinants[:0]}
	e.spare = e.ready
	e.ready = next
	if e.reuseRecords {
		e.spareRecords.reset()
		e.carriedRecords, e.spareRecords = e.spareRecords, e.carriedRecords
	} else {
		// The envelopes keep their records' arrays: the next Ready's
		// are new.
		e.carriedRecords = records{}
	}
	e.forgetCarried()
	e.log.forget()
	e.dropStableEntries()
}

func (e *engine) Stats() Stats {
	s := e.stats
	s.LogBytes = e.logBytes
	s.LoggedMessages = e.loggedCount
	s.StoredDeterminants = e.determinants.len()
	return s
}
