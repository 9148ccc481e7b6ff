package scheduler

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/internal/sortmerge"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/record"
	"github.com/gochare/gochare/scheduler/wire"
)

// Net is what a PE needs from the transport: reliable, ordered delivery of
// byte payloads to other PEs, and a way to run events on the PE's own
// goroutine. scheduler/transport implements it over protoactor-go remote.
type Net interface {
	// Send queues payload for PE to. Called only on the PE goroutine.
	Send(to int, payload []byte)
	// Flush pushes what Send queued.
	Flush()
	// Post runs Event(ev) on the PE goroutine later; safe from anywhere.
	Post(ev any)
	// Backlog is the number of bytes sent and not yet acknowledged.
	Backlog() int
}

// Control is how a PE reports to the job's coordinator, through the process
// that hosts it (the launcher's control connection, or job/inprocess).
type Control interface {
	// Output writes a line of job output: the seq-th line (from 0) that
	// task printed since it was created. A task that re-executes after a
	// failure prints the same lines again with the same numbers (the
	// count is part of its checkpoint), and the receiver writes each
	// (task, seq) once (job.OutputFilter).
	Output(task, seq uint64, line string)
	// Exit asks the launcher to end the job with status.
	Exit(status int)
	// Idle answers a quiescence probe: this PE has no work.
	Idle(st job.IdleStatus)
	// RequestQuiescence asks the launcher to detect quiescence and then
	// post QuiescenceDetected to this PE.
	RequestQuiescence()
	// CheckpointStaged reports that this PE staged its tasks for epoch.
	CheckpointStaged(epoch uint64, tasks, bytes int)
	// BuddyStored reports that this PE stored the copy of PE ward's
	// tasks: staged (a checkpoint under way) or adopted (ward re-sent its
	// committed copy in recovery generation).
	BuddyStored(epoch uint64, ward int, generation uint64)
	// Committed reports that this PE committed checkpoint epoch.
	Committed(epoch uint64)
	// DiskWritten reports this PE's checkpoint file.
	DiskWritten(epoch uint64, entry migrate.FileEntry, err error)
	// Restored reports that every task this PE had to restore is here,
	// and how far its tasks had got before the recovery began.
	Restored(generation uint64, tasks int, before job.Progress)
	// Reached answers WatchProgress.
	Reached(generation, step uint64)
	// Fail reports an error that stops the PE from taking part.
	Fail(err error)
	// Loads reports the load of this PE's sync tasks (CollectLoads).
	Loads(loads []migrate.TaskLoad)
	// Migrated reports that every task moved to this PE arrived.
	Migrated()
	// Progress answers ReportProgress: the handlers this PE has run.
	Progress(delivered uint64)
	// Diagnosis answers Diagnose: what this PE's tasks wait for.
	Diagnosis(report string)
}

// Config is what a PE is built from.
type Config struct {
	Rank, Size int
	JobID      uint64
	App        actor.App
	Args       []string
	// Protocol is the fault-tolerance protocol (logging.KindNone,
	// KindFullDet or KindPartialDet).
	Protocol logging.Kind
	Net      Net
	Control  Control
	Logger   *slog.Logger
	// Stderr receives Logf lines (defaults to io.Discard).
	Stderr io.Writer
	// SliceBudget is how many handlers a PE runs before it lets the
	// transport deliver more (default 256).
	SliceBudget int
	// MaxBacklog is the number of unacknowledged bytes above which the PE
	// stops running handlers until acknowledgements come (default 64 MiB).
	MaxBacklog int
	// CheckpointEvery is the sync period in steps: AtSync(step) is taken
	// when step+1 is a multiple of it (0: never).
	CheckpointEvery uint64
	// OnStep, if set, is called whenever a task offers a sync point, with
	// its step (failure injection uses it).
	OnStep func(step uint64)
	// MeasureLoad times every handler, for load balancing.
	MeasureLoad bool
	// Trace, if set, is told of every handler run: which handler of which
	// collection, when it started and how long it took.
	Trace func(collection, handler string, start time.Time, d time.Duration)
	// Observe, if set, is told of every task's history on this PE: its
	// creation, the records made of it and set into it, the messages it
	// sends and those it handles (see Observation). A check of a whole
	// run sets it (the simulator); nil in production.
	Observe func(Observation)
	// RecordDir, if set, is where the PE records what its tasks handle
	// and send, for gochare replay (recorder.go).
	RecordDir string
	// CheckAnnotations, if above 0, re-runs every completed commutative
	// region in that many other orders (seeded by JobID) on copies of the
	// task's state from before it, and stops the job at the first region
	// whose orders leave different states or sends
	// (checkannotations.go). 0 (the default) costs nothing.
	CheckAnnotations int
	// LogQuota, if above 0, bounds the memory of the sender log to that
	// many bytes by dumping its oldest entries to the job's Loggers
	// loggers through Dumps (quota.go). Under None nothing is logged.
	LogQuota int
	Loggers  int
	Dumps    DumpSink
	// DeadLoggers are the loggers dead before the job began.
	DeadLoggers []int
	// EventLogger makes the Loggers event loggers for the protocol's
	// records (FullDet, PartialDet), reached through EventLog
	// (eventlog.go).
	EventLogger bool
	EventLog    EventLogSink
	// Failures is the protocol's f (logging.Config.Failures): a record is
	// stable once f+1 PEs hold it. Every PE of a job and its coordinator
	// (job.Config.Failures) must have the same. 0: logging.DefaultFailures.
	Failures int
}

// What a PE accepts through Net.Post, besides the coordinator's events
// (job.Event, see events.go) and the records of a disk checkpoint
// (RestartFrom, DiskRecords).
type (
	// runSlice is posted by the PE to itself to handle queued work.
	runSlice struct{}
	// StatsRequest asks for the PE's counters, sent on Reply.
	StatsRequest struct{ Reply chan<- Stats }
)

// Errors reported for bad input; the PE drops the input and keeps running.
var (
	ErrMalformed     = errors.New("scheduler: malformed batch")
	ErrWrongJob      = errors.New("scheduler: batch from another job")
	ErrUnknownTarget = errors.New("scheduler: unknown collection or handler")
	ErrNoSuchElement = errors.New("scheduler: no such element here")
	ErrBadMessage    = errors.New("scheduler: message does not decode")
	ErrBadReduction  = errors.New("scheduler: inconsistent reduction")
)

// Errors that stop a PE, and with it the job: they are reported through
// Control.Fail, and the PE runs nothing more.
var (
	// ErrHandlerPanic reports a handler (or completion step, or
	// ResumeFromSync) that panicked; the error names the task and the
	// handler, and holds the panic's value and stack.
	ErrHandlerPanic = errors.New("scheduler: handler panicked")
	// ErrRuntimePanic reports a panic of the runtime itself on a PE.
	ErrRuntimePanic = errors.New("scheduler: runtime panicked")
	// ErrAmbiguousOrder reports two messages without a determinant that a
	// task could handle next, outside one region: the program does not fix
	// their order, so a replay after a failure could not follow it.
	ErrAmbiguousOrder = errors.New("scheduler: the program does not order two messages")
)

