package logtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// ErrViolation is wrapped by every error Run reports about a broken
// property (as opposed to a bad Config).
var ErrViolation = errors.New("logtest: violation")

// ErrConfig is wrapped by errors about a bad Config.
var ErrConfig = errors.New("logtest: bad config")

// Config describes one simulated run.
type Config struct {
	Protocol logging.Kind
	Seed     uint64
	PEs      int
	Tasks    int
	Steps    int
	// Barrier is the step whose sends wait for a coordinated checkpoint;
	// 0 takes only the initial checkpoint.
	Barrier int
	// Crashes is the number of PE crashes to inject (at most PEs-1).
	Crashes int
	// Failures is the protocols' f; zero means logging.DefaultFailures,
	// as the runtime runs them. A crash that logging.CheckFailures refuses
	// (more than f since the last checkpoint) stops the run, as it stops
	// the job: Result.Stopped.
	Failures int
	// NoticeDelay is the most events between a crash and the failure
	// notice (FailureNotice on the survivors), as the runtime restores the
	// failed PE's tasks first (RestoreTask at the crash) and notifies
	// after: meanwhile the survivors go on, unaware, and a crash in that
	// time joins the same notice (two failures at once). 0 notifies at
	// the crash.
	NoticeDelay int
	// Migrate is the probability that a task moves to another PE at a
	// checkpoint (ExportTask, ImportTask), as load balancing moves tasks
	// at sync points.
	Migrate float64
	// StaleFor is the most events a PE other than a moved task's old and
	// new ones keeps sending to its old PE, which forwards (Forward); each
	// PE learns the move at a random event up to StaleFor later, at the
	// latest at the next checkpoint. A failure notice gives every PE the
	// place of the failed PEs' tasks and of the tasks it thought there.
	StaleFor int
	// Duplicate is the probability that a delivered envelope stays in
	// flight to be delivered again.
	Duplicate float64
	// OrderDependent adds side messages whose effect depends on the order
	// in which they are consumed.
	OrderDependent bool
	// OrderFree sends the order-dependent side messages to even tasks
	// only and tells the protocols that the odd ones take none
	// (logging.Config.OrderFree): PartialDet makes no progress record for
	// their sends.
	OrderFree bool
	// WrongAnnotation declares an order-dependent region handler
	// commutative.
	WrongAnnotation bool
	// Slice is the most handlers and arrivals a PE takes before its Ready
	// is transmitted, as the scheduler runs a slice of handlers (taking in
	// envelopes between slices) and transmits once at its end; the length
	// of each slice is drawn from 1 to Slice. 0 and 1 transmit after every
	// handler and every arrival.
	Slice int
	// EventLogger runs the protocols with Loggers simulated event loggers
	// (logging.Config.EventLogger; Loggers 0 means 1): the PEs' record
	// batches travel to them in order per PE and logger, their
	// acknowledgements to every PE and their answers to fetches reordered
	// and delayed like envelopes. LoggerCrashes loggers die at random
	// events (their death reaches each PE some events later).
	EventLogger   bool
	Loggers       int
	LoggerCrashes int
	// Simultaneous puts all the PE crashes at consecutive events, so that
	// one failure notice names them all (with NoticeDelay > 0).
	Simultaneous bool
	// Ordered delivers the envelopes each PE sends another in the order
	// of its Readies, as the scheduler's transports do (groups of
	// different pairs still overtake each other, and a duplicate may come
	// again later), and runs the protocols with logging.Config.Ordered:
	// a determinant carried to a PE once does not ride there again. The
	// stability check then accepts a determinant carried by any earlier
	// envelope from the same PE to the same PE since the last checkpoint.
	Ordered bool
	// MaxEvents bounds the run; 0 means 100000.
	MaxEvents int
	// Trace, if set, receives a line per event.
	Trace func(format string, args ...any)
	// mutateReady, if set, changes every Ready before it is checked and
	// transmitted: the tests of the checks use it to break a protocol.
	mutateReady func(logging.Ready) logging.Ready
	// acceptAllCrashes recovers from every crash, even those
	// logging.CheckFailures refuses, and forwardUnseen passes a moved
	// task's messages on without its old PE's protocol (as the scheduler
	// once did): the tests use them to show what the rules prevent.
	acceptAllCrashes bool
	forwardUnseen    bool
}

// DefaultConfig is the configuration the seed tests use.
func DefaultConfig(kind logging.Kind, seed uint64) Config {
	return Config{
		Protocol: kind, Seed: seed, PEs: 4, Tasks: 6, Steps: 6, Barrier: 3,
		Crashes: 2, Duplicate: 0.05, OrderDependent: true, Slice: 4,
		Migrate: 0.25, StaleFor: 40, NoticeDelay: 12,
	}
}

// Result is the outcome of a run without violation.
type Result struct {
	Digests []uint64
	Crashes int
	// CrashesDuringRecovery counts crashes that came while a task restored
	// after an earlier one had not yet re-executed all it had handled.
	CrashesDuringRecovery int
	Events                int
	Stats                 logging.Stats // summed over the PEs alive at the end
	// Stopped is set when a crash was refused by logging.CheckFailures:
	// the run ended there, as the job would, and nothing else is checked.
	Stopped error
	// Moves counts task moves at checkpoints, Forwarded the messages
	// forwarded by a task's old PE, and CrashesWhileStale the crashes that
	// came while a PE still sent a moved task's messages to its old PE.
	Moves, Forwarded, CrashesWhileStale int
	// JointNotices counts failure notices that named two PEs or more.
	JointNotices int
	// LoggerCrashes counts event logger deaths.
	LoggerCrashes int
}

