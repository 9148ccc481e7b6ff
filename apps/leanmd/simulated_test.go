package leanmd

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
)

// runtimeDouble runs an actor.Job in one goroutine, written from the
// contract of package actor as a test double of the scheduler: messages are
// marshalled when posted and delivered in an order drawn from a seeded
// source; keyed messages wait until their task expects their key; an open
// commutative region makes its task's other messages wait; reductions are
// combined over a binary tree of linear indices (lower half first). It can
// also pack every task into a fresh one from its constructor between
// deliveries, as a checkpoint restore or a migration would.
type runtimeDouble struct {
	t      *testing.T
	job    *actor.Job
	rng    *rand.Rand
	numPEs int
	// packProbability is the chance, after each delivery, that the task
	// that handled it is packed and unpacked into a fresh task.
	packProbability float64

	tasks      [][]*doubleTask // by collection, then linear index
	ready      []envelope      // deliverable unless the task is busy or expects another key
	reductions map[reductionID]*pendingReduction

	output     []string
	exited     bool
	exitStatus int
	delivered  int
}

type doubleTask struct {
	task      actor.Task
	index     actor.Index
	expect    uint64
	waiting   []envelope // not deliverable when last tried
	region    *openRegion
	contribed uint64 // reductions contributed to
}

type openRegion struct {
	handler  int32
	key      uint64
	received int
}

type envelope struct {
	collection, handler int32
	lin                 int
	key                 uint64
	data                []byte
}

type reductionID struct {
	collection int32
	number     uint64
}

type pendingReduction struct {
	reducer  actor.Reducer
	callback actor.Callback
	values   []*actor.Value
	count    int
}

func newRuntimeDouble(t *testing.T, app actor.App, args []string, numPEs int, seed uint64) *runtimeDouble {
	t.Helper()
	j := actor.NewJob()
	if err := app.Define(j, args); err != nil {
		t.Fatalf("define %v: %v", args, err)
	}
	if err := j.Err(); err != nil {
		t.Fatalf("job declaration: %v", err)
	}
	r := &runtimeDouble{t: t, job: j, rng: rand.New(rand.NewPCG(seed, 1)), numPEs: numPEs, reductions: map[reductionID]*pendingReduction{}}
	for _, c := range j.Collections() {
		tasks := make([]*doubleTask, c.Shape.Size())
		for lin := range tasks {
			if pe := c.Map(lin, len(tasks), numPEs); pe < 0 || pe >= numPEs {
				t.Fatalf("collection %s element %d mapped to PE %d of %d", c.Name, lin, pe, numPEs)
			}
			tasks[lin] = &doubleTask{task: c.New(c.Shape.At(lin)), index: c.Shape.At(lin)}
		}
		r.tasks = append(r.tasks, tasks)
	}
	main := j.MainTarget()
	r.post(main, 0, &actor.Start{Args: args, NumPes: int32(numPEs)})
	return r
}

// run delivers messages until the job exits or nothing is deliverable.
func (r *runtimeDouble) run() {
	for !r.exited {
		if len(r.ready) == 0 {
			r.t.Fatalf("deadlock after %d deliveries: no deliverable message and no exit", r.delivered)
		}
		i := r.rng.IntN(len(r.ready))
		e := r.ready[i]
		r.ready[i] = r.ready[len(r.ready)-1]
		r.ready = r.ready[:len(r.ready)-1]
		r.tryDeliver(e)
	}
}

func (r *runtimeDouble) tryDeliver(e envelope) {
	def := r.job.Collections()[e.collection]
	h := def.Handlers[e.handler]
	dt := r.tasks[e.collection][e.lin]
	busy := dt.region != nil && (dt.region.handler != e.handler || dt.region.key != e.key)
	if busy || (h.Keyed && e.key != dt.expect) {
		dt.waiting = append(dt.waiting, e)
		return
	}
	m := h.NewMessage()
	if err := proto.Unmarshal(e.data, m); err != nil {
		r.t.Fatalf("unmarshal %s: %v", h.MessageName, err)
	}
	ctx := &doubleContext{r: r, coll: e.collection, lin: e.lin}
	h.Invoke(dt.task, ctx, m)
	if h.Annotation.Order == actor.Commutative {
		if dt.region == nil {
			dt.region = &openRegion{handler: e.handler, key: e.key}
		}
		dt.region.received++
		if dt.region.received == h.Annotation.RegionSize {
			dt.region = nil
			if h.Complete != nil {
				h.Complete(dt.task, ctx, e.key)
			}
		}
	}
	r.delivered++
	if dt.region == nil && r.packProbability > 0 && r.rng.Float64() < r.packProbability {
		data, err := dt.task.MarshalBinary()
		if err != nil {
			r.t.Fatalf("pack %s%v: %v", def.Name, dt.index, err)
		}
		fresh := def.New(dt.index)
		if err := fresh.UnmarshalBinary(data); err != nil {
			r.t.Fatalf("unpack %s%v: %v", def.Name, dt.index, err)
		}
		dt.task = fresh
	}
	// The task's state changed: retry what waited for it.
	r.ready = append(r.ready, dt.waiting...)
	dt.waiting = dt.waiting[:0]
}

