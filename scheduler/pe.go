package scheduler

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
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

// Control is how a PE talks to the job's launcher.
type Control interface {
	// Output writes a line of job output.
	Output(line string)
	// Exit asks the launcher to end the job with status.
	Exit(status int)
	// Idle answers a quiescence probe: this PE has no work, and has sent
	// and received these numbers of application envelopes so far.
	Idle(round uint64, sent, received uint64)
	// RequestQuiescence asks the launcher to detect quiescence and then
	// post QuiescenceDetected to this PE.
	RequestQuiescence()
}

// Config is what a PE is built from.
type Config struct {
	Rank, Size int
	JobID      uint64
	App        actor.App
	Args       []string
	Net        Net
	Control    Control
	Logger     *slog.Logger
	// Stderr receives Logf lines (defaults to io.Discard).
	Stderr io.Writer
	// SliceBudget is how many envelopes a PE handles before it lets the
	// transport deliver more (default 256).
	SliceBudget int
	// MaxBacklog is the number of unacknowledged bytes above which the PE
	// stops running handlers until acknowledgements come (default 64 MiB).
	MaxBacklog int
}

// Events a PE accepts through Net.Post (besides its own).
type (
	// Begin starts the job: the PE holding the main element delivers Start.
	Begin struct{}
	// Probe asks for the PE's quiescence counters once it is idle.
	Probe struct{ Round uint64 }
	// QuiescenceDetected tells the PE that asked that the job is quiescent.
	QuiescenceDetected struct{ Number uint64 }
	// runSlice is posted by the PE to itself to handle queued work.
	runSlice struct{}
)

// Errors reported for bad input; the PE drops the input and keeps running.
var (
	ErrMalformed       = errors.New("scheduler: malformed batch")
	ErrWrongJob        = errors.New("scheduler: batch from another job")
	ErrUnknownTarget   = errors.New("scheduler: unknown collection or handler")
	ErrNoSuchElement   = errors.New("scheduler: no such element here")
	ErrBadMessage      = errors.New("scheduler: message does not decode")
	ErrBadReduction    = errors.New("scheduler: inconsistent reduction")
	errHandlerPanicked = errors.New("scheduler: handler panicked")
)

// Stats counts what a PE did.
type Stats struct {
	Sent, Received  uint64 // application envelopes (quiescence counters)
	Delivered       uint64 // handler invocations
	Buffered        uint64 // receptions that waited for a key or a region
	BatchesSent     uint64
	BytesSent       uint64
	Dropped         uint64 // bad input dropped
	DroppedByReason map[string]uint64
}

// PE is one processing element: the tasks placed on it, their queues, and
// the reductions it takes part in. All its methods run on one goroutine
// (the transport's actor), so it needs no locks.
type PE struct {
	cfg   Config
	job   *actor.Job
	colls []*collectionState
	log   *slog.Logger

	queue    []*wire.Envelope
	queueAt  int
	outgoing [][]*wire.Envelope
	outBytes []int
	posted   bool

	reductions map[reductionKey]*reductionState
	roots      map[reductionKey]*rootState

	// ctx is the Context of the running handler (valid during the call only).
	ctx taskContext

	qdCallbacks []actor.Callback
	probe       *uint64
	exited      bool

	stats Stats
}

type collectionState struct {
	def    *actor.CollectionDef
	n      int
	local  []*element // by linear index; nil where the element is elsewhere
	sorted []int      // local linear indices, ascending
	homeOf []int32
}

type element struct {
	coll     *collectionState
	lin      int
	index    actor.Index
	task     actor.Task
	expected uint64
	waiting  []pending
	region   *openRegion
	nextRed  uint64
}

type openRegion struct {
	handler *actor.HandlerDef
	key     uint64
	handled int
}

