package actor

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Task is the state of one element of a collection: the runtime packs
// tasks to checkpoint and migrate them, and unpacks them into a fresh
// value made by the collection's constructor. A task type is either
//
//   - a pointer to a struct whose exported fields are its whole state
//     (numbers, strings, slices, maps, arrays, nested structs of these):
//     the runtime packs them itself (CBOR, see Codec), and a stateless
//     task (a pointer to an empty struct) needs nothing; unexported fields
//     are refused, unless tagged actor:"transient" (set by the constructor,
//     no part of the state: a restored task keeps the constructor's); or
//   - a type that implements encoding.BinaryMarshaler and
//     BinaryUnmarshaler and packs itself: the fast path for states that
//     are mostly large arrays in a form of their own (a struct's own
//     []float64 fields are already written as their bits, see floats.go;
//     deeper ones as CBOR arrays, a header per float).
type Task = any

// App is a program the runtime can run. Define is called on every PE (and
// once by the launcher, to check the arguments) with the application's
// arguments; it must declare the same collections, in the same order (a
// collection's ID is its position), and the same handlers (their IDs come
// from their names) every time. PEs whose declarations differ are refused
// when they join (Job.Digest).
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
	main        *mainElement
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
func (j *Job) MainTarget() Target { return j.main.proxy.target(ScopeOne, j.main.at, nil) }

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
	// pack and unpack are the task type's packing (nil: the task's own
	// MarshalBinary and UnmarshalBinary); layout describes a plain task.
	pack   func(Task) ([]byte, error)
	unpack func(Task, []byte) error
	layout string
}

// ErrBinaryTask reports a task that cannot be packed: a task type that
// implements only one of MarshalBinary and UnmarshalBinary, or a runtime
// collection whose task has neither.
var ErrBinaryTask = errors.New("actor: task cannot be packed")

// PackTask returns the packed state of t, a task of the collection.
func (c *CollectionDef) PackTask(t Task) ([]byte, error) {
	if c.pack != nil {
		return c.pack(t)
	}
	if m, ok := t.(interface{ MarshalBinary() ([]byte, error) }); ok {
		return m.MarshalBinary()
	}
	return nil, fmt.Errorf("%w: %T of collection %q has no MarshalBinary", ErrBinaryTask, t, c.Name)
}