// Stats counts what a PE did.
type Stats struct {
	Sent, Received  uint64 // envelopes (quiescence counters)
	Delivered       uint64 // handler invocations
	BatchesSent     uint64
	BytesSent       uint64
	Dropped         uint64 // bad input dropped
	DroppedByReason map[string]uint64
	Restored        int    // failed PEs' tasks restored here
	RolledBack      int    // tasks of this PE rolled back to their checkpoint
	MigratedIn      int    // tasks moved here by load balancing
	MigratedOut     int    // tasks moved away
	Forwarded       uint64 // envelopes passed on to a task's new PE
	// Given counts the messages handed to a task of this PE as their
	// sender gave them, without being encoded (actor.Proxy.Give, give.go).
	Given uint64
	// PassedAgain counts the sync points a re-executing task passed by
	// itself, the job having passed them without a checkpoint
	// (job.Resume.Passed); not those the coordinator skipped ahead, which
	// every task passes by itself the first time (noteStop).
	PassedAgain int
	// RegionsChecked counts the commutative regions the annotation check
	// re-ran in other orders (Config.CheckAnnotations).
	RegionsChecked uint64
	// Protocol is the fault-tolerance protocol's own counters.
	Protocol logging.Stats
	// LogDumpedBytes are the bytes of log entries stored on loggers, and
	// LogBlocked the time handlers waited for room in the log, with a
	// log quota (Config.LogQuota).
	LogDumpedBytes int
	LogBlocked     time.Duration
	// LogFetchedBytes are the bytes of log entries fetched back from
	// loggers for recoveries.
	LogFetchedBytes int
}

// PE is one processing element: the tasks placed on it and its share of
// the fault-tolerance protocol. All its methods run on one goroutine (the
// transport's actor), so it needs no locks.
//
// Every message goes the same way: a handler's send is stamped and logged
// by the protocol (post), the protocol's Ready envelopes are batched per PE
// (transmit), an arriving envelope is checked and given to the protocol
// (Receive), and the protocol decides which message each task handles next
// (runSlice, invoke).
type PE struct {
	cfg Config
	job *actor.Job
	// events applies the coordinator's events (events.go).
	events eventHandler
	colls  []*collectionState
	log    *slog.Logger
	proto  logging.Protocol
	// postBuf is where post encodes a message for a logging protocol;
	// sendArena where it encodes the slice's messages that their batches
	// copy under None (marshalArena).
	postBuf   []byte
	sendArena []byte
	// partsNet and recycler are cfg.Net as those interfaces, or nil
	// (asserted once: an assertion to an interface costs a table
	// lookup, and the forward path asked several times a message).
	partsNet partsNet
	recycler recycler
	// headBuf is where flushTo puts a batch's bytes for a partsNet.
	headBuf []byte
	// Buffers of large messages marshalled under None (marshal.go):
	// lent to messages sent in the current slice, in the Net's hands,
	// free to reuse.
	lent, inNet, freeBufs [][]byte
	// owned are the received payloads the PE owns alone, by their first
	// byte, with their length and total (unmarshal.go); unmarshalBuf is
	// unmarshalAliasing's scratch.
	owned        map[*byte]int
	ownedBytes   int
	unmarshalBuf []byte
	// bytesFields finds generated messages' bytes fields for decodeInto.
	bytesFields bytesFields
	// spares are protobuf messages given and encoded, by handler, to
	// decode into (give.go); spareCount and spareBytes their number and
	// encoded size.
	spares                 map[uint32][]spare
	spareCount, spareBytes int
	// localFree are free buffers for payloads to tasks on this PE,
	// localFreeBytes their capacity; localLent the payloads
	// marshalled into them not delivered yet (marshal.go).
	localFree      [][]byte
	localFreeBytes int
	localLent      map[*byte]struct{}
	// largePayloads counts the envelopes of the Ready being sent that
	// share each large payload (transmit).
	largePayloads map[payloadKey]int
	// resumedBelow is the last Resume's Passed: one past the step of the
	// latest sync point the job passed without a checkpoint. autoResume
	// are tasks that reached such a sync point again and resume once the
	// code that reached it returns (syncpoint.go). stoppedAt holds the
	// steps of the sync points the local tasks waited at when a Resume
	// came (noteStop): one per sync point the job stopped at.
	resumedBelow uint64
	stoppedAt    map[uint64]struct{}
	// syncMaybe is false when no local task waits at a sync point: every
	// place that sets an element's atSync sets it, and waitingAtSync
	// clears it when its walk finds none. An idle PE answers a probe up to
	// every 10 ms: without it, each answer walked every local task, even
	// in a job that never stops at a sync point.
	syncMaybe  bool
	autoResume []*element

	// system is the task id of this PE's runtime, the sender of Start and
	// quiescence notices.
	system commutative.TaskID

	runnable []*element
	runAt    int
	// out is, per PE, the batch being built (see encode.go).
	out    []outBatch
	posted bool
	// localSpare is transmit's list of envelopes to this PE, kept for the
	// next call (nil while a call uses it: a nested call makes its own).
	localSpare []logging.Envelope
	// decoder decodes received batches (decode.go); nil while in use.
	decoder *batchDecoder
	// holdAcks lets transmit keep a batch of acknowledgements alone in
	// out: they leave with the next envelope to that PE, or with the PE's
	// next answer to a quiescence probe (see runSlice).
	holdAcks bool

	// ctx is the Context of the running handler (valid during the call only).
	ctx taskContext

	qdCallbacks []actor.CallbackTo[*actor.Quiescence]
	probe       *uint64
	// sentTo and receivedFrom count envelopes per PE, for quiescence
	// detection over the live PEs.
	sentTo, receivedFrom []uint64

	// Checkpoints and recovery.
	store        *migrate.Store
	live         []bool
	generation   uint64
	rolledBackAt uint64 // generation of the last rollback
	rollingBack  bool
	// startedBy is the PE whose runtime sent the main task its Start:
	// the main task's PE when the job began (after the tasks were created
	// again, not necessarily the one the mapping gives); -1 until Begin.
	startedBy int
	// createdEpoch is the epoch of the checkpoint of the tasks as
	// created: a main task restored from it gets Start again. Zero means
	// job.InitialEpoch, the epoch unless a failure before the first commit had the
	// tasks created again (recreatePending), whose checkpoint is then
	// the next one taken.
	createdEpoch    uint64
	recreatePending bool
	restoring       bool
	expectRestore   map[commutative.TaskID]bool
	restored        []*element
	early           []earlyBatch
	// restoredRecords are the records of the tasks restored here in this
	// recovery; reprotect is set when this PE's buddy failed.
	restoredRecords []migrate.TaskRecord
	reprotect       bool
	migrating       bool
	expectMigrate   map[commutative.TaskID]bool
	// moves are the last migration's moves, until the checkpoint after it
	// commits; exported the records this PE sent for it, importedFrom
	// the PE each task it received came from (see undoMoves), including
	// a record that came before the Migrate event that announced it.
	moves        []migrate.Move
	exported     map[migrate.TaskRef]migrate.TaskRecord
	importedFrom map[migrate.TaskRef]int
	// abandonedUpTo is the latest checkpoint epoch a failure interrupted
	// while this PE staged it.
	abandonedUpTo uint64
	// ckpt is the memory checkpoints reuse (checkpoint.go).
	ckpt ckptMemory
	// fromDisk is set while the PE waits for the records of a rollback
	// to a disk checkpoint.
	fromDisk bool
	// progress is the furthest step a local task ever offered;
	// progressAtFailure its value when the last recovery began; watch
	// the pending WatchProgress, and watchBelow how many local tasks it
	// still waits for (see progress.go).
	progress, progressAtFailure job.Progress
	watch                       *job.WatchProgress
	watchBelow                  int

	stats Stats
	// halted is the error that stopped this PE (see halt).
	halted error
	// checker is the annotation check's state (nil when it is off).
	checker *annotationChecker
	// runningTask and runningHandler name the application code running on
	// the PE goroutine (runningTask nil between handlers); Busy reads them
	// from any goroutine, to name a handler that never returns.
	// runningHandler is left set after a handler and stored only when it
	// changes (lastHandler, the PE goroutine's copy), so that a handler
	// call costs two atomic stores, not four.
	runningTask    atomic.Pointer[element]
	runningHandler atomic.Pointer[actor.HandlerDef]
	lastHandler    *actor.HandlerDef

	// rec writes the record (Config.RecordDir; nil: none); replay
	// compares a replayed task's sends with a record (nil but in
	// gochare replay). See recorder.go and replay.go.
	rec    *recorder
	replay *replayer

	// The log quota (quota.go): the loggers known dead, when a wait for
	// room began (zero: none) and the waits so far; the metrics of the
	// protocols a rollback replaced.
	deadLoggers   []bool
	blockedAt     time.Time
	blocked       time.Duration
	dumpedBefore  int
	logPeakBefore int
	// protocols counts the protocols made (dumpEpochBase).
	protocols int
	// fetchesOut counts the event loggers' answers still due
	// (eventlog.go).
	fetchesOut int
	// eventLogHandlers counts the handlers since records last went to
	// the event logger within a slice; ackBuf takes its sink's
	// acknowledgements (eventlog.go).
	eventLogHandlers int
	ackBuf           []logging.EventLogAck
	// dumpAckBuf takes the dump sink's acknowledgements (quota.go).
	dumpAckBuf []DumpAcked
	// quotaOf is pe.proto's LogQuota, and the others what cfg.Dumps
	// implements, or nil (quotaInterfaces): dumpBuffer and dumpPlaced
	// its DumpBuffer and DumpPlaced as func values, made once (a method
	// value passed at each call allocated its closure every time).
	quotaOf       logging.LogQuota
	dumpBuffer    func(logger, size int) []byte
	dumpPlaced    func(logger int) bool
	dumpBatcher   DumpBatcher
	dumpAckSource DumpAckSource
	// Under a log quota a resume starts its tasks one by one as the log
	// has room (quota.go: resumeWhenRoom): resumeQueue are those still
	// to start, resumeTasks those started, heldEvents the coordinator's
	// events that came meanwhile.
	resumeQueue []resumeStart
	resumeTasks int
	heldEvents  []job.Event
}