type pending struct {
	env     *wire.Envelope
	handler *actor.HandlerDef
}

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
	job, err := Define(cfg.App, cfg.Args)
	if err != nil {
		return nil, err
	}
	pe := &PE{
		cfg:        cfg,
		job:        job,
		log:        cfg.Logger,
		outgoing:   make([][]*wire.Envelope, cfg.Size),
		outBytes:   make([]int, cfg.Size),
		reductions: map[reductionKey]*reductionState{},
		roots:      map[reductionKey]*rootState{},
	}
	pe.ctx.pe = pe
	pe.stats.DroppedByReason = map[string]uint64{}
	for _, def := range job.Collections() {
		cs := &collectionState{def: def, n: def.Shape.Size(), local: make([]*element, def.Shape.Size())}
		cs.homeOf = make([]int32, cs.n)
		for lin := 0; lin < cs.n; lin++ {
			home := def.Map(lin, cs.n, cfg.Size)
			if home < 0 || home >= cfg.Size {
				return nil, fmt.Errorf("scheduler: collection %q maps element %d to PE %d of %d", def.Name, lin, home, cfg.Size)
			}
			cs.homeOf[lin] = int32(home)
			if home == cfg.Rank {
				idx := def.Shape.At(lin)
				cs.local[lin] = &element{coll: cs, lin: lin, index: idx, task: def.New(idx)}
				cs.sorted = append(cs.sorted, lin)
			}
		}
		pe.colls = append(pe.colls, cs)
	}
	return pe, nil
}

// Define runs an application's declaration and checks it.
func Define(app actor.App, args []string) (*actor.Job, error) {
	if app.Define == nil {
		return nil, fmt.Errorf("scheduler: app %q has no Define", app.Name)
	}
	job := actor.NewJob()
	if err := app.Define(job, args); err != nil {
		return nil, fmt.Errorf("%s: %w", app.Name, err)
	}
	if err := job.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", app.Name, err)
	}
	return job, nil
}

// Stats returns a copy of the PE's counters.
func (pe *PE) Stats() Stats {
	s := pe.stats
	s.DroppedByReason = map[string]uint64{}
	for k, v := range pe.stats.DroppedByReason {
		s.DroppedByReason[k] = v
	}
	return s
}

// LocalElements returns the number of elements of each collection on this PE.
func (pe *PE) LocalElements() []int {
	n := make([]int, len(pe.colls))
	for i, c := range pe.colls {
		n[i] = len(c.sorted)
	}
	return n
}

// Receive handles a payload from PE from (transport callback).
func (pe *PE) Receive(from int, payload []byte) {
	var b wire.Batch
	if err := proto.Unmarshal(payload, &b); err != nil {
		pe.drop(fmt.Errorf("%w from PE %d: %v", ErrMalformed, from, err))
		return
	}
	if b.Job != pe.cfg.JobID {
		pe.drop(fmt.Errorf("%w: PE %d sent job %x, this is job %x", ErrWrongJob, from, b.Job, pe.cfg.JobID))
		return
	}
	pe.stats.Received += uint64(len(b.Envelopes))
	pe.queue = append(pe.queue, b.Envelopes...)
	pe.schedule()
}

// Event handles a posted event (transport callback).
func (pe *PE) Event(ev any) {
	switch ev := ev.(type) {
	case runSlice:
		pe.posted = false
		pe.runSlice()
	case Begin:
		pe.begin()
	case Probe:
		r := ev.Round
		pe.probe = &r
		pe.answerProbe()
	case QuiescenceDetected:
		cbs := pe.qdCallbacks
		pe.qdCallbacks = nil
		for _, cb := range cbs {
			pe.deliverToCallback(cb, &actor.Quiescence{Number: ev.Number})
		}
		pe.schedule()
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
	lin := cs.def.Shape.Linear(t.Index)
	if int(cs.homeOf[lin]) != pe.cfg.Rank {
		return
	}
	payload, err := proto.Marshal(&actor.Start{Args: pe.cfg.Args, NumPes: int32(pe.cfg.Size)})
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal Start: %v", err))
	}
	pe.stats.Sent++
	pe.stats.Received++
	pe.queue = append(pe.queue, &wire.Envelope{Collection: uint32(t.Collection), Handler: uint32(t.Handler), Dest: int64(lin), Payload: payload, Sender: systemSender})
	pe.schedule()
}