type historyEntry struct {
	resume bool
	id     commutative.MessageID
}

type checkpointCopy struct {
	app        appTask
	protocol   logging.TaskCheckpoint
	historyLen int
	past       []uint64
}

type detRecord struct {
	id      commutative.MessageID
	creator logging.PEID
}

type simulator struct {
	cfg      Config
	rng      *rand.Rand
	program  *program
	pes      []logging.Protocol
	alive    []bool
	location []logging.PEID
	// view[p][t] is where PE p sends task t's messages: location[t], or
	// an earlier place of t until p learns of its move (learn).
	view              [][]logging.PEID
	learn             []viewUpdate
	moves, forwarded  int
	crashesWhileStale int
	// sinceCheckpoint counts the crashes since the last checkpoint, and
	// stopped is the error of a refused one.
	sinceCheckpoint int
	stopped         error
	// noticeAt is the event of the pending failure notice (-1: none), for
	// the PEs in noticeFailed and the tasks restored since the last one.
	noticeAt       int
	noticeFailed   []logging.PEID
	noticeRestored []logging.Relocation
	jointNotices   int
	tasks          []appTask
	history        [][]historyEntry
	handled        []map[commutative.MessageID]struct{}
	// network holds the envelopes in flight, in groups: the envelopes one
	// Ready sends one PE arrive together and in order (one transport
	// payload, as the scheduler sends them); groups are reordered,
	// delayed and duplicated.
	network [][]logging.Envelope
	// taken is, per PE, the handlers and arrivals since its Ready was last
	// transmitted, and sliceEnd how many its current slice has.
	taken    []int
	sliceEnd []int
	saved    []checkpointCopy
	events   int
	crashes  int
	// lostHistory[t] is how many entries t's history had before its last
	// restore: it is recovering while its history is shorter.
	lostHistory           []int
	crashesDuringRecovery int
	crashAt               []int

	// Causal tracking for the stability check: past[t][r] is the highest
	// reception of task r in t's causal past.
	past          [][]uint64
	messagePast   map[commutative.MessageID][]uint64
	dets          [][]detRecord // by receiver, index rsn
	checkedUpTo   []uint64      // receptions of r whose determinants are known stable
	checkpointRSN []uint64

	// carriedTo (Config.Ordered) is, per sending PE and destination, the
	// determinants carried there since the last checkpoint.
	carriedTo []map[logging.PEID]map[detKey]struct{}

	sumStats logging.Stats
	err      error
	trace    func(format string, args ...any)

	// Event loggers (Config.EventLogger): their state, which live, what
	// travels to and from them, when they die, and whether one died since
	// the last checkpoint.
	loggers       []*logging.EventLogger
	loggerAlive   []bool
	logNet        []logItem
	loggerCrashAt []int
	loggerCrashes int
	loggerDied    bool
}

// logItem is something in flight to or from an event logger.
type logItem struct {
	kind   logItemKind
	pe     logging.PEID // the PE it is from (batch, fetch) or to (ack, death)
	logger int
	batch  logging.EventLogBatch
	ack    logging.EventLogAck
	fetch  logging.EventLogFetch
}

type logItemKind uint8

const (
	logBatch logItemKind = iota
	logAck
	logFetch
	logDeath
)

// Run simulates cfg and checks it: after every step, no message is handled
// twice by a task, no envelope leaves a PE before the determinants its
// send depends on are stable or carried with it or with an earlier envelope
// of its Ready to the same PE, a replay never diverges from a recorded
// determinant; at the end, every task finished and each task's final
// digest equals that of a failure-free re-execution that follows the
// reception orders the run ended with.
func Run(cfg Config) (result Result, err error) {
	if cfg.PEs < 2 || cfg.Tasks < 2 || cfg.Steps < 1 || cfg.Crashes >= cfg.PEs || cfg.Barrier > cfg.Steps {
		return Result{}, fmt.Errorf("%+v: %w", cfg, ErrConfig)
	}
	if cfg.Failures == 0 {
		cfg.Failures = logging.DefaultFailures
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 100000
	}
	if cfg.EventLogger && cfg.Loggers == 0 {
		cfg.Loggers = 1
	}
	if cfg.LoggerCrashes > cfg.Loggers {
		return Result{}, fmt.Errorf("%d logger crashes with %d loggers: %w", cfg.LoggerCrashes, cfg.Loggers, ErrConfig)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v: %w", r, ErrViolation)
		}
	}()
	s := newSimulator(cfg)
	s.run()
	if s.err != nil {
		return Result{}, s.err
	}
	if s.stopped != nil {
		return Result{
			Crashes: s.crashes, CrashesDuringRecovery: s.crashesDuringRecovery, Events: s.events,
			Stopped: s.stopped, Moves: s.moves, Forwarded: s.forwarded, CrashesWhileStale: s.crashesWhileStale,
			JointNotices: s.jointNotices, LoggerCrashes: s.loggerCrashes,
		}, nil
	}
	digests, err := s.reference()
	if err != nil {
		return Result{}, err
	}
	for t := range s.tasks {
		if got := s.tasks[t].digest(); got != digests[t] {
			return Result{}, fmt.Errorf("task %d digest %x, failure-free re-execution %x: %w", t, got, digests[t], ErrViolation)
		}
	}
	return Result{
		Digests: digests, Crashes: s.crashes, CrashesDuringRecovery: s.crashesDuringRecovery, Events: s.events, Stats: s.sumStats,
		Moves: s.moves, Forwarded: s.forwarded, CrashesWhileStale: s.crashesWhileStale,
		JointNotices: s.jointNotices, LoggerCrashes: s.loggerCrashes,
	}, nil
}