type earlyBatch struct {
	from       int
	generation uint64
	payload    []byte
}

type collectionState struct {
	def   *actor.CollectionDef
	n     int
	local []*element // by linear index; nil where the element is elsewhere
	// lins are the local linear indices, the first linsSorted ascending
	// and the rest as they were placed (sorted(), which sorts them in:
	// inserting each in order would cost the square of the tasks placed
	// when a recovery places many).
	lins       []int
	linsSorted int
	mergeBuf   []int
	homeOf     []int32
	// orderFree: no handler of the collection is order-dependent (see
	// PE.orderFree).
	orderFree bool
}

// orderFree reports whether no handler of def is order-dependent.
func orderFree(def *actor.CollectionDef) bool {
	for _, h := range def.Handlers {
		if annotationOf(h.Annotation).NeedsDeterminant() {
			return false
		}
	}
	return true
}

// sorted returns the local linear indices, ascending.
func (cs *collectionState) sorted() []int {
	cs.lins, cs.mergeBuf = sortmerge.Into(cs.lins, cs.linsSorted, cs.mergeBuf)
	cs.linsSorted = len(cs.lins)
	return cs.lins
}

// remove drops lin from the local linear indices.
func (cs *collectionState) remove(lin int) {
	if i, found := slices.BinarySearch(cs.sorted(), lin); found {
		cs.lins = slices.Delete(cs.lins, i, i+1)
		cs.linsSorted = len(cs.lins)
	}
}

// clearLocal forgets every local element.
func (cs *collectionState) clearLocal() {
	clear(cs.local)
	cs.lins, cs.linsSorted = cs.lins[:0], 0
}

type element struct {
	coll     *collectionState
	lin      int
	id       commutative.TaskID
	index    actor.Index
	task     actor.Task
	expected uint64
	queued   bool
	atSync   bool
	nextRed  uint64
	load     time.Duration
	admits   func(logging.Message) bool
	// progress is the last step this task offered since it was placed here.
	progress job.Progress
	// printed counts the lines the task printed since it was created
	// (checkpointed with it: see Control.Output).
	printed uint64
}

// systemCollection is the collection number of the runtime's own tasks.
const systemCollection = 0xFFFF

// TaskID is the global id of a task: its collection and linear index.
func TaskID(collection int32, lin int) uint64 { return uint64(collection)<<48 | uint64(lin) }

func splitTaskID(id commutative.TaskID) (collection int, lin int64) {
	return int(uint64(id) >> 48), int64(uint64(id) & (1<<48 - 1))
}

func handlerID(collection, handler int32) uint32 { return uint32(collection)<<16 | uint32(handler) }

// New builds a PE: declares the application's job and creates the elements
// whose initial place is this PE.
func New(cfg Config) (*PE, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("scheduler: rank %d of %d", cfg.Rank, cfg.Size)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.SliceBudget <= 0 {
		cfg.SliceBudget = 256
	}
	if cfg.MaxBacklog <= 0 {
		cfg.MaxBacklog = 64 << 20
	}
	if err := checkQuota(cfg); err != nil {
		return nil, err
	}
	if err := checkEventLog(cfg); err != nil {
		return nil, err
	}
	job, err := Define(cfg.App, cfg.Args)
	if err != nil {
		return nil, err
	}
	pe := &PE{
		cfg:    cfg,
		job:    job,
		log:    cfg.Logger,
		system: commutative.TaskID(TaskID(systemCollection, cfg.Rank)),
		out:    make([]outBatch, cfg.Size),

		sentTo:        make([]uint64, cfg.Size),
		receivedFrom:  make([]uint64, cfg.Size),
		store:         migrate.NewStore(),
		live:          make([]bool, cfg.Size),
		expectRestore: map[commutative.TaskID]bool{},
		expectMigrate: map[commutative.TaskID]bool{},
		startedBy:     -1,
	}
	for r := range pe.live {
		pe.live[r] = true
	}
	pe.ctx.pe = pe
	pe.events.pe = pe
	pe.partsNet, _ = cfg.Net.(partsNet)
	pe.recycler, _ = cfg.Net.(recycler)
	pe.stats.DroppedByReason = map[string]uint64{}
	if cfg.CheckAnnotations > 0 {
		pe.checker = newAnnotationChecker(cfg.CheckAnnotations)
	}
	pe.deadLoggers = make([]bool, max(cfg.Loggers, 0))
	for _, l := range cfg.DeadLoggers {
		if l >= 0 && l < len(pe.deadLoggers) {
			pe.deadLoggers[l] = true
		}
	}
	pe.proto = pe.newProtocol()
	pe.quotaProtocol(nil)
	pe.eventLogProtocol()
	pe.proto.HostTask(pe.system)
	defs := append(append([]*actor.CollectionDef(nil), job.Collections()...), reducerCollection(job))
	for _, def := range defs {
		if len(def.Handlers) > 1<<16 {
			return nil, fmt.Errorf("scheduler: collection %q has %d handlers, at most %d", def.Name, len(def.Handlers), 1<<16)
		}
		cs := &collectionState{def: def, n: def.Shape.Size(), local: make([]*element, def.Shape.Size()), orderFree: orderFree(def)}
		cs.homeOf = make([]int32, cs.n)
		// In pe.colls before its elements are hosted: the protocol asks
		// pe.orderFree about each.
		pe.colls = append(pe.colls, cs)
		for lin := 0; lin < cs.n; lin++ {
			home := def.Map(lin, cs.n, cfg.Size)
			if home < 0 || home >= cfg.Size {
				return nil, fmt.Errorf("scheduler: collection %q maps element %d to PE %d of %d", def.Name, lin, home, cfg.Size)
			}
			cs.homeOf[lin] = int32(home)
			if home == cfg.Rank {
				idx := def.Shape.At(lin)
				pe.addElement(cs, lin, def.New(idx))
			}
		}
	}
	if len(pe.colls) >= systemCollection {
		return nil, fmt.Errorf("scheduler: %d collections, at most %d", len(pe.colls)-1, systemCollection-1)
	}
	if cfg.RecordDir != "" {
		if pe.rec, err = openRecorder(cfg); err != nil {
			return nil, err
		}
	}
	return pe, nil
}