// systemSender is the sender id of messages the runtime itself makes.
const systemSender = ^uint64(0)

func (pe *PE) runSlice() {
	if pe.exited {
		return
	}
	budget := pe.cfg.SliceBudget
	for budget > 0 && pe.queueAt < len(pe.queue) {
		if pe.cfg.Net.Backlog() > pe.cfg.MaxBacklog {
			break // wait for acknowledgements before producing more
		}
		env := pe.queue[pe.queueAt]
		pe.queue[pe.queueAt] = nil
		pe.queueAt++
		pe.handle(env)
		budget--
	}
	if pe.queueAt == len(pe.queue) {
		pe.queue = pe.queue[:0]
		pe.queueAt = 0
	} else if pe.queueAt > 4096 && pe.queueAt*2 > len(pe.queue) {
		n := copy(pe.queue, pe.queue[pe.queueAt:])
		clear(pe.queue[n:])
		pe.queue = pe.queue[:n]
		pe.queueAt = 0
	}
	pe.flush()
	if pe.queueAt < len(pe.queue) {
		pe.schedule()
	} else {
		pe.answerProbe()
	}
}

func (pe *PE) answerProbe() {
	if pe.probe == nil || pe.queueAt < len(pe.queue) || pe.posted {
		return
	}
	pe.cfg.Control.Idle(*pe.probe, pe.stats.Sent, pe.stats.Received)
	pe.probe = nil
}