// viewUpdate is PE pe learning at event at where task is.
type viewUpdate struct {
	at   int
	pe   logging.PEID
	task int
}

func newSimulator(cfg Config) *simulator {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	s := &simulator{
		cfg: cfg, rng: rng, program: newProgram(cfg, rng),
		messagePast: map[commutative.MessageID][]uint64{},
		trace:       cfg.Trace,
		noticeAt:    -1,
	}
	s.pes = make([]logging.Protocol, cfg.PEs)
	s.alive = make([]bool, cfg.PEs)
	s.taken = make([]int, cfg.PEs)
	s.sliceEnd = make([]int, cfg.PEs)
	s.carriedTo = make([]map[logging.PEID]map[detKey]struct{}, cfg.PEs)
	for p := range cfg.PEs {
		s.carriedTo[p] = map[logging.PEID]map[detKey]struct{}{}
		s.pes[p] = s.newProtocol(logging.PEID(p))
		s.alive[p] = true
		s.sliceEnd[p] = 1
	}
	s.location = make([]logging.PEID, cfg.Tasks)
	s.view = make([][]logging.PEID, cfg.PEs)
	s.tasks = make([]appTask, cfg.Tasks)
	s.history = make([][]historyEntry, cfg.Tasks)
	s.handled = make([]map[commutative.MessageID]struct{}, cfg.Tasks)
	s.past = make([][]uint64, cfg.Tasks)
	s.dets = make([][]detRecord, cfg.Tasks)
	s.checkedUpTo = make([]uint64, cfg.Tasks)
	s.checkpointRSN = make([]uint64, cfg.Tasks)
	s.saved = make([]checkpointCopy, cfg.Tasks)
	s.lostHistory = make([]int, cfg.Tasks)
	for t := range cfg.Tasks {
		id := commutative.TaskID(t)
		s.location[t] = logging.PEID(t % cfg.PEs)
		s.pes[s.location[t]].HostTask(id)
		for p := range s.view {
			s.view[p] = append(s.view[p], s.location[t])
		}
		s.tasks[t] = s.program.newTask(id)
		s.handled[t] = map[commutative.MessageID]struct{}{}
		s.past[t] = make([]uint64, cfg.Tasks)
	}
	expected := cfg.Tasks * cfg.Steps * 5
	for range cfg.Crashes {
		at := 1 + rng.IntN(expected)
		if len(s.crashAt) > 0 && cfg.Simultaneous {
			at = s.crashAt[0] + len(s.crashAt)
		} else if len(s.crashAt) > 0 && rng.IntN(2) == 0 {
			at = s.crashAt[len(s.crashAt)-1] + 1 + rng.IntN(cfg.Tasks*4) // during recovery
		}
		s.crashAt = append(s.crashAt, at)
	}
	slices.Sort(s.crashAt)
	if cfg.EventLogger {
		for l := range cfg.Loggers {
			s.loggers = append(s.loggers, logging.NewEventLogger(l))
			s.loggerAlive = append(s.loggerAlive, true)
		}
		for range cfg.LoggerCrashes {
			s.loggerCrashAt = append(s.loggerCrashAt, 1+rng.IntN(expected))
		}
		slices.Sort(s.loggerCrashAt)
	}
	return s
}

// newProtocol is PE p's protocol instance, configured as the runtime
// configures it, with Locate answering from p's view.
func (s *simulator) newProtocol(p logging.PEID) logging.Protocol {
	return logging.New(s.cfg.Protocol, logging.Config{
		PE: p, PEs: s.cfg.PEs, Failures: s.cfg.Failures, EventLogger: s.cfg.EventLogger, Loggers: s.cfg.Loggers,
		// As the scheduler: the records an envelope carries are cut from
		// arrays reused after the second Advance; flush clones them for
		// the envelopes it keeps in flight, as encoding copies them.
		ReuseRecords: true,
		Ordered:      s.cfg.Ordered,
		// flush records every reception's determinant from the Ready.
		ReportDeterminants: true,
		Locate:             func(task logging.TaskID) logging.PEID { return s.view[p][task] },
		OrderFree:          s.orderFree(),
	})
}

// orderFree is the protocols' Config.OrderFree: with Config.OrderFree,
// the odd tasks (to which the program sends no order-dependent message).
func (s *simulator) orderFree() func(logging.TaskID) bool {
	if !s.cfg.OrderFree {
		return nil
	}
	return func(task logging.TaskID) bool { return task%2 == 1 }
}

func (s *simulator) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("event %d: %s: %w", s.events, fmt.Sprintf(format, args...), ErrViolation)
	}
}

