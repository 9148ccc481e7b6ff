package actor

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Task is the state of one element of a collection. It must serialise its
// whole state: the runtime packs tasks to checkpoint and migrate them, and
// unpacks them into a fresh value made by the collection's constructor.
type Task interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// App is a program the runtime can run. Define is called on every PE (and
// once by the launcher, to check the arguments) with the application's
// arguments; it must declare the same collections and handlers in the same
// order every time.
type App struct {
	Name    string
	Summary string
	Define  func(j *Job, args []string) error
	// LastStep, if set, tells the highest step the application's tasks
	// offer at a sync point (the step they pass to Context.AtSync) when
	// run with args; ok is false when it cannot be told in advance (the
	// run ends at a simulated time, say) or no task offers a sync point.
	// Where the run may end sooner, it is an upper bound. The launcher
	// uses it to check and to choose injected failures (--kill).
	LastStep func(args []string) (step uint64, ok bool)
}

// Job is the declaration of a program: its collections, their handlers, its
// reducers and its main element. Declaration errors are collected and
// reported by Err; the runtime refuses to start a job with errors.
type Job struct {
	collections []*CollectionDef
	reducers    map[string]Reducer
	main        *Target
	errs        []error
}

// NewJob returns an empty job declaration.
func NewJob() *Job {
	j := &Job{reducers: map[string]Reducer{}}
	for _, r := range []Reducer{Sum, Min, Max} {
		j.reducers[r.name] = r
	}
	return j
}

func (j *Job) fail(format string, args ...any) {
	j.errs = append(j.errs, fmt.Errorf("actor: "+format, args...))
}