// AppendTask appends the packed state of t (what PackTask returns) to
// dst and returns the extended slice. A task whose type also has
// AppendBinary (encoding.BinaryAppender) packs itself straight into dst:
// a checkpoint packs every task into memory it reuses from one checkpoint
// to the next, where MarshalBinary would return memory new each time.
func (c *CollectionDef) AppendTask(dst []byte, t Task) ([]byte, error) {
	if a, ok := t.(encoding.BinaryAppender); c.pack == nil && ok {
		return a.AppendBinary(dst)
	}
	b, err := c.PackTask(t)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// UnpackTask restores into t, a task fresh from the collection's
// constructor, the state PackTask returned.
func (c *CollectionDef) UnpackTask(t Task, data []byte) error {
	if c.unpack != nil {
		return c.unpack(t, data)
	}
	if u, ok := t.(interface{ UnmarshalBinary([]byte) error }); ok {
		return u.UnmarshalBinary(data)
	}
	return fmt.Errorf("%w: %T of collection %q has no UnmarshalBinary", ErrBinaryTask, t, c.Name)
}

// taskPacking returns how tasks of type t are packed: nil functions for a
// type that packs itself, the plain codec for a pointer to a struct.
func taskPacking(t reflect.Type) (pack func(Task) ([]byte, error), unpack func(Task, []byte) error, layout string, err error) {
	marshals, unmarshals := t.Implements(binaryMarshaler), t.Implements(binaryUnmarshaler)
	switch {
	case marshals && unmarshals:
		return nil, nil, "binary", nil
	case marshals || unmarshals:
		return nil, nil, "", fmt.Errorf("%w: %v has only one of MarshalBinary and UnmarshalBinary", ErrBinaryTask, t)
	case t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct:
		return nil, nil, "", fmt.Errorf("%w: task type %v is not a pointer to a struct (handlers must change the task itself, not a copy), "+
			"and has no MarshalBinary and UnmarshalBinary", ErrNotPlain, t)
	}
	layout, err = plainLayout(t, true)
	if err != nil {
		return nil, nil, "", err
	}
	elem := t.Elem()
	var state []int // the exported fields
	for i := range elem.NumField() {
		if elem.Field(i).IsExported() {
			state = append(state, i)
		}
	}
	if ff := floatFieldsOf(elem); ff != nil {
		pack = func(task Task) ([]byte, error) {
			var w bytes.Buffer
			err := ff.encode(reflect.ValueOf(task).Elem(), &w)
			return w.Bytes(), err
		}
		unpack = func(task Task, data []byte) error {
			shadow := reflect.New(ff.shadow)
			if err := plainDec.Unmarshal(data, shadow.Interface()); err != nil {
				return fmt.Errorf("actor: unpack %v: %w", t, err)
			}
			if err := ff.fromShadow(shadow.Elem(), reflect.ValueOf(task).Elem()); err != nil {
				return fmt.Errorf("actor: unpack %v: %w", t, err)
			}
			return nil
		}
		return pack, unpack, ff.layout(layout), nil
	}
	pack = func(task Task) ([]byte, error) { return plainEnc.Marshal(task) }
	unpack = func(task Task, data []byte) error {
		// Decoding merges into what is there (a map keeps its entries):
		// the state starts from zero, the transient fields stay.
		v := reflect.ValueOf(task).Elem()
		for _, i := range state {
			v.Field(i).SetZero()
		}
		if err := plainDec.Unmarshal(data, task); err != nil {
			return fmt.Errorf("actor: unpack %v: %w", t, err)
		}
		return nil
	}
	return pack, unpack, layout, nil
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
	// ID is the handler's position in its collection's handlers, which
	// are sorted by name: it depends on the names declared, not on the
	// order of the declarations.
	ID         int32
	Name       string
	Annotation Annotation
	// Message encodes and decodes the handler's messages.
	Message Codec
	// Invoke runs the handler on a task.
	Invoke func(t Task, ctx Context, m any)
	// Keyed reports whether messages carry a key (see KeyBy); keyed messages
	// are delivered only when the task expects their key. Key reads it.
	Keyed bool
	Key   func(any) uint64
	// Complete runs when a commutative region of this handler is complete
	// (nil if none was given).
	Complete func(t Task, ctx Context, key uint64)
}

// Collection is a declared collection of tasks of type T (see Task).
type Collection[T any] struct {
	job *Job
	def *CollectionDef
}

// NewCollection declares a collection named name over the index space
// shape, whose elements start on the PEs given by m and are built by
// newTask on their first PE.
func NewCollection[T any](j *Job, name string, shape Shape, m Map, newTask func(Index) T) *Collection[T] {
	def := &CollectionDef{
		ID:       int32(len(j.collections)),
		Name:     name,
		Shape:    append(Shape(nil), shape...),
		Map:      m,
		New:      func(i Index) Task { return newTask(i) },
		taskType: reflect.TypeFor[T](),
	}
	var err error
	if def.pack, def.unpack, def.layout, err = taskPacking(def.taskType); err != nil {
		j.fail("collection %q: %v", name, err)
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
	key      func(any) uint64
	keyType  reflect.Type
	complete func(Task, Context, uint64)
	taskType reflect.Type
}

type optionFunc func(*handlerOptions)

func (f optionFunc) apply(o *handlerOptions) { f(o) }

// KeyBy gives the key of a handler's messages, read by the sender. A task
// states the key it expects next with Context.Expect; keyed messages with
// another key wait in the runtime until the task expects theirs.
func KeyBy[M any](key func(M) uint64) HandlerOption {
	return optionFunc(func(o *handlerOptions) {
		o.key = func(m any) uint64 { return key(m.(M)) }
		o.keyType = reflect.TypeFor[M]()
	})
}

// WhenComplete gives the completion step of a commutative handler: it runs
// once all messages of a region (same key) have been handled. Sends made in
// it are ordinary sends of the task.
func WhenComplete[T any](complete func(t T, ctx Context, key uint64)) HandlerOption {
	return optionFunc(func(o *handlerOptions) {
		o.complete = func(t Task, ctx Context, key uint64) { complete(t.(T), ctx, key) }
		o.taskType = reflect.TypeFor[T]()
	})
}

// Handle declares a handler of collection c for messages of type M, with
// its annotation, and returns the proxy used to send to it. M is a
// protobuf message, or any plain Go type (a struct with exported fields,
// say: see Codec), encoded without generated code.
func Handle[T any, M any](c *Collection[T], name string, a Annotation, fn func(t T, ctx Context, m M), opts ...HandlerOption) *Proxy[M] {
	var o handlerOptions
	for _, opt := range opts {
		opt.apply(&o)
	}
	j := c.job
	where := fmt.Sprintf("handler %s.%s", c.def.Name, name)
	codec, err := CodecOf[M]()
	if err != nil {
		j.fail("%s: message: %v", where, err)
	}
	def := &HandlerDef{
		Name:       name,
		Annotation: a,
		Message:    codec,
		Invoke:     func(t Task, ctx Context, m any) { fn(t.(T), ctx, m.(M)) },
		Keyed:      o.key != nil,
		Key:        o.key,
		Complete:   o.complete,
	}
	if o.key != nil && o.keyType != reflect.TypeFor[M]() {
		j.fail("%s: KeyBy for %v, handler takes %v", where, o.keyType, reflect.TypeFor[M]())
	}
	if o.complete != nil && o.taskType != c.def.taskType {
		j.fail("%s: WhenComplete for %v, collection holds %v", where, o.taskType, c.def.taskType)
	}
	if o.complete != nil && a.Order != Commutative {
		j.fail("%s: WhenComplete given to a %v handler", where, a)
	}
	if a.Order == Commutative && a.RegionSize < 1 && a.regionSizeAt == nil {
		j.fail("%s: commutative region of %d messages", where, a.RegionSize)
	}
	// Handlers are kept sorted by name, and a handler's ID is its
	// position: two binaries that declare the same handlers in another
	// order agree on them. (A proxy or callback reads the ID when it is
	// used, after the declarations.)
	at, dup := slices.BinarySearchFunc(c.def.Handlers, name, func(h *HandlerDef, n string) int { return strings.Compare(h.Name, n) })
	if dup {
		j.fail("%s declared twice", where)
	} else {
		c.def.Handlers = slices.Insert(c.def.Handlers, at, def)
		for i, h := range c.def.Handlers {
			h.ID = int32(i)
		}
	}
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
	j.main = &mainElement{proxy: p, at: at}
}

// mainElement is the element Main named.
type mainElement struct {
	proxy *Proxy[*Start]
	at    Index
}

// HandlerTable describes what the PEs of one job must agree on: the
// collections (in declaration order, which is their ID), each one's shape
// and task layout, its handlers (by name) with their annotations, message
// types and layouts, the reducers and the main element. Two binaries whose
// tables differ cannot run one job: the launcher compares their Digest at
// join.
func (j *Job) HandlerTable() string {
	var b strings.Builder
	for _, c := range j.collections {
		fmt.Fprintf(&b, "collection %d %q shape %v atsync %t task %s\n", c.ID, c.Name, c.Shape, c.AtSync, c.layout)
		for _, h := range c.Handlers {
			fmt.Fprintf(&b, "  handler %d %q %v message %s %s keyed %t complete %t\n",
				h.ID, h.Name, h.Annotation, h.Message.Name, h.Message.Layout, h.Keyed, h.Complete != nil)
		}
	}
	names := make([]string, 0, len(j.reducers))
	for name := range j.reducers {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "reducers %q\n", names)
	if j.main != nil {
		fmt.Fprintf(&b, "main %s.%s%v\n", j.main.proxy.coll.Name, j.main.proxy.handler.Name, j.main.at)
	}
	return b.String()
}

// Digest is a short fingerprint of HandlerTable (hex).
func (j *Job) Digest() string {
	sum := sha256.Sum256([]byte(j.HandlerTable()))
	return hex.EncodeToString(sum[:12])
}