func (s *simulator) run() {
	s.checkpoint()
	for s.err == nil && s.stopped == nil {
		s.events++
		if s.events > s.cfg.MaxEvents {
			s.fail("no termination after %d events", s.cfg.MaxEvents)
			return
		}
		s.learnMoves()
		if len(s.crashAt) > 0 && s.events >= s.crashAt[0] {
			s.crashAt = s.crashAt[1:]
			s.crash()
			continue
		}
		if len(s.loggerCrashAt) > 0 && s.events >= s.loggerCrashAt[0] {
			s.loggerCrashAt = s.loggerCrashAt[1:]
			s.crashLogger()
			continue
		}
		if len(s.logNet) > 0 && s.rng.IntN(2) == 0 {
			s.deliverLogItem()
			continue
		}
		if s.noticeAt >= 0 && s.events >= s.noticeAt {
			s.notice()
			continue
		}
		if len(s.network) > 0 && s.rng.IntN(2) == 0 {
			s.deliverEnvelope()
			continue
		}
		if s.handleOne() {
			continue
		}
		if len(s.network) > 0 {
			s.deliverEnvelope()
			continue
		}
		if len(s.logNet) > 0 {
			s.deliverLogItem()
			continue
		}
		if s.flushAll() {
			continue
		}
		if s.noticeAt >= 0 {
			s.notice()
			continue
		}
		// Quiescent.
		if s.allDeferred() {
			s.checkpoint()
			continue
		}
		for t := range s.tasks {
			if s.tasks[t].step != s.cfg.Steps {
				s.fail("deadlock: task %d stopped at step %d", t, s.tasks[t].step)
			}
		}
		s.collectStats()
		return
	}
}

func (s *simulator) allDeferred() bool {
	for t := range s.tasks {
		if !s.tasks[t].deferred {
			return false
		}
	}
	return true
}

func (s *simulator) collectStats() {
	for p, pe := range s.pes {
		if !s.alive[p] {
			continue
		}
		st := pe.Stats()
		s.sumStats.Sent += st.Sent
		s.sumStats.Received += st.Received
		s.sumStats.Duplicates += st.Duplicates
		s.sumStats.Determinants += st.Determinants
		s.sumStats.PiggybackedBytes += st.PiggybackedBytes
		s.sumStats.LoggedBytes += st.LoggedBytes
		s.sumStats.LogBytes += st.LogBytes
		s.sumStats.LoggedMessages += st.LoggedMessages
		s.sumStats.StoredDeterminants += st.StoredDeterminants
		s.sumStats.Forwarded += st.Forwarded
		s.sumStats.PiggybackedDeterminants += st.PiggybackedDeterminants
		s.sumStats.ProgressRecords += st.ProgressRecords
		s.sumStats.RemoteEnvelopes += st.RemoteEnvelopes
		s.sumStats.EventLogRecords += st.EventLogRecords
		s.sumStats.EventLogBytes += st.EventLogBytes
	}
}

// send is the runtime the program's handlers use.
func (s *simulator) send(from commutative.TaskID, msg logging.Message) {
	p := s.location[from]
	id := s.pes[p].Send(from, s.view[p][msg.To], msg)
	if s.trace != nil {
		s.trace("  task %d sends %v to task %d (h%d key %d)", from, id, msg.To, msg.Handler, msg.Key)
	}
	s.messagePast[id] = slices.Clone(s.past[from])
}

func (s *simulator) deliverEnvelope() {
	i := s.rng.IntN(len(s.network))
	if s.cfg.Ordered {
		// The oldest group of the same pair of PEs goes first.
		from, to := s.network[i][0].From, s.network[i][0].To
		i = slices.IndexFunc(s.network, func(g []logging.Envelope) bool { return g[0].From == from && g[0].To == to })
	}
	group := s.network[i]
	onlyMessages := !slices.ContainsFunc(group, func(e logging.Envelope) bool { return e.Kind != logging.EnvelopeMessage })
	if !onlyMessages || s.rng.Float64() >= s.cfg.Duplicate {
		s.network = slices.Delete(s.network, i, i+1)
	}
	to := group[0].To
	if !s.alive[to] {
		return
	}
	for _, env := range group {
		if s.trace != nil && (env.Kind != logging.EnvelopeAck || len(env.Determinants) > 0) {
			s.trace("  pe%d arrives from pe%d: %v", env.To, env.From, describe(env))
		}
		if env.Kind == logging.EnvelopeMessage && s.location[env.Message.To] != to {
			// The task moved away: its old PE passes the message on.
			next := s.view[to][env.Message.To]
			if next == to {
				s.fail("pe%d got %v for task %d, which is on pe%d, and knows no other place", to, env.Message.ID, env.Message.To, s.location[env.Message.To])
				return
			}
			if s.trace != nil {
				s.trace("  pe%d forwards %v to pe%d", to, env.Message.ID, next)
			}
			s.forwarded++
			if s.cfg.forwardUnseen {
				env.To = next
				s.network = append(s.network, []logging.Envelope{env})
				continue
			}
			s.pes[to].Forward(env, next)
			continue
		}
		s.pes[to].Arrive(env)
	}
	s.took(to)
}

// learnMoves gives PEs the places of moved tasks they learn now.
func (s *simulator) learnMoves() {
	for len(s.learn) > 0 && s.learn[0].at <= s.events {
		u := s.learn[0]
		s.learn = s.learn[1:]
		s.view[u.pe][u.task] = s.location[u.task]
	}
}