func (pe *PE) addElement(cs *collectionState, lin int, task actor.Task) *element {
	el := pe.placeElement(cs, lin, task)
	pe.proto.HostTask(el.id)
	if pe.cfg.Observe != nil {
		pe.observe(Observation{Kind: ObserveCreate, Task: uint64(el.id)})
	}
	return el
}

// placeElement puts a task on this PE without telling the protocol.
func (pe *PE) placeElement(cs *collectionState, lin int, task actor.Task) *element {
	el := &element{coll: cs, lin: lin, id: commutative.TaskID(TaskID(cs.def.ID, lin)), index: cs.def.Shape.At(lin), task: task}
	el.admits = func(m logging.Message) bool {
		_, h := splitHandler(m.Handler)
		return !cs.def.Handlers[h].Keyed || m.Key == el.expected
	}
	cs.local[lin] = el
	cs.lins = append(cs.lins, lin)
	return el
}

func splitHandler(h uint32) (collection, handler int) { return int(h >> 16), int(h & 0xFFFF) }

// Define runs an application's declaration and checks it.
func Define(app actor.App, args []string) (*actor.Job, error) {
	if app.Define == nil {
		return nil, fmt.Errorf("scheduler: app %q has no Define", app.Name)
	}
	job := actor.NewJob()
	if err := app.Define(job, args); err != nil {
		return nil, prefixApp(app.Name, err)
	}
	if err := job.Err(); err != nil {
		return nil, prefixApp(app.Name, err)
	}
	return job, nil
}

