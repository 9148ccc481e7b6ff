package apptest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gochare/gochare/actor"
)

// Double runs a declared job in one goroutine: a test double of the
// runtime written from the contract of package actor, so that an
// application's handlers can be checked end to end, in many delivery
// orders, without PEs. Messages are marshalled when posted and delivered
// in an order drawn from a seeded source; a keyed message waits until its
// task expects its key; an open commutative region makes its task's other
// messages wait; reductions are combined over a binary tree of linear
// indices (lower half first), as the runtime does. It has no checkpoints
// (AtSync is always false) and no quiescence detection, but it can pack
// tasks and unpack them into fresh ones along the way, as a checkpoint
// restore or a migration would.
type Double struct {
	// PackEvery, if positive, packs every task and unpacks it into a
	// fresh one from its constructor after every PackEvery deliveries.
	PackEvery int
	// PackProbability is the chance, after a delivery that leaves no
	// region open, that the task that handled it is packed and unpacked
	// into a fresh task.
	PackProbability float64
	// AfterDelivery, if set, runs after each delivery with its number
	// (from 1), to change a task's state, say.
	AfterDelivery func(delivery int)

	// Output holds the lines the tasks printed, ExitStatus the status
	// they exited with.
	Output     []string
	ExitStatus int
	// Deliveries counts the deliveries by "collection.handler".
	Deliveries map[string]int

	t          testing.TB
	job        *actor.Job
	rng        *rand.Rand
	numPEs     int
	tasks      [][]*doubleTask // by collection, then linear index
	ready      []envelope      // to try, in no order
	reductions map[reductionID]*pendingReduction
	delivered  int
	exited     bool
}

