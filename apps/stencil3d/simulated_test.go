package stencil3d

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
)

// simulation runs an actor.Job in one goroutine, as the runtime would on
// any number of PEs: messages are marshalled when posted and delivered in an
// order drawn from a seeded source, keyed messages wait for their key,
// commutative regions isolate their task, reductions combine over a fixed
// tree of indices. It is a test double of the scheduler, written from the
// contract in package actor, so that the app's handlers can be checked end
// to end before the real runtime exists.
type simulation struct {
	t           *testing.T
	job         *actor.Job
	rng         *rand.Rand
	numPEs      int
	collections [][]*simTask // by collection id, then linear index
	pending     []envelope
	reductions  map[reductionID]*reduction

	// packEvery, if positive, packs every task and unpacks it into a fresh
	// one from its constructor after every packEvery deliveries, as a
	// checkpoint restore or a migration would.
	packEvery int
	// afterDelivery, if set, runs after each delivery (to corrupt state).
	afterDelivery func(step int)

	output     []string
	exited     bool
	exitStatus int
	deliveries map[string]int // by "collection.handler"
}

type simTask struct {
	task   actor.Task
	index  actor.Index
	expect uint64
	// open region: its handler and key, and how many messages it has had.
	regionOpen    bool
	regionHandler int32
	regionKey     uint64
	regionCount   int
	// reductions is the number of reductions the task contributed to.
	reductions uint64
}

type envelope struct {
	collection, handler int32
	index               actor.Index
	key                 uint64
	data                []byte
}

type reductionID struct {
	collection int32
	number     uint64
}

type reduction struct {
	reducer  actor.Reducer
	callback actor.Callback
	values   map[int]actor.Value
}

func newSimulation(t *testing.T, j *actor.Job, seed uint64, numPEs int) *simulation {
	t.Helper()
	if err := j.Err(); err != nil {
		t.Fatalf("job declaration: %v", err)
	}
	s := &simulation{
		t:          t,
		job:        j,
		rng:        rand.New(rand.NewPCG(seed, seed^0x5eed)),
		numPEs:     numPEs,
		reductions: map[reductionID]*reduction{},
		deliveries: map[string]int{},
	}
	for _, def := range j.Collections() {
		tasks := make([]*simTask, def.Shape.Size())
		for lin := range tasks {
			at := def.Shape.At(lin)
			tasks[lin] = &simTask{task: def.New(at), index: at}
		}
		s.collections = append(s.collections, tasks)
	}
	return s
}

// run delivers Start, then messages until the job exits, and fails the test
// if the job deadlocks or goes quiet without exiting.
func (s *simulation) run(args []string) {
	s.t.Helper()
	s.post(s.job.MainTarget(), 0, &actor.Start{Args: args, NumPes: int32(s.numPEs)})
	for step := 1; !s.exited; step++ {
		if len(s.pending) == 0 {
			s.t.Fatalf("job went quiet without exiting after %d deliveries; output so far:\n%v", step-1, s.output)
		}
		var ready []int
		for n, e := range s.pending {
			if s.deliverable(e) {
				ready = append(ready, n)
			}
		}
		if len(ready) == 0 {
			s.t.Fatalf("deadlock: %d messages pending, none deliverable", len(s.pending))
		}
		n := ready[s.rng.IntN(len(ready))]
		e := s.pending[n]
		s.pending = slices.Delete(s.pending, n, n+1)
		s.deliver(e)
		if s.afterDelivery != nil {
			s.afterDelivery(step)
		}
		if s.packEvery > 0 && step%s.packEvery == 0 {
			s.repackAll()
		}
	}
}

func (s *simulation) handler(e envelope) *actor.HandlerDef {
	return s.job.Collections()[e.collection].Handlers[e.handler]
}

func (s *simulation) taskOf(e envelope) *simTask {
	def := s.job.Collections()[e.collection]
	return s.collections[e.collection][def.Shape.Linear(e.index)]
}

func (s *simulation) deliverable(e envelope) bool {
	task, h := s.taskOf(e), s.handler(e)
	if task.regionOpen {
		return e.handler == task.regionHandler && e.key == task.regionKey
	}
	return !h.Keyed || e.key == task.expect
}

func (s *simulation) deliver(e envelope) {
	task, h := s.taskOf(e), s.handler(e)
	m := h.NewMessage()
	if err := proto.Unmarshal(e.data, m); err != nil {
		s.t.Fatalf("decoding %s: %v", h.Name, err)
	}
	s.deliveries[s.job.Collections()[e.collection].Name+"."+h.Name]++
	ctx := &simContext{sim: s, task: task}
	h.Invoke(task.task, ctx, m)
	if h.Annotation.Order != actor.Commutative {
		return
	}
	if !task.regionOpen {
		task.regionOpen, task.regionHandler, task.regionKey, task.regionCount = true, e.handler, e.key, 0
	}
	task.regionCount++
	if task.regionCount == h.Annotation.RegionSize {
		task.regionOpen = false
		if h.Complete != nil {
			h.Complete(task.task, ctx, e.key)
		}
	}
}