func (r *runtimeDouble) post(to actor.Target, key uint64, m proto.Message) {
	data, err := proto.Marshal(m)
	if err != nil {
		r.t.Fatalf("marshal: %v", err)
	}
	shape := r.job.Collections()[to.Collection].Shape
	add := func(i actor.Index) {
		if !shape.Contains(i) {
			r.t.Fatalf("post to %v outside shape %v", i, shape)
		}
		r.ready = append(r.ready, envelope{collection: to.Collection, handler: to.Handler, lin: shape.Linear(i), key: key, data: data})
	}
	switch to.Scope {
	case actor.ScopeOne:
		add(to.Index)
	case actor.ScopeSection:
		for _, i := range to.Section {
			add(i)
		}
	case actor.ScopeAll:
		for lin := range shape.Size() {
			add(shape.At(lin))
		}
	}
}

func (r *runtimeDouble) contribute(coll int32, lin int, red actor.Reducer, v actor.Value, cb actor.Callback) {
	dt := r.tasks[coll][lin]
	id := reductionID{coll, dt.contribed}
	dt.contribed++
	p := r.reductions[id]
	if p == nil {
		p = &pendingReduction{reducer: red, callback: cb, values: make([]*actor.Value, len(r.tasks[coll]))}
		r.reductions[id] = p
	}
	if p.reducer.Name() != red.Name() || p.callback.Target.Handler != cb.Target.Handler {
		r.t.Fatalf("reduction %v: element %d contributes with %s, others with %s", id, lin, red.Name(), p.reducer.Name())
	}
	p.values[lin] = &v
	p.count++
	if p.count < len(p.values) {
		return
	}
	delete(r.reductions, id)
	var combine func(lo, hi int) actor.Value
	combine = func(lo, hi int) actor.Value {
		if hi-lo == 1 {
			return *p.values[lo]
		}
		mid := (lo + hi) / 2
		return p.reducer.Combine(combine(lo, mid), combine(mid, hi))
	}
	total := combine(0, len(p.values))
	result := &actor.ReductionResult{
		Reducer: red.Name(), Floats: total.Floats, Ints: total.Ints, Bytes: total.Bytes,
		Number: id.number, Contributors: int64(len(p.values)),
	}
	// A keyed callback gets the key it reads, as from the runtime.
	var key uint64
	if h := r.job.Collections()[p.callback.Target.Collection].Handlers[p.callback.Target.Handler]; h.Keyed {
		key = h.Key(result)
	}
	r.post(p.callback.Target, key, result)
}

type doubleContext struct {
	r    *runtimeDouble
	coll int32
	lin  int
}

func (c *doubleContext) Index() actor.Index { return c.r.tasks[c.coll][c.lin].index }
func (c *doubleContext) PE() int {
	return c.r.job.Collections()[c.coll].Map(c.lin, len(c.r.tasks[c.coll]), c.r.numPEs)
}
func (c *doubleContext) NumPEs() int                                       { return c.r.numPEs }
func (c *doubleContext) Post(to actor.Target, key uint64, m proto.Message) { c.r.post(to, key, m) }
func (c *doubleContext) Expect(key uint64)                                 { c.r.tasks[c.coll][c.lin].expect = key }
func (c *doubleContext) Contribute(red actor.Reducer, v actor.Value, cb actor.Callback) {
	c.r.contribute(c.coll, c.lin, red, v, cb)
}
func (c *doubleContext) StartQuiescence(actor.Callback) {
	c.r.t.Fatal("leanmd does not use quiescence")
}

// AtSync never takes the sync point: this double has no checkpoints.
func (c *doubleContext) AtSync(uint64) bool { return false }

func (c *doubleContext) Exit(status int) {
	if c.r.exited {
		c.r.t.Fatalf("exit %d after exit %d", status, c.r.exitStatus)
	}
	c.r.exited, c.r.exitStatus = true, status
}
func (c *doubleContext) Printf(format string, args ...any) {
	c.r.output = append(c.r.output, fmt.Sprintf(format, args...))
}
func (c *doubleContext) Logf(format string, args ...any) { c.r.t.Logf(format, args...) }