func (pe *PE) flush() {
	for to, envs := range pe.outgoing {
		if len(envs) > 0 {
			pe.flushTo(to)
		}
	}
	pe.cfg.Net.Flush()
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

// handle routes one envelope that arrived at this PE.
func (pe *PE) handle(env *wire.Envelope) {
	if env.Kind == wire.Kind_KIND_REDUCTION {
		pe.handleReduction(env)
		return
	}
	if int(env.Collection) >= len(pe.colls) {
		pe.drop(fmt.Errorf("%w: collection %d", ErrUnknownTarget, env.Collection))
		return
	}
	cs := pe.colls[env.Collection]
	if int(env.Handler) >= len(cs.def.Handlers) {
		pe.drop(fmt.Errorf("%w: handler %d of collection %q", ErrUnknownTarget, env.Handler, cs.def.Name))
		return
	}
	h := cs.def.Handlers[env.Handler]
	switch env.Scope {
	case uint32(actor.ScopeOne):
		pe.deliverTo(cs, env.Dest, env, h)
	case uint32(actor.ScopeSection):
		for _, lin := range env.Dests {
			pe.deliverTo(cs, lin, env, h)
		}
	case uint32(actor.ScopeAll):
		for _, lin := range cs.sorted {
			pe.deliverTo(cs, int64(lin), env, h)
		}
	default:
		pe.drop(fmt.Errorf("%w: scope %d", ErrMalformed, env.Scope))
	}
}

func (pe *PE) deliverTo(cs *collectionState, lin int64, env *wire.Envelope, h *actor.HandlerDef) {
	var el *element
	if lin >= 0 && lin < int64(cs.n) {
		el = cs.local[lin]
	}
	if el == nil {
		pe.drop(fmt.Errorf("%w: %s[%d] for handler %s", ErrNoSuchElement, cs.def.Name, lin, h.Name))
		return
	}
	p := pending{env: env, handler: h}
	if !el.accepts(p) {
		pe.stats.Buffered++
		el.waiting = append(el.waiting, p)
		return
	}
	pe.invoke(el, p)
	pe.release(el)
}

// accepts reports whether a message can be handled now: a keyed message
// needs its key expected, and an open commutative region admits only its
// own messages.
func (el *element) accepts(p pending) bool {
	if el.region != nil {
		return p.handler == el.region.handler && p.env.Key == el.region.key
	}
	return !p.handler.Keyed || p.env.Key == el.expected
}

// release delivers waiting messages that became acceptable, in arrival
// order, until none is.
func (pe *PE) release(el *element) {
	for {
		i := slices.IndexFunc(el.waiting, el.accepts)
		if i < 0 {
			return
		}
		p := el.waiting[i]
		el.waiting = slices.Delete(el.waiting, i, i+1)
		pe.invoke(el, p)
	}
}

func (pe *PE) invoke(el *element, p pending) {
	m := p.handler.NewMessage()
	if err := proto.Unmarshal(p.env.Payload, m); err != nil {
		pe.drop(fmt.Errorf("%w: %s.%s: %v", ErrBadMessage, el.coll.def.Name, p.handler.Name, err))
		return
	}
	ctx := &pe.ctx
	ctx.el = el
	pe.stats.Delivered++
	p.handler.Invoke(el.task, ctx, m)
	if p.handler.Annotation.Order != actor.Commutative {
		return
	}
	if el.region == nil {
		el.region = &openRegion{handler: p.handler, key: p.env.Key}
	}
	el.region.handled++
	if el.region.handled == p.handler.Annotation.RegionSize {
		el.region = nil
		if p.handler.Complete != nil {
			p.handler.Complete(el.task, ctx, p.env.Key)
		}
	}
}

// post sends a message on behalf of element from (nil: the runtime).
func (pe *PE) post(t actor.Target, key uint64, m proto.Message, sender uint64) {
	if int(t.Collection) >= len(pe.colls) {
		panic(fmt.Sprintf("scheduler: post to unknown collection %d", t.Collection))
	}
	cs := pe.colls[t.Collection]
	payload, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal %T: %v", m, err))
	}
	// Envelopes are never changed once made, so one may go to several PEs.
	env := &wire.Envelope{Collection: uint32(t.Collection), Handler: uint32(t.Handler), Key: key, Payload: payload, Sender: sender, Scope: uint32(t.Scope)}
	switch t.Scope {
	case actor.ScopeOne:
		lin := cs.def.Shape.Linear(t.Index)
		env.Dest = int64(lin)
		pe.route(int(cs.homeOf[lin]), env)
	case actor.ScopeAll:
		for to := 0; to < pe.cfg.Size; to++ {
			pe.route(to, env)
		}
	case actor.ScopeSection:
		byPE := map[int][]int64{}
		for _, idx := range t.Section {
			lin := cs.def.Shape.Linear(idx)
			home := int(cs.homeOf[lin])
			byPE[home] = append(byPE[home], int64(lin))
		}
		pes := make([]int, 0, len(byPE))
		for to := range byPE {
			pes = append(pes, to)
		}
		sort.Ints(pes)
		for _, to := range pes {
			part := proto.CloneOf(env)
			part.Dests = byPE[to]
			pe.route(to, part)
		}
	}
}

func (pe *PE) route(to int, env *wire.Envelope) {
	pe.stats.Sent++
	if to == pe.cfg.Rank {
		pe.stats.Received++
		pe.queue = append(pe.queue, env)
		pe.schedule()
		return
	}
	pe.outgoing[to] = append(pe.outgoing[to], env)
	pe.outBytes[to] += len(env.Payload)
	if pe.outBytes[to] >= 1<<20 {
		pe.flushTo(to)
	}
}

func (pe *PE) flushTo(to int) {
	envs := pe.outgoing[to]
	payload, err := proto.Marshal(&wire.Batch{Job: pe.cfg.JobID, Envelopes: envs})
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal batch: %v", err))
	}
	pe.cfg.Net.Send(to, payload)
	pe.stats.BatchesSent++
	pe.stats.BytesSent += uint64(len(payload))
	clear(envs)
	pe.outgoing[to] = envs[:0]
	pe.outBytes[to] = 0
}

func (pe *PE) deliverToCallback(cb actor.Callback, m proto.Message) {
	if got, want := string(m.ProtoReflect().Descriptor().FullName()), cb.MessageName(); got != want {
		panic(fmt.Sprintf("scheduler: callback handler takes %s, runtime delivers %s", want, got))
	}
	pe.post(cb.Target, 0, m, systemSender)
}