func (s *simulation) repackAll() {
	for id, tasks := range s.collections {
		def := s.job.Collections()[id]
		for _, task := range tasks {
			data, err := task.task.MarshalBinary()
			if err != nil {
				s.t.Fatalf("packing %s%v: %v", def.Name, task.index, err)
			}
			fresh := def.New(task.index)
			if err := fresh.UnmarshalBinary(data); err != nil {
				s.t.Fatalf("unpacking %s%v: %v", def.Name, task.index, err)
			}
			task.task = fresh
		}
	}
}

func (s *simulation) post(to actor.Target, key uint64, m proto.Message) {
	data, err := proto.Marshal(m)
	if err != nil {
		s.t.Fatalf("encoding %T: %v", m, err)
	}
	def := s.job.Collections()[to.Collection]
	var indices []actor.Index
	switch to.Scope {
	case actor.ScopeOne:
		indices = []actor.Index{to.Index}
	case actor.ScopeSection:
		indices = to.Section
	case actor.ScopeAll:
		for lin := range def.Shape.Size() {
			indices = append(indices, def.Shape.At(lin))
		}
	}
	for _, at := range indices {
		if !def.Shape.Contains(at) {
			s.t.Fatalf("message to %v outside %s", at, def.Name)
		}
		s.pending = append(s.pending, envelope{collection: to.Collection, handler: to.Handler, index: at, key: key, data: data})
	}
}

func (s *simulation) contribute(from *simTask, collection int32, r actor.Reducer, v actor.Value, cb actor.Callback) {
	def := s.job.Collections()[collection]
	id := reductionID{collection, from.reductions}
	from.reductions++
	red, ok := s.reductions[id]
	if !ok {
		red = &reduction{reducer: r, callback: cb, values: map[int]actor.Value{}}
		s.reductions[id] = red
	}
	if red.reducer.Name() != r.Name() || !sameCallback(red.callback, cb) {
		s.t.Fatalf("reduction %d of %s: contributions with different reducers or callbacks", id.number, def.Name)
	}
	red.values[def.Shape.Linear(from.index)] = v
	if len(red.values) < def.Shape.Size() {
		return
	}
	delete(s.reductions, id)
	var combine func(lo, hi int) actor.Value
	combine = func(lo, hi int) actor.Value {
		if hi-lo == 1 {
			return red.values[lo]
		}
		mid := (lo + hi) / 2
		return red.reducer.Combine(combine(lo, mid), combine(mid, hi))
	}
	total := combine(0, def.Shape.Size())
	result := &actor.ReductionResult{
		Reducer:      r.Name(),
		Floats:       total.Floats,
		Ints:         total.Ints,
		Bytes:        total.Bytes,
		Number:       id.number,
		Contributors: int64(def.Shape.Size()),
	}
	// A keyed callback gets the key it reads, as from the runtime.
	var key uint64
	if h := s.job.Collections()[cb.Target.Collection].Handlers[cb.Target.Handler]; h.Keyed {
		key = h.Key(result)
	}
	s.post(cb.Target, key, result)
}

func sameCallback(a, b actor.Callback) bool {
	return a.MessageName() == b.MessageName() && a.Target.Collection == b.Target.Collection &&
		a.Target.Handler == b.Target.Handler && a.Target.Scope == b.Target.Scope &&
		a.Target.Index == b.Target.Index && slices.Equal(a.Target.Section, b.Target.Section)
}

// simContext is the actor.Context of one delivery.
type simContext struct {
	sim  *simulation
	task *simTask
}

func (c *simContext) Index() actor.Index { return c.task.index }
func (c *simContext) PE() int            { return 0 }
func (c *simContext) NumPEs() int        { return c.sim.numPEs }

func (c *simContext) Post(to actor.Target, key uint64, m proto.Message) { c.sim.post(to, key, m) }

func (c *simContext) Expect(key uint64) { c.task.expect = key }

func (c *simContext) Contribute(r actor.Reducer, v actor.Value, cb actor.Callback) {
	for id, tasks := range c.sim.collections {
		if slices.Contains(tasks, c.task) {
			c.sim.contribute(c.task, int32(id), r, v, cb)
			return
		}
	}
	c.sim.t.Fatalf("contribution from an unknown task")
}

func (c *simContext) StartQuiescence(actor.Callback) {
	c.sim.t.Fatalf("stencil3d does not use quiescence detection")
}

// AtSync never takes the sync point: this double has no checkpoints.
func (c *simContext) AtSync(uint64) bool { return false }

func (c *simContext) Exit(status int) {
	if c.sim.exited {
		c.sim.t.Fatalf("job exited twice")
	}
	c.sim.exited, c.sim.exitStatus = true, status
}

func (c *simContext) Printf(format string, args ...any) {
	c.sim.output = append(c.sim.output, fmt.Sprintf(format, args...))
}

func (c *simContext) Logf(format string, args ...any) {
	c.sim.t.Logf(format, args...)
}
