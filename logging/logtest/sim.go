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
	// Failures is the protocols' f. Zero means max(1, Crashes): a second
	// crash may hit before the first recovery has made determinants
	// stable again, so two crashes are two simultaneous failures.
	Failures int
	// Duplicate is the probability that a delivered envelope stays in
	// flight to be delivered again.
	Duplicate float64
	// OrderDependent adds side messages whose effect depends on the order
	// in which they are consumed.
	OrderDependent bool
	// WrongAnnotation declares an order-dependent region handler
	// commutative.
	WrongAnnotation bool
	// Slice is the most handlers and arrivals a PE takes before its Ready
	// is transmitted, as the scheduler runs a slice of handlers (taking in
	// envelopes between slices) and transmits once at its end; the length
	// of each slice is drawn from 1 to Slice. 0 and 1 transmit after every
	// handler and every arrival.
	Slice int
	// MaxEvents bounds the run; 0 means 100000.
	MaxEvents int
	// Trace, if set, receives a line per event.
	Trace func(format string, args ...any)
	// mutateReady, if set, changes every Ready before it is checked and
	// transmitted: the tests of the checks use it to break a protocol.
	mutateReady func(logging.Ready) logging.Ready
}

// DefaultConfig is the configuration the seed tests use.
func DefaultConfig(kind logging.Kind, seed uint64) Config {
	return Config{
		Protocol: kind, Seed: seed, PEs: 4, Tasks: 6, Steps: 6, Barrier: 3,
		Crashes: 2, Duplicate: 0.05, OrderDependent: true, Slice: 4,
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
	tasks    []appTask
	history  [][]historyEntry
	handled  []map[commutative.MessageID]struct{}
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

	sumStats logging.Stats
	err      error
	trace    func(format string, args ...any)
}

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
		cfg.Failures = max(1, cfg.Crashes)
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 100000
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
	digests, err := s.reference()
	if err != nil {
		return Result{}, err
	}
	for t := range s.tasks {
		if got := s.tasks[t].digest(); got != digests[t] {
			return Result{}, fmt.Errorf("task %d digest %x, failure-free re-execution %x: %w", t, got, digests[t], ErrViolation)
		}
	}
	return Result{Digests: digests, Crashes: s.crashes, CrashesDuringRecovery: s.crashesDuringRecovery, Events: s.events, Stats: s.sumStats}, nil
}

func newSimulator(cfg Config) *simulator {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	s := &simulator{
		cfg: cfg, rng: rng, program: newProgram(cfg, rng),
		messagePast: map[commutative.MessageID][]uint64{},
		trace:       cfg.Trace,
	}
	s.pes = make([]logging.Protocol, cfg.PEs)
	s.alive = make([]bool, cfg.PEs)
	s.taken = make([]int, cfg.PEs)
	s.sliceEnd = make([]int, cfg.PEs)
	for p := range cfg.PEs {
		s.pes[p] = logging.New(cfg.Protocol, logging.Config{PE: logging.PEID(p), PEs: cfg.PEs, Failures: cfg.Failures})
		s.alive[p] = true
		s.sliceEnd[p] = 1
	}
	s.location = make([]logging.PEID, cfg.Tasks)
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
		s.tasks[t] = s.program.newTask(id)
		s.handled[t] = map[commutative.MessageID]struct{}{}
		s.past[t] = make([]uint64, cfg.Tasks)
	}
	expected := cfg.Tasks * cfg.Steps * 5
	for range cfg.Crashes {
		at := 1 + rng.IntN(expected)
		if len(s.crashAt) > 0 && rng.IntN(2) == 0 {
			at = s.crashAt[len(s.crashAt)-1] + 1 + rng.IntN(cfg.Tasks*4) // during recovery
		}
		s.crashAt = append(s.crashAt, at)
	}
	slices.Sort(s.crashAt)
	return s
}

func (s *simulator) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("event %d: %s: %w", s.events, fmt.Sprintf(format, args...), ErrViolation)
	}
}