// prefixApp names the application in err, unless the application's own
// error already begins with its name (its flag parser's errors do).
func prefixApp(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Layout returns the initial PE of every task of a job, per collection,
// the runtime's reducers included: what job.Config.Layout wants.
func Layout(j *actor.Job, numPEs int) [][]int {
	defs := append(append([]*actor.CollectionDef(nil), j.Collections()...), reducerCollection(j))
	layout := make([][]int, len(defs))
	for c, def := range defs {
		n := def.Shape.Size()
		layout[c] = make([]int, n)
		for lin := range layout[c] {
			layout[c][lin] = def.Map(lin, n, numPEs)
		}
	}
	return layout
}

// HandlerDigest is the digest of the job's declarations on this PE
// (actor.Job.Digest), which the launcher compares across PEs.
func (pe *PE) HandlerDigest() string { return pe.job.Digest() }

// Stats returns a copy of the PE's counters.
func (pe *PE) Stats() Stats {
	s := pe.stats
	s.DroppedByReason = map[string]uint64{}
	for k, v := range pe.stats.DroppedByReason {
		s.DroppedByReason[k] = v
	}
	s.Protocol = pe.proto.Stats()
	s.Protocol.PeakLogBytes = max(s.Protocol.PeakLogBytes, pe.logPeakBefore)
	pe.quotaStats(&s)
	return s
}

// LocalElements returns the number of application elements of each
// collection on this PE.
func (pe *PE) LocalElements() []int {
	n := make([]int, len(pe.colls)-1)
	for i := range n {
		n[i] = len(pe.colls[i].lins)
	}
	return n
}

// taskID is the id of element lin of a collection.
func (pe *PE) taskID(cs *collectionState, lin int) commutative.TaskID {
	return commutative.TaskID(TaskID(cs.def.ID, lin))
}

// element returns the local element with this task id, or nil.
func (pe *PE) element(id commutative.TaskID) *element {
	coll, lin := splitTaskID(id)
	if coll >= len(pe.colls) {
		return nil
	}
	cs := pe.colls[coll]
	if lin < 0 || lin >= int64(cs.n) {
		return nil
	}
	return cs.local[lin]
}

// movedAway reports whether a task of this job is not here because it now
// lives on another PE, and which.
func (pe *PE) movedAway(id commutative.TaskID) (int, bool) {
	coll, lin := splitTaskID(id)
	if coll >= len(pe.colls) {
		return 0, false
	}
	cs := pe.colls[coll]
	if lin < 0 || lin >= int64(cs.n) || cs.local[lin] != nil || pe.expectRestore[id] || pe.expectMigrate[id] {
		return 0, false
	}
	home := int(cs.homeOf[lin])
	return home, home != pe.cfg.Rank && pe.live[home]
}

// checkMessage reports whether a message names an existing element and
// handler of the job. The element is here, or on its way here: restored,
// or moved here by a migration whose record has not arrived (a failure
// during a migration lets the job go on before it does); the protocol
// keeps its messages until it is placed.
func (pe *PE) checkMessage(m logging.Message) error {
	coll, lin := splitTaskID(m.To)
	if coll >= len(pe.colls) {
		return fmt.Errorf("%w: collection %d", ErrUnknownTarget, coll)
	}
	cs := pe.colls[coll]
	hc, h := splitHandler(m.Handler)
	if hc != coll || h >= len(cs.def.Handlers) {
		return fmt.Errorf("%w: handler %d of collection %q", ErrUnknownTarget, m.Handler, cs.def.Name)
	}
	if lin < 0 || lin >= int64(cs.n) || (cs.local[lin] == nil && !pe.expectRestore[m.To] && !pe.expectMigrate[m.To]) {
		return fmt.Errorf("%w: %s[%d] for handler %s", ErrNoSuchElement, cs.def.Name, lin, cs.def.Handlers[h].Name)
	}
	if cs.orderFree && m.Annotation.NeedsDeterminant() {
		// The protocol was told no task of cs takes one (PE.orderFree).
		return fmt.Errorf("%w: order-dependent message for handler %s of %q, which has none", ErrMalformed, cs.def.Handlers[h].Name, cs.def.Name)
	}
	return nil
}

// Receive handles a payload from PE from (transport callback). The
// payload is the PE's (transport.Handler): the messages it holds keep
// referring to it (decode.go).
func (pe *PE) Receive(from int, payload []byte) {
	if pe.halted != nil {
		return
	}
	defer pe.catchPanic("receiving from PE %d", from)
	d := pe.decoder
	if d == nil {
		d = new(batchDecoder)
	}
	pe.decoder = nil // not shared with a Receive this one calls
	defer pe.releaseDecoder(d)
	err := d.decode(payload)
	if errors.Is(err, errFallback) {
		pe.receiveProto(from, payload)
		return
	}
	if err != nil {
		pe.drop(fmt.Errorf("%w from PE %d: %v", ErrMalformed, from, err))
		return
	}
	if !pe.acceptBatch(from, payload, d.job, d.generation) {
		return
	}
	held := false // a message refers to payload
	for i := range d.envelopes {
		env, err := d.envelope(i, from, pe.cfg.Rank, pe.cfg.Size)
		if !pe.receiveEnvelope(from, env, err) {
			continue
		}
		held = true
		if err == nil && !d.envelopes[i].shared {
			pe.ownPayload(env.Message.Payload)
		}
	}
	pe.schedule()
	if !held && pe.decodesOnArrival() {
		// Every message was decoded already (decodeOnArrival): the
		// transport may read into the payload's memory again.
		if pe.recycler != nil {
			pe.recycler.Recycle(payload)
		}
	}
}

func (pe *PE) releaseDecoder(d *batchDecoder) {
	d.reset()
	pe.decoder = d
}

// receiveProto is Receive through proto.Unmarshal, for the batches the
// hand-written decoder leaves to it (checkpoints).
func (pe *PE) receiveProto(from int, payload []byte) {
	if pe.receiveCheckpointBatch(from, payload) {
		return
	}
	var b wire.Batch
	if err := proto.Unmarshal(payload, &b); err != nil {
		pe.drop(fmt.Errorf("%w from PE %d: %v", ErrMalformed, from, err))
		return
	}
	if err := resolvePayloads(&b); err != nil {
		pe.drop(fmt.Errorf("%w from PE %d: %v", ErrMalformed, from, err))
		return
	}
	if !pe.acceptBatch(from, payload, b.Job, b.Generation) {
		return
	}
	if b.CheckpointKind != wire.CheckpointKind_CHECKPOINT_NONE {
		pe.receiveCheckpoint(from, b.CheckpointKind, b.Checkpoint, b.Generation)
		pe.schedule()
		return
	}
	for _, w := range b.Envelopes {
		env, err := envelopeFromWire(w, from, pe.cfg.Rank, pe.cfg.Size)
		pe.receiveEnvelope(from, env, err)
	}
	pe.schedule()
}

// acceptBatch reports whether a well-formed batch of job job and
// generation generation from PE from is to be handled now: not of
// another job (dropped), nor from a failed PE or from before a rollback
// (ignored), nor of a recovery this PE has not been told of yet (kept
// until it has).
func (pe *PE) acceptBatch(from int, payload []byte, job, generation uint64) bool {
	if job != pe.cfg.JobID {
		pe.drop(fmt.Errorf("%w: PE %d sent job %x, this is job %x", ErrWrongJob, from, job, pe.cfg.JobID))
		return false
	}
	if from < 0 || from >= pe.cfg.Size || !pe.live[from] || generation < pe.rolledBackAt {
		return false // from a failed PE, or from before a rollback
	}
	if generation > pe.generation {
		// The sender already acts on a recovery this PE has not been told
		// of yet: keep the batch until it has.
		pe.early = append(pe.early, earlyBatch{from, generation, payload})
		return false
	}
	return true
}

// receiveEnvelope handles one envelope of a batch from PE from, or its
// error. It reports whether what it did with the envelope still refers to
// its message's payload.
func (pe *PE) receiveEnvelope(from int, env logging.Envelope, err error) bool {
	if err == nil && env.Kind == logging.EnvelopeMessage {
		if to, moved := pe.movedAway(env.Message.To); moved {
			pe.stats.Received++
			pe.receivedFrom[from]++
			pe.forward(env, to)
			return true
		}
		err = pe.checkMessage(env.Message)
	}
	if err != nil {
		// Received all the same: its sender counted it sent, and it
		// is no longer in flight (quiescence balances the two).
		pe.stats.Received++
		pe.receivedFrom[from]++
		pe.drop(err)
		return false
	}
	if env.Kind == logging.EnvelopeMessage && len(env.Message.Payload) > 0 && pe.decodesOnArrival() {
		pe.decodeOnArrival(&env.Message)
	}
	pe.arrive(env)
	return env.Kind == logging.EnvelopeMessage && len(env.Message.Payload) > 0
}

func (pe *PE) arrive(env logging.Envelope) {
	pe.stats.Received++
	pe.receivedFrom[env.From]++
	pe.proto.Arrive(env)
	switch env.Kind {
	case logging.EnvelopeMessage:
		pe.markRunnable(pe.element(env.Message.To))
	case logging.EnvelopeRecovery:
		pe.markRunnable(pe.element(env.Task))
	}
}

func (pe *PE) markRunnable(el *element) {
	if el == nil || el.queued {
		return
	}
	el.queued = true
	pe.runnable = append(pe.runnable, el)
}

// Event handles a posted event (transport callback): one of the
// coordinator's (job.Event), which it dispatches to its handler of each
// (events.go), or one of the others Net.Post may carry.
func (pe *PE) Event(ev any) {
	switch ev := ev.(type) {
	case StatsRequest:
		ev.Reply <- pe.Stats()
		return
	case job.ReportProgress, job.Diagnose:
		// Answered by a halted PE too: they tell why the job stopped.
		ev.(job.Event).Dispatch(&pe.events)
		return
	}
	if pe.halted != nil {
		return
	}
	defer pe.catchPanic("handling %T", ev)
	if pe.rec != nil {
		defer pe.flushRecord()
	}
	switch ev := ev.(type) {
	case runSlice:
		pe.posted = false
		pe.runSlice()
	case DumpAcked:
		pe.dumpAcked(ev)
	case DumpAcksPending:
		pe.takeDumpAcks()
	case LoggerLost:
		pe.loggerLost(ev)
		pe.eventLoggerLost(ev)
	case EventLogAcked:
		pe.eventLogAcked(ev)
	case EventLogAcksPending:
		pe.takeEventLogAcks()
	case EventLogAnswer:
		pe.eventLogAnswer(ev)
	case DumpSent:
		pe.dumpSent(ev)
	case job.Event:
		if !pe.holdEvent(ev) {
			ev.Dispatch(&pe.events)
		}
	case DiskRecords:
		pe.diskRecords(ev)
		pe.schedule()
	case RestartFrom:
		if err := pe.restartFrom(ev.Records); err != nil {
			pe.cfg.Control.Fail(err)
			return
		}
		pe.cfg.Control.Restored(0, len(ev.Records), job.Progress{})
	default:
		pe.log.Warn("unknown event", "type", fmt.Sprintf("%T", ev))
	}
}

func (pe *PE) schedule() {
	if !pe.posted {
		pe.posted = true
		pe.cfg.Net.Post(runSlice{})
	}
}

func (pe *PE) begin() {
	t := pe.job.MainTarget()
	cs := pe.colls[t.Collection]
	pe.startedBy = int(cs.homeOf[cs.def.Shape.Linear(t.Index)])
	if pe.startedBy != pe.cfg.Rank {
		return
	}
	pe.post(t, 0, &actor.Start{Args: pe.cfg.Args, NumPes: int32(pe.cfg.Size)}, pe.system)
	pe.transmit()
	pe.schedule()
}

func (pe *PE) runSlice() {
	// Every caller of task code resumes the tasks that reached a passed
	// sync point (runAutoResumes) before it returns; this is a guard.
	pe.runAutoResumes()
	budget := pe.cfg.SliceBudget
	for budget > 0 && pe.runAt < len(pe.runnable) {
		if pe.cfg.Net.Backlog() > pe.cfg.MaxBacklog {
			break // wait for acknowledgements before producing more
		}
		if pe.logFull() {
			break // wait for a logger to store the log's oldest entries
		}
		el := pe.runnable[pe.runAt]
		pe.runnable[pe.runAt] = nil
		pe.runAt++
		el.queued = false
		if el.coll.local[el.lin] != el {
			continue // moved away or dropped since it was queued
		}
		d, ok := pe.proto.NextDelivery(el.id, el.admits)
		if !ok {
			continue
		}
		pe.invoke(el, d)
		pe.runAutoResumes()
		if pe.halted != nil {
			return
		}
		pe.eventLogBetweenHandlers()
		pe.dumpBetweenHandlers()
		pe.markRunnable(el)
		budget--
	}
	if pe.runAt == len(pe.runnable) {
		pe.runnable = pe.runnable[:0]
		pe.runAt = 0
	} else if pe.runAt > 4096 && pe.runAt*2 > len(pe.runnable) {
		n := copy(pe.runnable, pe.runnable[pe.runAt:])
		clear(pe.runnable[n:])
		pe.runnable = pe.runnable[:n]
		pe.runAt = 0
	}
	// An acknowledgement waits for an envelope to its PE to ride with: a
	// transport message of its own costs more than the piggyback it
	// saves. It only tells its PE that records are stable (which spares
	// piggybacking them again), so it may wait; it leaves at the latest
	// with the PE's next answer to a quiescence probe.
	pe.holdAcks = true
	pe.transmit()
	pe.holdAcks = false
	pe.takeDumpAcks()
	if pe.runAt < len(pe.runnable) {
		if pe.blockedAt.IsZero() && pe.halted == nil {
			pe.schedule()
		}
		// else a logger's acknowledgement or death schedules it
	} else {
		pe.answerProbe()
	}
}

// maxHeldAcks bounds the acknowledgements held for one PE.
const maxHeldAcks = 256

// flushAll sends every batch under way (acknowledgements transmit held,
// or a failure notice's recovery envelopes).
func (pe *PE) flushAll() {
	sent := false
	for to := range pe.out {
		if pe.out[to].n > 0 {
			pe.flushTo(to)
			sent = true
		}
	}
	if sent {
		pe.cfg.Net.Flush()
	}
}

func (pe *PE) answerProbe() {
	if pe.probe == nil || pe.runAt < len(pe.runnable) || pe.posted || pe.fetchesOut > 0 || pe.holding() {
		return
	}
	pe.flushAll()
	st := job.IdleStatus{Round: *pe.probe, SyncTasks: pe.syncTasks(), LogBytes: pe.proto.Stats().LogBytes}
	st.AtSync, st.SyncStep, st.LowSyncStep, st.SyncStepsKnown = pe.waitingAtSync()
	pe.quotaAtSync(st.AtSync)
	for p, ok := range pe.live {
		if ok {
			st.Sent += pe.sentTo[p]
			st.Received += pe.receivedFrom[p]
		}
	}
	pe.cfg.Control.Idle(st)
	pe.probe = nil
	if pe.cfg.Trace != nil {
		pe.cfg.Trace("runtime", fmt.Sprintf("idle round %d", st.Round), time.Now(), 0)
	}
}

// transmit performs the protocol's Ready: envelopes for this PE arrive
// here after Advance, the others are batched per PE and sent.
func (pe *PE) transmit() {
	// The records acknowledged by now ride on none of these envelopes.
	pe.takeEventLogAcks()
	ready := pe.proto.Ready()
	local := pe.localSpare[:0]
	pe.localSpare = nil
	// Under None a large payload goes out from its own memory (the
	// message marshalled for this send alone, reused only once the
	// transport released it: marshalOwn), not copied into its batch,
	// unless other envelopes share it (a multicast's): they send it once
	// per batch (outBatch.add). Under FullDet and PartialDet the payload
	// is the sender log's copy, which lives outside the Go heap and is
	// unmapped after a checkpoint that did not need it, or once a
	// rollback dropped the protocol, while the transport may still hold
	// an unacknowledged frame to send again: those payloads are copied.
	parts := pe.partsNet != nil && pe.cfg.Protocol == logging.KindNone
	if parts {
		pe.countLargePayloads(ready.Envelopes)
	}
	for i, env := range ready.Envelopes {
		if i > 0 && ready.Envelopes[i-1].Kind == logging.EnvelopeRecovery && env.Kind != logging.EnvelopeRecovery {
			// Recovery envelopes come first in a failure notice's Ready
			// and restored tasks wait for them: they leave before the
			// logs that follow are encoded.
			pe.flushAll()
		}
		pe.stats.Sent++
		if !pe.live[env.To] {
			continue // its replay will come from the log
		}
		pe.sentTo[env.To]++
		if env.Kind == logging.EnvelopeMessage && env.Message.Value != nil && int(env.To) != pe.cfg.Rank {
			// Given to a task on another PE under None (give.go): encoded
			// straight into its batch.
			pe.addGiven(int(env.To), &env)
			continue
		}
		if int(env.To) == pe.cfg.Rank {
			if pe.cfg.LogQuota > 0 && len(env.Message.Payload) > 0 &&
				(env.Replayed || pe.proto.Logged(env.Message.ID.Sender, env.To, env.Message.To)) {
				// A replay from this PE's log to a task restored here, or
				// a logged message (to or from a task that moved in): its
				// payload is the log's copy, whose memory a logger's
				// acknowledgement may free while the message waits here.
				env.Message.Payload = pe.quotaLocalPayload(env.Message.Payload)
			}
			local = append(local, env)
			continue
		}
		to := int(env.To)
		b := &pe.out[to]
		if parts && env.Kind == logging.EnvelopeMessage && len(env.Message.Payload) >= detachMin && !pe.shared(env.Message.Payload) {
			b.addLast(&env)
			pe.flushTo(to)
			continue
		}
		b.add(&env)
		if len(b.buf) >= 1<<20 {
			pe.flushTo(to)
		}
	}
	clear(pe.largePayloads)
	pe.sendEventLog(ready)
	pe.proto.Advance()
	pe.lentToNet()
	for _, env := range local {
		pe.arrive(env)
	}
	n := len(local)
	clear(local)
	pe.localSpare = local[:0]
	for to := range pe.out {
		if b := &pe.out[to]; b.n > 0 && !(pe.holdAcks && b.n < maxHeldAcks && !b.nonAck) {
			pe.flushTo(to)
		}
	}
	// Every payload in the arena was copied into a batch that was sent.
	pe.sendArena = pe.sendArena[:0]
	if cap(pe.sendArena) > sendArenaMax {
		pe.sendArena = nil
	}
	pe.cfg.Net.Flush()
	pe.sendDumps()
	if n > 0 {
		pe.schedule()
	}
}

// partsNet is a Net that takes a payload in two parts (transport.TCP):
// head, which it copies before SendParts returns, then body, which it
// keeps as its own until Released.
type partsNet interface {
	SendParts(to int, head, body []byte)
	// Released reports whether the Net holds none of the bodies given
	// to it (all acknowledged, none waiting to be written).
	Released() bool
}

func (pe *PE) flushTo(to int) {
	b := &pe.out[to]
	size := 0
	if net := pe.partsNet; net != nil {
		// The batch's own bytes are copied by the transport: the batch's
		// memory serves every batch (outBatch.bytes); the tail is the
		// payload's memory.
		head := b.bytes(pe.cfg.JobID, pe.generation, pe.headBuf)
		if !b.inMem() {
			pe.headBuf = head
		}
		net.SendParts(to, head, b.tail)
		size = len(head) + len(b.tail)
	} else {
		// A fresh payload: the transport may keep it after Send returns.
		payload := make([]byte, 0, maxBatchHeader+len(b.buf)+len(b.tail))
		payload = batchHeader(payload, pe.cfg.JobID, pe.generation)
		payload = append(append(payload, b.buf...), b.tail...)
		pe.cfg.Net.Send(to, payload)
		size = len(payload)
	}
	pe.stats.BatchesSent++
	pe.stats.BytesSent += uint64(size)
	b.reset()
}

// countLargePayloads counts, in largePayloads, the envelopes of envs
// carrying each payload of detachMin bytes or more, when there are two
// or more such envelopes (with one, none is shared).
func (pe *PE) countLargePayloads(envs []logging.Envelope) {
	first := -1
	for i := range envs {
		if p := envs[i].Message.Payload; envs[i].Kind == logging.EnvelopeMessage && len(p) >= detachMin {
			if first < 0 {
				first = i
				continue
			}
			if pe.largePayloads == nil {
				pe.largePayloads = map[payloadKey]int{}
			}
			if len(pe.largePayloads) == 0 {
				f := envs[first].Message.Payload
				pe.largePayloads[payloadKey{&f[0], len(f)}]++
			}
			pe.largePayloads[payloadKey{&p[0], len(p)}]++
		}
	}
}

// shared reports whether another envelope of the Ready being sent
// carries payload p too (countLargePayloads).
func (pe *PE) shared(p []byte) bool {
	return pe.largePayloads[payloadKey{&p[0], len(p)}] > 1
}

func (pe *PE) drop(err error) {
	pe.stats.Dropped++
	reason := err.Error()
	for _, sentinel := range []error{ErrMalformed, ErrWrongJob, ErrUnknownTarget, ErrNoSuchElement, ErrBadMessage, ErrBadReduction} {
		if errors.Is(err, sentinel) {
			reason = sentinel.Error()
			break
		}
	}
	pe.stats.DroppedByReason[strings.TrimPrefix(reason, "scheduler: ")]++
	pe.log.Error("dropped input", "pe", pe.cfg.Rank, "err", err)
}

// invoke runs the handler of one delivery, then the region's completion
// step if the delivery completed a commutative region.
func (pe *PE) invoke(el *element, d logging.Delivery) {
	_, hi := splitHandler(d.Message.Handler)
	h := el.coll.def.Handlers[hi]
	if d.Ambiguous {
		pe.halt(pe.ambiguity(el, d))
		return
	}
	if pe.cfg.Observe != nil {
		pe.observe(Observation{Kind: ObserveHandle, Task: uint64(el.id), Message: d.Message})
	}
	ctx := &pe.ctx
	ctx.el = el
	var m any
	var err error
	if d.Message.Value != nil {
		// Given by its sender on this PE (give.go): the value itself.
		m = d.Message.Value
	} else if h.Message.NewProto != nil {
		// Into a spare message if there is one (give.go); aliasing the
		// payload if the PE owns it alone (unmarshal.go).
		owned := pe.takeOwned(d.Message.Payload)
		pm := pe.newMessage(d.Message.Handler, h)
		err = decodeInto(d.Message.Payload, pm, owned, &pe.unmarshalBuf, &pe.bytesFields)
		m = pm
		if !owned && pe.takeLocal(d.Message.Payload) {
			// Decoded into memory of the message's own: the buffer is
			// free once the recorder and checker below read it.
			defer pe.freeLocal(d.Message.Payload)
		}
	} else {
		pe.takeOwned(d.Message.Payload) // decoded into memory of its own
		m, err = h.Message.Decode(d.Message.Payload)
		if pe.takeLocal(d.Message.Payload) {
			// Decoded into memory of the message's own: the buffer is
			// free once the recorder and checker below read it.
			defer pe.freeLocal(d.Message.Payload)
		}
	}
	if err != nil {
		pe.drop(fmt.Errorf("%w: %s.%s: %v", ErrBadMessage, el.coll.def.Name, h.Name, err))
	} else {
		pe.stats.Delivered++
		if pe.rec != nil {
			pe.recordRun(el, record.Kind_DELIVER, d.Message)
		}
		if pe.checker != nil {
			pe.checkBeforeHandler(el, h, d)
		}
		if !pe.call(el, h, "", func() { h.Invoke(el.task, ctx, m) }) {
			return
		}
	}
	complete := pe.proto.EndHandler(el.id)
	if pe.checker != nil {
		pe.checkAfterHandler(el, h, complete)
	}
	if complete && h.Complete != nil {
		if pe.rec != nil {
			pe.recordRun(el, record.Kind_COMPLETE, d.Message)
		}
		pe.call(el, h, " (region complete)", func() { h.Complete(el.task, ctx, d.Message.Key) })
	}
}

// call runs application code of a task (a handler, a completion step,
// ResumeFromSync). A panic there stops the PE and the job, with the task,
// the handler, the panic and its stack: re-running the task after a
// failure would panic the same way. It reports whether fn returned.
//
// h is the handler (nil for ResumeFromSync), suffix what part of it runs.
func (pe *PE) call(el *element, h *actor.HandlerDef, suffix string, fn func()) (returned bool) {
	if pe.halted != nil {
		return false
	}
	if h != pe.lastHandler {
		pe.runningHandler.Store(h)
		pe.lastHandler = h
	}
	pe.runningTask.Store(el)
	defer func() {
		pe.runningTask.Store(nil)
		if r := recover(); r != nil {
			pe.halt(fmt.Errorf("%w: %s%v, handler %s, on PE %d: %v\n%s",
				ErrHandlerPanic, el.coll.def.Name, el.index, handlerLabel(h, suffix), pe.cfg.Rank, r, debug.Stack()))
		}
	}()
	if pe.cfg.Trace != nil || pe.cfg.MeasureLoad {
		pe.timeHandler(el, handlerLabel(h, suffix), fn)
	} else {
		fn()
	}
	return true
}

func handlerLabel(h *actor.HandlerDef, suffix string) string {
	if h == nil {
		return "ResumeFromSync" + suffix
	}
	return h.Name + suffix
}

// Busy names the application code running on the PE now ("" if none).
// It is safe to call from any goroutine.
func (pe *PE) Busy() string {
	el, h := pe.runningTask.Load(), pe.runningHandler.Load()
	if el == nil {
		return ""
	}
	return fmt.Sprintf("%s%v in handler %s", el.coll.def.Name, el.index, handlerLabel(h, ""))
}

// catchPanic, deferred by the PE's entry points, turns a panic of the
// runtime into the end of the PE and of the job, with its stack.
func (pe *PE) catchPanic(format string, args ...any) {
	if r := recover(); r != nil {
		pe.halt(fmt.Errorf("%w on PE %d while %s: %v\n%s", ErrRuntimePanic, pe.cfg.Rank, fmt.Sprintf(format, args...), r, debug.Stack()))
	}
}

// halt stops the PE: it reports err to the launcher (once) and runs
// nothing more; only its counters can still be asked for.
func (pe *PE) halt(err error) {
	if pe.halted != nil {
		return
	}
	pe.halted = err
	if pe.rec != nil {
		pe.rec.w.Flush() // the run that stopped it, before the job ends
	}
	pe.log.Error("PE stops (the launcher reports why)", "err", firstLine(err.Error()))
	pe.cfg.Control.Fail(err)
}

// ambiguity describes a delivery whose rival the program could have
// handled instead.
func (pe *PE) ambiguity(el *element, d logging.Delivery) error {
	describe := func(m logging.Message) string {
		_, hi := splitHandler(m.Handler)
		h := el.coll.def.Handlers[hi]
		what := fmt.Sprintf("%q (%v", h.Name, h.Annotation)
		if h.Keyed {
			what += fmt.Sprintf(", key %d", m.Key)
		}
		sender := "the runtime"
		if coll, lin := splitTaskID(m.ID.Sender); coll < len(pe.colls) {
			cs := pe.colls[coll]
			sender = fmt.Sprintf("%s%v", cs.def.Name, cs.def.Shape.At(int(lin)))
		}
		return what + ") from " + sender
	}
	return fmt.Errorf("%w: %s%v could handle %s or %s next, and nothing in the program says which comes first "+
		"(give the handlers keys that tell them apart and Expect the next one, or annotate one AnnotateOrderDependent)",
		ErrAmbiguousOrder, el.coll.def.Name, el.index, describe(d.Message), describe(d.Rival))
}

// post sends a message to a target on behalf of task sender.
func (pe *PE) post(t actor.Target, key uint64, m any, sender commutative.TaskID) {
	if int(t.Collection) >= len(pe.colls) {
		panic(fmt.Sprintf("scheduler: post to unknown collection %d", t.Collection))
	}
	cs := pe.colls[t.Collection]
	if int(t.Handler) >= len(cs.def.Handlers) {
		panic(fmt.Sprintf("scheduler: post to unknown handler %d of %q", t.Handler, cs.def.Name))
	}
	// With a logging protocol Send copies the payload of a message to
	// another PE into the sender log, so one buffer serves every such
	// send; the envelope of a message to this PE (which no protocol logs)
	// and every envelope under None keep the payload itself, which must
	// then be its own.
	h := cs.def.Handlers[t.Handler]
	var payload []byte
	var err error
	shared := pe.cfg.Protocol != logging.KindNone
	if shared && t.Scope == actor.ScopeOne {
		lin := cs.def.Shape.Linear(t.Index)
		shared = pe.proto.Logged(sender, logging.PEID(cs.homeOf[lin]), commutative.TaskID(TaskID(cs.def.ID, lin)))
	}
	if shared {
		payload, err = h.Message.Append(pe.postBuf[:0], m)
		pe.postBuf = payload
	} else {
		payload, err = pe.marshalOwn(t, cs, h.Message, m)
	}
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal %T for %s.%s: %v", m, cs.def.Name, h.Name, err))
	}
	msg := logging.Message{Handler: handlerID(t.Collection, t.Handler), Annotation: annotationOf(h.Annotation), Key: key, Payload: payload}
	sizedAtRunTime := h.Annotation.Order == actor.Commutative && h.Annotation.SizedAtRunTime()
	// local is the payload the copies of a multicast for tasks of this
	// PE share (made at the first): nothing writes a payload, and a
	// handler message decoded from one not owned alone is a copy.
	var local []byte
	send := func(lin int) {
		msg.To = commutative.TaskID(TaskID(cs.def.ID, lin))
		if sizedAtRunTime {
			msg.Annotation.RegionSize = regionSizeAt(cs, h, lin, key)
		}
		to := cs.homeOf[lin]
		if shared && t.Scope != actor.ScopeOne && !pe.proto.Logged(sender, logging.PEID(to), msg.To) {
			// A multicast's copy for a task of this PE, which the log
			// does not keep: the payload must outlive postBuf.
			if local == nil {
				local = slices.Clone(payload)
			}
			m := msg
			m.Payload = local
			pe.send(sender, to, m)
			return
		}
		pe.send(sender, to, msg)
	}
	switch t.Scope {
	case actor.ScopeOne:
		send(cs.def.Shape.Linear(t.Index))
	case actor.ScopeSection:
		for _, idx := range t.Section {
			send(cs.def.Shape.Linear(idx))
		}
	case actor.ScopeAll:
		for lin := 0; lin < cs.n; lin++ {
			send(lin)
		}
	}
}

