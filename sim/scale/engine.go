package scale

import (
	"fmt"
	"slices"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// Engine runs a Pattern on the real protocol of package logging, one
// logging.Protocol per PE, in rounds: in a round every PE, in rank
// order, takes in the envelopes that reached it in the previous round
// (Arrive, in the order they were sent), delivers every message its tasks
// can handle (NextDelivery, EndHandler, the sends of a completed stage),
// then transmits its Ready (each envelope arrives in the next round) and
// Advances. An envelope thus takes one round whatever its size: the
// network is uniform, the PEs are in lockstep. Payloads are not carried
// (the pattern's sizes are added to the log bytes, which grow by exactly
// a payload's length per message, or none for a multicast's copies after
// the first: Send.Multicast).
type Engine struct {
	pat    Pattern
	kind   logging.Kind
	protos []logging.Protocol
	tasks  []taskState
	// byPE lists each PE's tasks.
	byPE  [][]int
	inbox [][]logging.Envelope
	next  [][]logging.Envelope
	// payload is the pattern's payload bytes each PE's log took (the
	// messages to other PEs: Protocol.Logged; the protocol's LoggedBytes
	// count none, since the model sends no payload).
	payload []int
	rounds  int
	// failed marks the PEs Fail took away.
	failed []bool
}

type taskState struct {
	stage uint64 // completed
	got   int    // messages of stage+1 handled
	limit uint64 // the last stage to reach
}

func orderFree(logging.TaskID) bool { return true }

// NewEngine places the pattern's tasks on fresh protocols of kind.
func NewEngine(pat Pattern, kind logging.Kind) *Engine {
	n := pat.PEs()
	e := &Engine{pat: pat, kind: kind, protos: make([]logging.Protocol, n), tasks: make([]taskState, pat.Tasks()),
		byPE: make([][]int, n), inbox: make([][]logging.Envelope, n), next: make([][]logging.Envelope, n),
		payload: make([]int, n), failed: make([]bool, n)}
	for pe := range n {
		// The patterns model the mini-apps, none of whose handlers is
		// order-dependent: as the runtime does (PE.orderFree), every
		// task is order-free (an order-dependent send would panic at
		// its delivery).
		e.protos[pe] = logging.New(kind, logging.Config{PE: logging.PEID(pe), PEs: n, OrderFree: orderFree})
	}
	for t := range e.tasks {
		pe := pat.Home(t)
		e.byPE[pe] = append(e.byPE[pe], t)
		e.protos[pe].HostTask(commutative.TaskID(t))
	}
	return e
}

// Protocol returns PE pe's protocol.
func (e *Engine) Protocol(pe int) logging.Protocol { return e.protos[pe] }

// Run runs the pattern until every task completed steps steps (from the
// start) and nothing is in flight; it returns the rounds it took. A
// pattern that stops short (a task waits for a message no one sends) is
// an error.
func (e *Engine) Run(steps int) (int, error) {
	limit := uint64(steps) * e.pat.StagesPerStep()
	for t := range e.tasks {
		e.tasks[t].limit = limit
	}
	if e.rounds == 0 {
		for pe, ts := range e.byPE {
			for _, t := range ts {
				e.send(pe, t, 0)
				e.advanceStages(pe, t)
			}
		}
	}
	for {
		busy, err := e.round()
		if err != nil {
			return e.rounds, err
		}
		if !busy {
			break
		}
	}
	for t, ts := range e.tasks {
		if ts.stage < limit && !e.failed[e.pat.Home(t)] {
			return e.rounds, fmt.Errorf("%w: %s task %d stopped at stage %d of %d", ErrConfig, e.pat.Name(), t, ts.stage, limit)
		}
	}
	return e.rounds, nil
}

// advanceStages completes the stages of task t that expect nothing,
// sending what each one sends.
func (e *Engine) advanceStages(pe, t int) {
	ts := &e.tasks[t]
	for ts.stage < ts.limit && e.pat.Expect(t, ts.stage+1) == 0 {
		ts.stage++
		e.send(pe, t, ts.stage)
	}
}

func (e *Engine) send(pe, t int, stage uint64) {
	if stage >= e.tasks[t].limit && stage > 0 {
		return
	}
	// logged: the list's payload is in the log (a multicast's next
	// copies share it: logging.senderLog.add).
	logged := false
	for _, s := range e.pat.Sends(t, stage) {
		from, to, home := commutative.TaskID(t), commutative.TaskID(s.To), logging.PEID(e.pat.Home(s.To))
		if !s.Multicast || s.Bytes < 64 {
			logged = false
		}
		if e.protos[pe].Logged(from, home, to) {
			if !logged {
				e.payload[pe] += s.Bytes
			}
			logged = true
		}
		e.protos[pe].Send(from, home, logging.Message{
			To: to, Handler: s.Handler, Annotation: s.Annotation, Key: s.Stage,
		})
	}
}

// round is one round of every live PE; it reports whether anything
// happened.
func (e *Engine) round() (bool, error) {
	e.rounds++
	busy := false
	for pe, p := range e.protos {
		if e.failed[pe] {
			e.inbox[pe] = e.inbox[pe][:0]
			continue
		}
		for _, env := range e.inbox[pe] {
			if e.failed[env.From] {
				continue
			}
			p.Arrive(env)
			busy = true
		}
		e.inbox[pe] = e.inbox[pe][:0]
		for _, t := range e.byPE[pe] {
			ts := &e.tasks[t]
			admits := func(m logging.Message) bool { return m.Key == ts.stage+1 }
			for ts.stage < ts.limit {
				d, ok := p.NextDelivery(commutative.TaskID(t), admits)
				if !ok {
					break
				}
				if d.Ambiguous {
					return busy, fmt.Errorf("%w: %s task %d: ambiguous delivery of %v", ErrConfig, e.pat.Name(), t, d.Message.ID)
				}
				busy = true
				p.EndHandler(commutative.TaskID(t))
				ts.got++
				if ts.got == e.pat.Expect(t, ts.stage+1) {
					ts.stage++
					ts.got = 0
					e.send(pe, t, ts.stage)
					e.advanceStages(pe, t)
				}
			}
		}
		r := p.Ready()
		for _, env := range r.Envelopes {
			e.next[env.To] = append(e.next[env.To], env)
			busy = true
		}
		p.Advance()
	}
	e.inbox, e.next = e.next, e.inbox
	return busy, nil
}

// Totals are the protocol counters of one PE, the pattern's payload bytes
// added to the log.
type Totals struct {
	Determinants, PiggybackBytes, LogBytes int
	// Piggybacked counts the records piggybacked (determinants and
	// progress records); Envelopes the application envelopes sent to
	// other PEs.
	Piggybacked, Envelopes int
	StoredDeterminants     int
	Sent                   int
}

// Totals returns PE pe's counters so far.
func (e *Engine) Totals(pe int) Totals {
	s := e.protos[pe].Stats()
	return Totals{
		Determinants: s.Determinants, PiggybackBytes: s.PiggybackedBytes, LogBytes: s.LoggedBytes + e.payload[pe],
		Piggybacked: s.PiggybackedDeterminants + s.ProgressRecords, Envelopes: s.RemoteEnvelopes,
		StoredDeterminants: s.StoredDeterminants, Sent: s.Sent,
	}
}

// RecoveryCount counts the envelopes a failure makes the survivors send:
// recovery envelopes (one per survivor and restored task) and the
// messages resent from the sender logs, with their bytes (records
// carried, and the resent messages' size on the wire).
type RecoveryCount struct {
	RecoveryEnvelopes, RecoveryBytes int
	Resent, ResentBytes              int
	Acks, AckBytes                   int
}

func (c *RecoveryCount) add(env logging.Envelope, payloadOf func(logging.Message) int) {
	switch {
	case env.Kind == logging.EnvelopeRecovery:
		c.RecoveryEnvelopes++
		c.RecoveryBytes += envelopeHeader + env.PiggybackBytes()
	case env.Kind == logging.EnvelopeMessage && env.Replayed:
		c.Resent++
		c.ResentBytes += envelopeHeader + env.PiggybackBytes() + env.Message.ID.EncodedSize() + messageHeader + payloadOf(env.Message)
	case env.Kind == logging.EnvelopeAck:
		c.Acks++
		c.AckBytes += envelopeHeader + env.PiggybackBytes()
	}
}

// The fixed parts of an envelope and of a message, in bytes, as counted
// here (kind, PEs, task, epoch; handler, key, annotation): the records
// and the payload make the rest.
const (
	envelopeHeader = 16
	messageHeader  = 24
)

// Fail kills PE failed once the run is quiet (after Run), as a whole job
// would: its tasks are restored from the start of the run (the last
// checkpoint) on the survivors after it in ring order, as job.Coordinator
// places them with spread 0, and every survivor gets the failure notice.
// It returns what the survivors sent for the recovery (recovery
// envelopes, messages resent from their logs, with the resent messages'
// payload bytes); a following Run delivers it and lets the restored tasks
// replay.
func (e *Engine) Fail(failed int) (RecoveryCount, error) {
	if e.kind == logging.KindNone {
		return RecoveryCount{}, fmt.Errorf("%w: checkpoint/restart rolls every task back", ErrConfig)
	}
	n := len(e.protos)
	e.failed[failed] = true
	var survivors []logging.PEID
	for pe := range n {
		if !e.failed[pe] {
			survivors = append(survivors, logging.PEID(pe))
		}
	}
	// The failed PE's tasks restart from the checkpoint (the start of
	// the run: no checkpoint since), one on each survivor after it in
	// ring order, as job.Coordinator places them (spread 0).
	start := 0
	for i, s := range survivors {
		if int(s) > failed {
			start = i
			break
		}
	}
	var relocs []logging.Relocation
	lost := e.byPE[failed]
	e.byPE[failed] = nil
	for i, t := range lost {
		to := int(survivors[(start+i)%len(survivors)])
		relocs = append(relocs, logging.Relocation{Task: commutative.TaskID(t), PE: logging.PEID(to)})
		e.protos[to].RestoreTask(logging.TaskCheckpoint{Counters: commutative.NewTaskState(commutative.TaskID(t))}, survivors)
		e.byPE[to] = append(e.byPE[to], t)
		slices.Sort(e.byPE[to])
		e.tasks[t] = taskState{limit: e.tasks[t].limit}
	}
	for pe := range n {
		e.next[pe] = slices.DeleteFunc(e.next[pe], func(env logging.Envelope) bool {
			return env.To == logging.PEID(failed) || env.From == logging.PEID(failed)
		})
		e.inbox[pe] = slices.DeleteFunc(e.inbox[pe], func(env logging.Envelope) bool { return env.From == logging.PEID(failed) })
	}
	var count RecoveryCount
	for _, s := range survivors {
		p := e.protos[s]
		p.FailureNotice([]logging.PEID{logging.PEID(failed)}, relocs)
		for _, env := range p.Ready().Envelopes {
			count.add(env, e.payloadOf)
			e.inbox[env.To] = append(e.inbox[env.To], env)
		}
		p.Advance()
	}
	// The restored tasks start over: they send their start messages again
	// (same identities: their receivers drop them as duplicates).
	for _, r := range relocs {
		e.send(int(r.PE), int(r.Task), 0)
		e.advanceStages(int(r.PE), int(r.Task))
	}
	return count, nil
}

// payloadOf is the pattern's payload size of a message: the send of its
// sender's stage before its key, to its receiver, by its handler.
func (e *Engine) payloadOf(m logging.Message) int {
	if m.Key == 0 {
		return 0
	}
	for _, s := range e.pat.Sends(int(m.ID.Sender), m.Key-1) {
		if s.To == int(m.To) && s.Handler == m.Handler {
			return s.Bytes
		}
	}
	return 0
}