func (s *simulator) run() {
	s.checkpoint()
	for s.err == nil {
		s.events++
		if s.events > s.cfg.MaxEvents {
			s.fail("no termination after %d events", s.cfg.MaxEvents)
			return
		}
		if len(s.crashAt) > 0 && s.events >= s.crashAt[0] {
			s.crashAt = s.crashAt[1:]
			s.crash()
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
		if s.flushAll() {
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
	}
}

// send is the runtime the program's handlers use.
func (s *simulator) send(from commutative.TaskID, msg logging.Message) {
	pe := s.pes[s.location[from]]
	id := pe.Send(from, s.location[msg.To], msg)
	if s.trace != nil {
		s.trace("  task %d sends %v to task %d (h%d key %d)", from, id, msg.To, msg.Handler, msg.Key)
	}
	s.messagePast[id] = slices.Clone(s.past[from])
}

func (s *simulator) deliverEnvelope() {
	i := s.rng.IntN(len(s.network))
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
		s.pes[to].Arrive(env)
	}
	s.took(to)
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
	for _, env := range ready.Envelopes {
		if env.Kind == logging.EnvelopeMessage && env.To != env.From {
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
		if g, ok := groups[env.To]; ok {
			s.network[g] = append(s.network[g], env)
			continue
		}
		groups[env.To] = len(s.network)
		s.network = append(s.network, []logging.Envelope{env})
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
// (at most f): it is stored on one alive PE more than that. The creator
// counts; the protocols count the same way.
func (s *simulator) isStable(receiver commutative.TaskID, rsn uint64) bool {
	needed := min(s.cfg.Failures, s.cfg.Crashes-s.crashes) + 1
	holders := 0
	for p, pe := range s.pes {
		if s.alive[p] && pe.HoldsDeterminant(receiver, rsn) {
			holders++
		}
	}
	return holders >= needed
}

func (s *simulator) heldAnywhere(receiver commutative.TaskID, rsn uint64) bool {
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

// checkpoint takes a coordinated checkpoint (the network is empty) and
// resumes the deferred sends.
func (s *simulator) checkpoint() {
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
	// The survivors' slices end before they learn of the failure; what
	// the victim has not transmitted is lost.
	for _, p := range live {
		if p != victim && s.taken[p] > 0 {
			s.flush(p)
		}
	}
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
	live = s.livePEs()
	for r := range s.checkedUpTo {
		s.checkedUpTo[r] = s.checkpointRSN[r]
	}
	s.network = slices.DeleteFunc(s.network, func(g []logging.Envelope) bool { return g[0].From == victim || g[0].To == victim })
	var relocated []logging.Relocation
	next := s.rng.IntN(len(live))
	for t := range s.tasks {
		if s.location[t] == victim {
			relocated = append(relocated, logging.Relocation{Task: commutative.TaskID(t), PE: live[next%len(live)]})
			next++
		}
	}
	if s.cfg.Protocol == logging.KindNone {
		s.pes[live[0]].FailureNotice([]logging.PEID{victim}, relocated)
		if !s.pes[live[0]].Ready().RollbackAll {
			s.fail("None did not ask for a rollback")
			return
		}
		s.network = nil
		for _, p := range live {
			s.pes[p] = logging.New(s.cfg.Protocol, logging.Config{PE: p, PEs: s.cfg.PEs, Failures: s.cfg.Failures})
		}
		for _, r := range relocated {
			s.location[r.Task] = r.PE
		}
		for t := range s.tasks {
			s.restore(t, s.location[t], nil)
		}
	} else {
		for _, r := range relocated {
			s.restore(int(r.Task), r.PE, live)
		}
		for _, p := range live {
			s.pes[p].FailureNotice([]logging.PEID{victim}, relocated)
			s.flush(p)
		}
		// A determinant no alive PE holds is lost: nothing alive depends
		// on it (the checks made sure), and the restored task decides
		// that reception anew.
		for task := range s.dets {
			for rsn := range s.dets[task] {
				if s.dets[task][rsn].id != (commutative.MessageID{}) && !s.heldAnywhere(commutative.TaskID(task), uint64(rsn)) {
					s.dets[task][rsn] = detRecord{}
				}
			}
		}
	}
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