// migrate moves tasks at a checkpoint (before it is taken, as the
// scheduler moves them at a sync point). The old and new PEs know at
// once; the others learn later (learnMoves).
func (s *simulator) migrate() {
	s.learn = s.learn[:0]
	for p := range s.view {
		copy(s.view[p], s.location)
	}
	live := s.livePEs()
	if s.cfg.Migrate <= 0 || len(live) < 2 {
		return
	}
	for t := range s.tasks {
		if s.rng.Float64() >= s.cfg.Migrate {
			continue
		}
		from := s.location[t]
		to := live[s.rng.IntN(len(live))]
		if to == from {
			continue
		}
		cp := s.pes[from].ExportTask(commutative.TaskID(t))
		s.pes[to].ImportTask(cp)
		s.location[t] = to
		s.moves++
		if s.trace != nil {
			s.trace("task %d moves from pe%d to pe%d", t, from, to)
		}
		for _, p := range live {
			if p == from || p == to || s.cfg.StaleFor <= 0 {
				s.view[p][t] = to
				continue
			}
			s.learn = append(s.learn, viewUpdate{at: s.events + 1 + s.rng.IntN(s.cfg.StaleFor), pe: p, task: t})
		}
	}
	slices.SortStableFunc(s.learn, func(a, b viewUpdate) int { return a.at - b.at })
}

// handleOne delivers one message to one task, starting the search at a
// random task. It reports whether it found one.
func (s *simulator) handleOne() bool {
	start := s.rng.IntN(len(s.tasks))
	for k := range s.tasks {
		t := (start + k) % len(s.tasks)
		peID := s.location[t]
		if !s.alive[peID] {
			continue
		}
		pe := s.pes[peID]
		a := &s.tasks[t]
		d, ok := pe.NextDelivery(commutative.TaskID(t), func(m logging.Message) bool { return s.program.admits(a, m) })
		if !ok {
			continue
		}
		id := d.Message.ID
		if _, twice := s.handled[t][id]; twice {
			s.fail("task %d handles %v twice", t, id)
			return true
		}
		s.handled[t][id] = struct{}{}
		s.history[t] = append(s.history[t], historyEntry{id: id})
		if s.trace != nil {
			s.trace("pe%d: task %d handles %v at RSN %d (%v, key %d)", peID, t, id, d.RSN, d.Message.Annotation, d.Message.Key)
		}
		sent, ok := s.messagePast[id]
		if !ok {
			s.fail("task %d handles %v, which was never sent", t, id)
			return true
		}
		for r, rsn := range sent {
			s.past[t][r] = max(s.past[t][r], rsn)
		}
		s.past[t][t] = d.RSN
		s.program.handle(s, a, d.Message)
		complete := pe.EndHandler(commutative.TaskID(t))
		s.program.complete(s, a, d.Message, complete)
		s.took(peID)
		return true
	}
	return false
}

// took counts a handler or an arrival on PE p and transmits its Ready at
// the end of the slice.
func (s *simulator) took(p logging.PEID) {
	s.taken[p]++
	if s.taken[p] >= s.sliceEnd[p] {
		s.flush(p)
	}
}

// flushAll ends every alive PE's slice and reports whether a PE had taken
// anything since its last transmission.
func (s *simulator) flushAll() bool {
	flushed := false
	for p := range s.pes {
		if s.alive[p] && s.taken[p] > 0 {
			s.flush(logging.PEID(p))
			flushed = true
		}
	}
	return flushed
}

// flush takes a PE's Ready: records its new determinants, checks and
// transmits its envelopes, and starts its next slice.
func (s *simulator) flush(p logging.PEID) {
	s.taken[p] = 0
	if s.cfg.Slice > 1 {
		s.sliceEnd[p] = 1 + s.rng.IntN(s.cfg.Slice)
	}
	pe := s.pes[p]
	ready := pe.Ready()
	if s.cfg.mutateReady != nil {
		ready = s.cfg.mutateReady(ready)
	}
	for _, nd := range ready.Determinants {
		d := nd.Determinant
		for uint64(len(s.dets[d.Receiver])) <= d.RSN {
			s.dets[d.Receiver] = append(s.dets[d.Receiver], detRecord{})
		}
		s.dets[d.Receiver][d.RSN] = detRecord{id: d.Message, creator: nd.Creator}
	}
	groups := map[logging.PEID]int{} // destination -> index in s.network
	// carried are, per destination, the determinants piggybacked on the
	// message envelopes of this Ready to it so far: the group arrives
	// together and in order, so an envelope may rely on an earlier one.
	carried := map[logging.PEID]map[detKey]struct{}{}
	if s.cfg.Ordered {
		// Or with any earlier envelope to the same PE, which arrives
		// first.
		carried = s.carriedTo[p]
	}
	for i, env := range ready.Envelopes {
		if i > 0 && ready.Envelopes[i-1].Kind == logging.EnvelopeRecovery && env.Kind != logging.EnvelopeRecovery {
			// The scheduler sends a failure notice's recovery envelopes
			// before it encodes the logs after them: what follows travels
			// in new groups.
			clear(groups)
			if !s.cfg.Ordered {
				clear(carried)
			}
		}
		if env.Kind == logging.EnvelopeMessage && env.To != env.From && s.alive[env.To] {
			// (An envelope to a dead PE is dropped: no one comes to
			// depend on it. Its sender may still count that PE among a
			// determinant's holders until its failure notice, and not
			// carry the determinant to it.)
			c := carried[env.To]
			if c == nil {
				c = map[detKey]struct{}{}
				carried[env.To] = c
			}
			for _, d := range env.Determinants {
				c[detKey{d.Receiver, d.RSN}] = struct{}{}
			}
			s.checkStable(env, c)
		}
		if !s.alive[env.To] {
			continue
		}
		env.Determinants, env.Progress = slices.Clone(env.Determinants), slices.Clone(env.Progress)
		if g, ok := groups[env.To]; ok {
			s.network[g] = append(s.network[g], env)
			continue
		}
		groups[env.To] = len(s.network)
		s.network = append(s.network, []logging.Envelope{env})
	}
	for _, b := range ready.EventLog {
		b.Determinants, b.Progress = slices.Clone(b.Determinants), slices.Clone(b.Progress)
		s.logNet = append(s.logNet, logItem{kind: logBatch, pe: p, logger: b.Logger, batch: b})
	}
	for _, f := range ready.Fetches {
		s.logNet = append(s.logNet, logItem{kind: logFetch, pe: p, logger: f.Logger, fetch: f})
	}
	pe.Advance()
}