// Err returns the declaration errors, if any.
func (j *Job) Err() error {
	if j.main == nil && len(j.errs) == 0 {
		return errors.New("actor: job has no main element (call actor.Main)")
	}
	errs := slices.Clone(j.errs)
	for _, c := range j.collections {
		if err := c.checkOrder(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ErrUnkeyedOrder reports a collection whose ordered or commutative
// handlers the program does not tell apart by keys.
var ErrUnkeyedOrder = errors.New("actor: ordered handlers without keys")

// checkOrder enforces what lets the protocols replay a task without
// determinants: the program itself fixes the order of its ordered and
// commutative receptions. A handler without KeyBy admits its messages at
// any moment, so it may be a task's only ordered or commutative handler;
// with two or more, each needs a key, and the task's Expect says which
// one comes next. (That a message could only arrive after another one in
// a failure-free run is no order: after a failure the survivors resend
// every logged message at once.)
func (c *CollectionDef) checkOrder() error {
	var noDeterminant []*HandlerDef
	for _, h := range c.Handlers {
		if !h.Annotation.NeedsDeterminant() {
			noDeterminant = append(noDeterminant, h)
		}
	}
	if len(noDeterminant) < 2 {
		return nil
	}
	for _, h := range noDeterminant {
		if h.Keyed {
			continue
		}
		other := noDeterminant[0]
		if other == h {
			other = noDeterminant[1]
		}
		return fmt.Errorf("%w: collection %q: handler %q (%v) has no KeyBy, and %q (%v) is also %v: "+
			"a task could have messages of both waiting at once, and after a failure the runtime could not tell which came first; "+
			"give each such handler a KeyBy and have the task Expect the key of what it handles next "+
			"(or annotate one of them AnnotateOrderDependent, which records the order)",
			ErrUnkeyedOrder, c.Name, h.Name, h.Annotation, other.Name, other.Annotation, orderWord(other.Annotation))
	}
	return nil
}

func orderWord(a Annotation) string {
	if a.Order == Commutative {
		return "commutative"
	}
	return "ordered"
}

// Collections returns the declared collections, in declaration order. The
// position of a collection is its id.
func (j *Job) Collections() []*CollectionDef { return j.collections }

// MainTarget returns the element that receives the Start message.
func (j *Job) MainTarget() Target { return *j.main }

// Reducer returns the reducer registered under name.
func (j *Job) Reducer(name string) (Reducer, bool) {
	r, ok := j.reducers[name]
	return r, ok
}

// CustomReducer registers a user-defined reducer. combine must be
// associative; the runtime applies it over a fixed tree of element indices,
// so the result does not depend on placement or arrival order.
func (j *Job) CustomReducer(name string, combine func(a, b Value) Value) Reducer {
	if _, dup := j.reducers[name]; dup {
		j.fail("reducer %q declared twice", name)
	}
	r := Reducer{name: name, combine: combine}
	j.reducers[name] = r
	return r
}

// CollectionDef is the runtime's view of a declared collection.
type CollectionDef struct {
	ID       int32
	Name     string
	Shape    Shape
	Map      Map
	New      func(Index) Task
	Handlers []*HandlerDef
	// AtSync reports that the elements offer sync points (UsesAtSync).
	AtSync   bool
	taskType reflect.Type
}

// Resumer is implemented by tasks of collections that use sync points: the
// runtime calls ResumeFromSync after a sync point AtSync took, and after
// restoring the task from a checkpoint taken there. Sends made in it are
// ordinary sends of the task.
type Resumer interface {
	ResumeFromSync(ctx Context)
}

// UsesAtSync declares that the collection's elements offer a sync point
// (Context.AtSync) at the end of every step, where the runtime may
// checkpoint and migrate them. T must implement Resumer.
func (c *Collection[T]) UsesAtSync() {
	if _, ok := any(*new(T)).(Resumer); !ok {
		c.job.fail("collection %q uses AtSync but %v has no ResumeFromSync", c.def.Name, c.def.taskType)
	}
	c.def.AtSync = true
}

// HandlerDef is the runtime's view of a declared handler.
type HandlerDef struct {
	ID         int32
	Name       string
	Annotation Annotation
	// MessageName is the protobuf full name of the handler's message type.
	MessageName protoreflect.FullName
	// NewMessage returns an empty message to decode into.
	NewMessage func() proto.Message
	// Invoke runs the handler on a task.
	Invoke func(t Task, ctx Context, m proto.Message)
	// Keyed reports whether messages carry a key (see KeyBy); keyed messages
	// are delivered only when the task expects their key. Key reads it.
	Keyed bool
	Key   func(proto.Message) uint64
	// Complete runs when a commutative region of this handler is complete
	// (nil if none was given).
	Complete func(t Task, ctx Context, key uint64)
}

// Collection is a declared collection of tasks of type T.
type Collection[T Task] struct {
	job *Job
	def *CollectionDef
}

// NewCollection declares a collection named name over the index space
// shape, whose elements start on the PEs given by m and are built by
// newTask on their first PE.
func NewCollection[T Task](j *Job, name string, shape Shape, m Map, newTask func(Index) T) *Collection[T] {
	def := &CollectionDef{
		ID:       int32(len(j.collections)),
		Name:     name,
		Shape:    append(Shape(nil), shape...),
		Map:      m,
		New:      func(i Index) Task { return newTask(i) },
		taskType: reflect.TypeFor[T](),
	}
	if err := shape.Validate(); err != nil {
		j.fail("collection %q: %v", name, err)
	}
	if m == nil {
		j.fail("collection %q: no map", name)
	}
	for _, c := range j.collections {
		if c.Name == name {
			j.fail("collection %q declared twice", name)
		}
	}
	j.collections = append(j.collections, def)
	return &Collection[T]{job: j, def: def}
}

// Def returns the runtime's view of the collection.
func (c *Collection[T]) Def() *CollectionDef { return c.def }

// Shape returns the collection's index space.
func (c *Collection[T]) Shape() Shape { return c.def.Shape }

// HandlerOption changes how a handler is declared.
type HandlerOption interface{ apply(*handlerOptions) }

type handlerOptions struct {
	key      func(proto.Message) uint64
	keyType  reflect.Type
	complete func(Task, Context, uint64)
	taskType reflect.Type
}

type optionFunc func(*handlerOptions)

func (f optionFunc) apply(o *handlerOptions) { f(o) }

// KeyBy gives the key of a handler's messages, read by the sender. A task
// states the key it expects next with Context.Expect; keyed messages with
// another key wait in the runtime until the task expects theirs.
func KeyBy[M proto.Message](key func(M) uint64) HandlerOption {
	return optionFunc(func(o *handlerOptions) {
		o.key = func(m proto.Message) uint64 { return key(m.(M)) }
		o.keyType = reflect.TypeFor[M]()
	})
}

// WhenComplete gives the completion step of a commutative handler: it runs
// once all messages of a region (same key) have been handled. Sends made in
// it are ordinary sends of the task.
func WhenComplete[T Task](complete func(t T, ctx Context, key uint64)) HandlerOption {
	return optionFunc(func(o *handlerOptions) {
		o.complete = func(t Task, ctx Context, key uint64) { complete(t.(T), ctx, key) }
		o.taskType = reflect.TypeFor[T]()
	})
}

// Handle declares a handler of collection c for messages of type M, with
// its annotation, and returns the proxy used to send to it.
func Handle[T Task, M proto.Message](c *Collection[T], name string, a Annotation, fn func(t T, ctx Context, m M), opts ...HandlerOption) *Proxy[M] {
	var o handlerOptions
	for _, opt := range opts {
		opt.apply(&o)
	}
	var zero M
	def := &HandlerDef{
		ID:          int32(len(c.def.Handlers)),
		Name:        name,
		Annotation:  a,
		MessageName: zero.ProtoReflect().Descriptor().FullName(),
		NewMessage:  func() proto.Message { return zero.ProtoReflect().Type().New().Interface() },
		Invoke:      func(t Task, ctx Context, m proto.Message) { fn(t.(T), ctx, m.(M)) },
		Keyed:       o.key != nil,
		Key:         o.key,
		Complete:    o.complete,
	}
	j := c.job
	where := fmt.Sprintf("handler %s.%s", c.def.Name, name)
	if o.key != nil && o.keyType != reflect.TypeFor[M]() {
		j.fail("%s: KeyBy for %v, handler takes %v", where, o.keyType, reflect.TypeFor[M]())
	}
	if o.complete != nil && o.taskType != c.def.taskType {
		j.fail("%s: WhenComplete for %v, collection holds %v", where, o.taskType, c.def.taskType)
	}
	if o.complete != nil && a.Order != Commutative {
		j.fail("%s: WhenComplete given to a %v handler", where, a)
	}
	if a.Order == Commutative && a.RegionSize < 1 {
		j.fail("%s: commutative region of %d messages", where, a.RegionSize)
	}
	for _, h := range c.def.Handlers {
		if h.Name == name {
			j.fail("%s declared twice", where)
		}
	}
	c.def.Handlers = append(c.def.Handlers, def)
	return &Proxy[M]{coll: c.def, handler: def, key: o.key}
}

// Main names the element that receives Start when the job begins.
func Main(j *Job, p *Proxy[*Start], at Index) {
	if j.main != nil {
		j.fail("main element declared twice")
	}
	if !p.coll.Shape.Contains(at) {
		j.fail("main element %v outside collection %q", at, p.coll.Name)
	}
	t := p.target(ScopeOne, at, nil)
	j.main = &t
}