type doubleTask struct {
	task    actor.Task
	index   actor.Index
	expect  uint64
	waiting []envelope // not deliverable when last tried
	region  *openRegion
	// contributed counts the reductions the task contributed to.
	contributed uint64
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

// Define declares app for args on a fresh job and fails t if the
// arguments or the declaration are refused.
func Define(t testing.TB, app actor.App, args []string) *actor.Job {
	t.Helper()
	j := actor.NewJob()
	if err := app.Define(j, args); err != nil {
		t.Fatalf("define %s %q: %v", app.Name, args, err)
	}
	return j
}

// NewDouble makes the tasks of job j, as on numPEs PEs, with a delivery
// order drawn from seed.
func NewDouble(t testing.TB, j *actor.Job, numPEs int, seed uint64) *Double {
	t.Helper()
	if err := j.Err(); err != nil {
		t.Fatalf("job declaration: %v", err)
	}
	d := &Double{
		Deliveries: map[string]int{},
		t:          t,
		job:        j,
		rng:        rand.New(rand.NewPCG(seed, 1)),
		numPEs:     numPEs,
		reductions: map[reductionID]*pendingReduction{},
	}
	for _, c := range j.Collections() {
		tasks := make([]*doubleTask, c.Shape.Size())
		for lin := range tasks {
			if pe := c.Map(lin, len(tasks), numPEs); pe < 0 || pe >= numPEs {
				t.Fatalf("collection %s element %d mapped to PE %d of %d", c.Name, lin, pe, numPEs)
			}
			tasks[lin] = &doubleTask{task: c.New(c.Shape.At(lin)), index: c.Shape.At(lin)}
		}
		d.tasks = append(d.tasks, tasks)
	}
	return d
}

// Task returns the task at linear index lin of collection number
// collection (in declaration order, from 0).
func (d *Double) Task(collection, lin int) actor.Task { return d.tasks[collection][lin].task }

// Run sends actor.Start with args to the main element and delivers
// messages until a task calls Exit. It fails the test if the job goes
// quiet or deadlocks first.
func (d *Double) Run(args []string) {
	d.t.Helper()
	start := &actor.Start{Args: args, NumPes: int32(d.numPEs)}
	main := d.job.MainTarget()
	var key uint64
	if h := d.job.Collections()[main.Collection].Handlers[main.Handler]; h.Keyed {
		key = h.Key(start)
	}
	d.post(main, key, start)
	for !d.exited {
		if len(d.ready) == 0 {
			d.t.Fatalf("deadlock after %d deliveries: no deliverable message and no exit; output so far:\n%v", d.delivered, d.Output)
		}
		i := d.rng.IntN(len(d.ready))
		e := d.ready[i]
		d.ready[i] = d.ready[len(d.ready)-1]
		d.ready = d.ready[:len(d.ready)-1]
		d.tryDeliver(e)
	}
}

func (d *Double) tryDeliver(e envelope) {
	def := d.job.Collections()[e.collection]
	h := def.Handlers[e.handler]
	dt := d.tasks[e.collection][e.lin]
	busy := dt.region != nil && (dt.region.handler != e.handler || dt.region.key != e.key)
	if busy || (h.Keyed && e.key != dt.expect) {
		dt.waiting = append(dt.waiting, e)
		return
	}
	m, err := h.Message.Decode(e.data)
	if err != nil {
		d.t.Fatalf("unmarshal %s: %v", h.Message.Name, err)
	}
	d.delivered++
	d.Deliveries[def.Name+"."+h.Name]++
	ctx := &doubleContext{d: d, coll: e.collection, lin: e.lin}
	h.Invoke(dt.task, ctx, m)
	if h.Annotation.Order == actor.Commutative {
		if dt.region == nil {
			dt.region = &openRegion{handler: e.handler, key: e.key}
		}
		dt.region.received++
		if dt.region.received == h.Annotation.RegionSizeAt(dt.index, e.key) {
			dt.region = nil
			if h.Complete != nil {
				h.Complete(dt.task, ctx, e.key)
			}
		}
	}
	if dt.region == nil && d.PackProbability > 0 && d.rng.Float64() < d.PackProbability {
		d.repack(def, dt)
	}
	// The task's state changed: retry what waited for it.
	d.ready = append(d.ready, dt.waiting...)
	dt.waiting = dt.waiting[:0]
	if d.AfterDelivery != nil {
		d.AfterDelivery(d.delivered)
	}
	if d.PackEvery > 0 && d.delivered%d.PackEvery == 0 {
		for c, tasks := range d.tasks {
			for _, dt := range tasks {
				d.repack(d.job.Collections()[c], dt)
			}
		}
	}
}

// repack replaces a task by a fresh one from its constructor that
// unpacked its packed state.
func (d *Double) repack(def *actor.CollectionDef, dt *doubleTask) {
	data, err := def.PackTask(dt.task)
	if err != nil {
		d.t.Fatalf("pack %s%v: %v", def.Name, dt.index, err)
	}
	fresh := def.New(dt.index)
	if err := def.UnpackTask(fresh, data); err != nil {
		d.t.Fatalf("unpack %s%v: %v", def.Name, dt.index, err)
	}
	dt.task = fresh
}

func (d *Double) post(to actor.Target, key uint64, m any) {
	def := d.job.Collections()[to.Collection]
	h := def.Handlers[to.Handler]
	data, err := h.Message.Append(nil, m)
	if err != nil {
		d.t.Fatalf("marshal %T: %v", m, err)
	}

	add := func(i actor.Index) {
		if !def.Shape.Contains(i) {
			d.t.Fatalf("message to %v outside collection %s of shape %v", i, def.Name, def.Shape)
		}
		if h.Annotation.Order == actor.Commutative && h.Annotation.RegionSizeAt(i, key) < 1 {
			d.t.Fatalf("message to %s%v of handler %s, whose region of key %d has %d messages", def.Name, i, h.Name, key, h.Annotation.RegionSizeAt(i, key))
		}
		d.ready = append(d.ready, envelope{collection: to.Collection, handler: to.Handler, lin: def.Shape.Linear(i), key: key, data: data})
	}
	switch to.Scope {
	case actor.ScopeOne:
		add(to.Index)
	case actor.ScopeSection:
		for _, i := range to.Section {
			add(i)
		}
	case actor.ScopeAll:
		for lin := range def.Shape.Size() {
			add(def.Shape.At(lin))
		}
	}
}

func (d *Double) contribute(coll int32, lin int, red actor.Reducer, v actor.Value, cb actor.Callback) {
	def := d.job.Collections()[coll]
	dt := d.tasks[coll][lin]
	id := reductionID{coll, dt.contributed}
	dt.contributed++
	p := d.reductions[id]
	if p == nil {
		p = &pendingReduction{reducer: red, callback: cb, values: make([]*actor.Value, len(d.tasks[coll]))}
		d.reductions[id] = p
	}
	if p.reducer.Name() != red.Name() || !sameCallback(p.callback, cb) {
		d.t.Fatalf("reduction %d of %s: element %d contributes with reducer %s and callback %+v, others with %s and %+v",
			id.number, def.Name, lin, red.Name(), cb.Target(), p.reducer.Name(), p.callback.Target())
	}
	p.values[lin] = &v
	p.count++
	if p.count < len(p.values) {
		return
	}
	delete(d.reductions, id)
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
	if h := d.job.Collections()[cb.Target().Collection].Handlers[cb.Target().Handler]; h.Keyed {
		key = h.Key(result)
	}
	d.post(cb.Target(), key, result)
}

func sameCallback(a, b actor.Callback) bool {
	at, bt := a.Target(), b.Target()
	return a.MessageName() == b.MessageName() && at.Collection == bt.Collection &&
		at.Handler == bt.Handler && at.Scope == bt.Scope &&
		at.Index == bt.Index && slices.Equal(at.Section, bt.Section)
}

// doubleContext is the actor.Context of one delivery.
type doubleContext struct {
	d    *Double
	coll int32
	lin  int
}

func (c *doubleContext) Index() actor.Index { return c.d.tasks[c.coll][c.lin].index }

func (c *doubleContext) PE() int {
	return c.d.job.Collections()[c.coll].Map(c.lin, len(c.d.tasks[c.coll]), c.d.numPEs)
}

func (c *doubleContext) NumPEs() int { return c.d.numPEs }

func (c *doubleContext) Post(to actor.Target, key uint64, m any) { c.d.post(to, key, m) }

func (c *doubleContext) Expect(key uint64) { c.d.tasks[c.coll][c.lin].expect = key }

func (c *doubleContext) Contribute(r actor.Reducer, v actor.Value, cb actor.Callback) {
	c.d.contribute(c.coll, c.lin, r, v, cb)
}

func (c *doubleContext) StartQuiescence(actor.CallbackTo[*actor.Quiescence]) {
	c.d.t.Fatal("apptest: the runtime double has no quiescence detection")
}

// AtSync never takes the sync point: the double has no checkpoints.
func (c *doubleContext) AtSync(uint64) bool { return false }

func (c *doubleContext) Exit(status int) {
	if c.d.exited {
		c.d.t.Fatalf("exit %d after exit %d", status, c.d.ExitStatus)
	}
	c.d.exited, c.d.ExitStatus = true, status
}

func (c *doubleContext) Printf(format string, args ...any) {
	c.d.Output = append(c.d.Output, fmt.Sprintf(format, args...))
}

func (c *doubleContext) Logf(format string, args ...any) { c.d.t.Logf(format, args...) }