// detKey names a determinant: a reception of a task.
type detKey struct {
	receiver commutative.TaskID
	rsn      uint64
}

// checkStable fails if env leaves while a determinant in its send's causal
// past is neither stable nor in carried: piggybacked on env or on an
// earlier message envelope of the same Ready to the same PE.
func (s *simulator) checkStable(env logging.Envelope, carried map[detKey]struct{}) {
	past := s.messagePast[env.Message.ID]
	for r, upTo := range past {
		for rsn := max(s.checkedUpTo[r], s.checkpointRSN[r]) + 1; rsn <= upTo; rsn++ {
			if rsn >= uint64(len(s.dets[r])) {
				break
			}
			rec := s.dets[r][rsn]
			if rec.id == (commutative.MessageID{}) {
				if rsn == s.checkedUpTo[r]+1 {
					s.checkedUpTo[r] = rsn
				}
				continue // no determinant for this reception
			}
			if _, ok := carried[detKey{commutative.TaskID(r), rsn}]; ok {
				continue
			}
			if s.pes[env.To].HoldsDeterminant(commutative.TaskID(r), rsn) {
				continue // the destination has it already
			}
			if !s.isStable(commutative.TaskID(r), rsn) {
				s.fail("pe%d releases %v to pe%d depending on unstable determinant t%d@%d",
					env.From, env.Message.ID, env.To, r, rsn)
				return
			}
			if rsn == s.checkedUpTo[r]+1 {
				s.checkedUpTo[r] = rsn
			}
		}
	}
}

// isStable reports whether a determinant survives the crashes still to come
// before the next checkpoint that do not stop the job (f minus those since
// the checkpoint, and at most one less than the PEs alive): it is stored
// on one alive PE more than that. The creator counts; the protocols count
// the same way.
func (s *simulator) isStable(receiver commutative.TaskID, rsn uint64) bool {
	holders, alive := 0, 0
	for p, pe := range s.pes {
		if s.alive[p] {
			alive++
			if pe.HoldsDeterminant(receiver, rsn) {
				holders++
			}
		}
	}
	if s.cfg.EventLogger && (s.loggerDied || slices.Contains(s.loggerAlive, true)) {
		// Stable: on a live logger. After a logger's death, no PE may
		// fail before the next checkpoint (the run stops at one), and
		// nothing the survivors depend on can be lost. Once every
		// logger is dead, the protocols' own rule is back (below).
		return s.loggerDied || s.onLogger(receiver, rsn)
	}
	allowed := s.cfg.Failures - s.sinceCheckpoint
	if s.cfg.acceptAllCrashes {
		allowed = s.cfg.Failures
	}
	return holders >= min(allowed, s.cfg.Crashes-s.crashes, alive-1)+1
}

// onLogger reports whether a live event logger stores a determinant.
func (s *simulator) onLogger(receiver commutative.TaskID, rsn uint64) bool {
	for l, lg := range s.loggers {
		if s.loggerAlive[l] && lg.HoldsDeterminant(receiver, rsn) {
			return true
		}
	}
	return false
}

func (s *simulator) heldAnywhere(receiver commutative.TaskID, rsn uint64) bool {
	if s.onLogger(receiver, rsn) {
		return true
	}
	for p, pe := range s.pes {
		if s.alive[p] && pe.HoldsDeterminant(receiver, rsn) {
			return true
		}
	}
	return false
}

func (s *simulator) resume(t int) {
	s.history[t] = append(s.history[t], historyEntry{resume: true})
	s.program.resume(s, &s.tasks[t])
	s.flush(s.location[t])
}

// checkpoint moves tasks and takes a coordinated checkpoint (the network
// is empty), then resumes the deferred sends.
func (s *simulator) checkpoint() {
	s.migrate()
	s.sinceCheckpoint = 0
	s.loggerDied = false
	for _, c := range s.carriedTo {
		clear(c)
	}
	for p, pe := range s.pes {
		if !s.alive[p] {
			continue
		}
		for _, cp := range pe.Checkpoint() {
			t := int(cp.Counters.Task)
			s.saved[t] = checkpointCopy{
				app: s.tasks[t].clone(), protocol: cp, historyLen: len(s.history[t]), past: slices.Clone(s.past[t]),
			}
			s.checkpointRSN[t] = cp.Counters.RSN
			s.checkedUpTo[t] = cp.Counters.RSN
		}
	}
	for t := range s.tasks {
		if s.tasks[t].deferred {
			s.resume(t)
		}
	}
}