// send gives the protocol a message task from sends, for PE toPE (the
// protocol stamps its identity).
func (pe *PE) send(from commutative.TaskID, toPE int32, msg logging.Message) {
	if pe.replay != nil {
		pe.replay.sent(pe, from, msg)
		return
	}
	if pe.rec != nil {
		pe.recordSend(from, msg)
	}
	msg.ID = pe.proto.Send(from, logging.PEID(toPE), msg)
	if pe.cfg.Observe != nil {
		pe.observe(Observation{Kind: ObserveSend, Task: uint64(from), Message: msg})
	}
}

func annotationOf(a actor.Annotation) commutative.Annotation {
	switch a.Order {
	case actor.Ordered:
		return commutative.Annotation{Order: commutative.Ordered}
	case actor.Commutative:
		return commutative.Annotation{Order: commutative.Commutative, RegionSize: a.RegionSize}
	}
	return commutative.Annotation{Order: commutative.OrderDependent}
}

// regionSizeAt is the size of the commutative region of key key at task
// lin of cs, for a handler whose sizes are told at run time. A size below
// 1 for a task a message goes to is the program's error: it panics, in
// the sender's handler.
func regionSizeAt(cs *collectionState, h *actor.HandlerDef, lin int, key uint64) int {
	at := cs.def.Shape.At(lin)
	n := h.Annotation.RegionSizeAt(at, key)
	if n < 1 {
		panic(fmt.Sprintf("scheduler: %s.%s: a message of key %d goes to %s%v, whose region size is %d (AnnotateCommutativeBy must give at least 1 where a message is sent)",
			cs.def.Name, h.Name, key, cs.def.Name, at, n))
	}
	return n
}

func (pe *PE) deliverToCallback(sender commutative.TaskID, t actor.Target, message string, m proto.Message) {
	h := pe.colls[t.Collection].def.Handlers[t.Handler]
	if got := string(m.ProtoReflect().Descriptor().FullName()); got != message || h.Message.Name != message {
		panic(fmt.Sprintf("scheduler: callback handler %s takes %s (callback made for %s), runtime delivers %s", h.Name, h.Message.Name, message, got))
	}
	// A keyed callback handler gets its result with the key it reads
	// (e.g. the reduction number), like any other message.
	var key uint64
	if h.Keyed {
		key = h.Key(m)
	}
	pe.post(t, key, m, sender)
}