func (s *simulator) livePEs() []logging.PEID {
	var live []logging.PEID
	for p := range s.pes {
		if s.alive[p] {
			live = append(live, logging.PEID(p))
		}
	}
	return live
}

// restore puts task t back to its checkpoint on PE p.
func (s *simulator) restore(t int, p logging.PEID, survivors []logging.PEID) {
	cp := s.saved[t]
	s.lostHistory[t] = len(s.history[t])
	s.tasks[t] = cp.app.clone()
	s.history[t] = slices.Clone(s.history[t][:cp.historyLen])
	s.handled[t] = map[commutative.MessageID]struct{}{}
	for _, e := range s.history[t][:cp.historyLen] {
		if !e.resume {
			s.handled[t][e.id] = struct{}{}
		}
	}
	s.past[t] = slices.Clone(cp.past)
	s.location[t] = p
	s.pes[p].RestoreTask(cp.protocol, survivors)
}

func (s *simulator) crash() {
	live := s.livePEs()
	if len(live) < 2 {
		return
	}
	victim := live[s.rng.IntN(len(live))]
	// What the victim has not transmitted is lost.
	s.alive[victim] = false
	if s.trace != nil {
		s.trace("crash pe%d", victim)
	}
	s.crashes++
	for t := range s.tasks {
		if len(s.history[t]) < s.lostHistory[t] {
			s.crashesDuringRecovery++
			break
		}
	}
	if len(s.learn) > 0 {
		s.crashesWhileStale++
	}
	s.sinceCheckpoint++
	lcfg := logging.Config{PEs: s.cfg.PEs, Failures: s.cfg.Failures, EventLogger: s.cfg.EventLogger, Loggers: s.cfg.Loggers}
	err := logging.CheckFailures(s.cfg.Protocol, lcfg, s.sinceCheckpoint)
	if err == nil && s.loggerDied {
		err = logging.CheckEventLogFailures(s.cfg.Protocol, lcfg, s.sinceCheckpoint, 1)
	}
	if err != nil && !s.cfg.acceptAllCrashes {
		if s.trace != nil {
			s.trace("the job stops: %v", err)
		}
		s.stopped = err
		return
	}
	// The loggers close the victim's stream: what it had not sent is
	// lost, and what it sent and the logger has not taken is dropped
	// (Store refuses it).
	s.logNet = slices.DeleteFunc(s.logNet, func(it logItem) bool { return it.pe == victim })
	for l, lg := range s.loggers {
		if s.loggerAlive[l] {
			lg.PEsFailed([]logging.PEID{victim})
		}
	}
	live = s.livePEs()
	for r := range s.checkedUpTo {
		s.checkedUpTo[r] = s.checkpointRSN[r]
	}
	s.network = slices.DeleteFunc(s.network, func(g []logging.Envelope) bool { return g[0].From == victim || g[0].To == victim })
	if s.cfg.Ordered {
		clear(s.carriedTo[victim])
		for _, c := range s.carriedTo {
			delete(c, victim)
		}
	}
	var relocated []logging.Relocation
	next := s.rng.IntN(len(live))
	for t := range s.tasks {
		if s.location[t] == victim {
			relocated = append(relocated, logging.Relocation{Task: commutative.TaskID(t), PE: live[next%len(live)]})
			next++
		}
	}
	// Every PE learns at once where the failed PE's tasks are restored,
	// and the placement of the tasks it thought were there (the runtime's
	// Recover).
	for _, r := range relocated {
		s.location[r.Task] = r.PE
	}
	for _, p := range live {
		for t, at := range s.view[p] {
			if !s.alive[at] || slices.ContainsFunc(relocated, func(r logging.Relocation) bool { return int(r.Task) == t }) {
				s.view[p][t] = s.location[t]
			}
		}
	}
	if s.cfg.Protocol == logging.KindNone {
		for _, p := range live {
			if s.taken[p] > 0 {
				s.flush(p)
			}
		}
		s.pes[live[0]].FailureNotice([]logging.PEID{victim}, relocated)
		if !s.pes[live[0]].Ready().RollbackAll {
			s.fail("None did not ask for a rollback")
			return
		}
		s.network = nil
		for _, p := range live {
			s.pes[p] = s.newProtocol(p)
		}
		for t := range s.tasks {
			s.restore(t, s.location[t], nil)
		}
		s.resumeRestored()
		return
	}
	for _, r := range relocated {
		s.restore(int(r.Task), r.PE, live)
	}
	// A determinant no alive PE holds is lost: nothing alive depends on
	// it (the checks made sure), and the restored task decides that
	// reception anew.
	for task := range s.dets {
		for rsn := range s.dets[task] {
			if s.dets[task][rsn].id != (commutative.MessageID{}) && !s.heldAnywhere(commutative.TaskID(task), uint64(rsn)) {
				s.dets[task][rsn] = detRecord{}
			}
		}
	}
	s.noticeFailed = append(s.noticeFailed, victim)
	for _, r := range relocated {
		s.noticeRestored = slices.DeleteFunc(s.noticeRestored, func(old logging.Relocation) bool { return old.Task == r.Task })
		s.noticeRestored = append(s.noticeRestored, r)
	}
	if s.noticeAt < 0 {
		s.noticeAt = s.events + s.rng.IntN(s.cfg.NoticeDelay+1)
	}
	if s.cfg.NoticeDelay == 0 {
		s.notice()
	}
}

// notice gives every survivor the pending failure notice, between two of
// its slices, and starts the restored tasks.
func (s *simulator) notice() {
	failed, restored := s.noticeFailed, s.noticeRestored
	s.noticeAt, s.noticeFailed, s.noticeRestored = -1, nil, nil
	slices.SortFunc(restored, func(a, b logging.Relocation) int { return int(a.Task) - int(b.Task) })
	if len(failed) > 1 {
		s.jointNotices++
	}
	if s.trace != nil {
		s.trace("failure notice: pes %v failed, restored %v", failed, restored)
	}
	for _, p := range s.livePEs() {
		if s.taken[p] > 0 {
			s.flush(p)
		}
		s.pes[p].FailureNotice(failed, restored)
		if el, ok := s.pes[p].(logging.EventLogging); ok && s.cfg.EventLogger {
			if err := el.EventLogLost(); err != nil {
				s.stopped = err
				if s.trace != nil {
					s.trace("the job stops: %v", err)
				}
				return
			}
		}
		s.flush(p)
	}
	s.resumeRestored()
}

// resumeRestored performs the deferred sends of tasks restored at a sync
// point.
func (s *simulator) resumeRestored() {
	for t := range s.tasks {
		if s.tasks[t].deferred && len(s.history[t]) == s.saved[t].historyLen {
			s.resume(t)
		}
	}
}

// describe is an envelope as the trace shows it.
func describe(env logging.Envelope) string {
	var b strings.Builder
	switch env.Kind {
	case logging.EnvelopeMessage:
		fmt.Fprintf(&b, "message %v for task %d", env.Message.ID, env.Message.To)
		if env.Replayed {
			b.WriteString(" (replayed)")
		}
	case logging.EnvelopeAck:
		b.WriteString("ack")
	case logging.EnvelopeRecovery:
		fmt.Fprintf(&b, "recovery for task %d", env.Task)
	}
	if len(env.Determinants) > 0 {
		fmt.Fprintf(&b, " dets %v", env.Determinants)
	}
	return b.String()
}

// deliverLogItem takes one item to or from an event logger off the
// network. A PE's batches to a logger arrive in order (one stream); the
// rest is reordered.
func (s *simulator) deliverLogItem() {
	i := s.rng.IntN(len(s.logNet))
	if it := s.logNet[i]; it.kind == logBatch {
		i = slices.IndexFunc(s.logNet, func(o logItem) bool {
			return o.kind == logBatch && o.pe == it.pe && o.logger == it.logger
		})
	}
	it := s.logNet[i]
	s.logNet = slices.Delete(s.logNet, i, i+1)
	switch it.kind {
	case logBatch:
		if !s.loggerAlive[it.logger] {
			return
		}
		ack, ok := s.loggers[it.logger].Store(it.batch)
		if s.trace != nil {
			s.trace("  logger%d stores %d dets %d progress of pe%d (period %d): %v", it.logger, len(it.batch.Determinants), len(it.batch.Progress), it.pe, it.batch.Epoch, ok)
		}
		if !ok {
			return
		}
		for _, p := range s.livePEs() {
			s.logNet = append(s.logNet, logItem{kind: logAck, pe: p, logger: it.logger, ack: ack})
		}
	case logAck:
		if s.alive[it.pe] {
			s.pes[it.pe].(logging.EventLogging).EventLogAcked(it.ack)
		}
	case logDeath:
		if s.alive[it.pe] {
			if s.trace != nil {
				s.trace("  pe%d learns logger%d died", it.pe, it.logger)
			}
			el := s.pes[it.pe].(logging.EventLogging)
			el.EventLoggerFailed(it.logger)
			if err := el.EventLogLost(); err != nil {
				s.stopped = err
				if s.trace != nil {
					s.trace("the job stops: %v", s.stopped)
				}
				return
			}
			s.took(it.pe)
		}
	case logFetch:
		if !s.loggerAlive[it.logger] || !s.alive[it.pe] {
			return
		}
		envs := s.loggers[it.logger].Fetch(it.fetch)
		if s.trace != nil {
			s.trace("  logger%d answers pe%d's fetch for tasks %v", it.logger, it.pe, it.fetch.Tasks)
		}
		s.network = append(s.network, envs)
	}
}

// crashLogger kills a live event logger. A PE failure after it in the
// same checkpoint period stops the run (logging.CheckEventLogFailures),
// as the job rolls every task back there, and so does a PE that learns of
// it while a restored task waits for its answer (AwaitsLogger).
func (s *simulator) crashLogger() {
	var live []int
	for l, ok := range s.loggerAlive {
		if ok {
			live = append(live, l)
		}
	}
	if len(live) == 0 {
		return
	}
	l := live[s.rng.IntN(len(live))]
	s.loggerAlive[l] = false
	s.loggerCrashes++
	s.loggerDied = true
	if s.trace != nil {
		s.trace("crash logger%d", l)
	}
	s.logNet = slices.DeleteFunc(s.logNet, func(it logItem) bool { return it.logger == l })
	for _, p := range s.livePEs() {
		s.logNet = append(s.logNet, logItem{kind: logDeath, pe: p, logger: l})
	}
}
