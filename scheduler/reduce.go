package scheduler

import (
	"encoding/binary"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// Reductions: every element sends its contribution to its collection's
// reducer, a task of the runtime's own collection "_reduce" (one element
// per application collection). The contributions of one reduction are a
// commutative region of n messages at the reducer, keyed by the reduction
// number; its completion step combines them over a fixed binary tree of
// linear indices (node [lo,hi) splits at (lo+hi)/2) and sends the result to
// the callback. The result therefore depends only on the contributions,
// never on placement or arrival order, and the reducer is a task like any
// other for checkpoints, logging and recovery.

// reducerCollection declares the runtime's reducer collection of a job.
func reducerCollection(job *actor.Job) *actor.CollectionDef {
	colls := job.Collections()
	id := int32(len(colls))
	def := &actor.CollectionDef{
		ID:    id,
		Name:  "_reduce",
		Shape: actor.Shape{len(colls)},
		Map:   actor.RoundRobinMap,
		New:   func(i actor.Index) actor.Task { return &reducerTask{collection: i[0]} },
	}
	def.Handlers = []*actor.HandlerDef{{
		ID:         0,
		Name:       "contribute",
		Annotation: actor.Annotation{Order: actor.Commutative, RegionSize: 1}, // the size travels in each message
		Message:    actor.ProtoCodec[*wire.Contribution](),
		Invoke: func(t actor.Task, ctx actor.Context, m any) {
			t.(*reducerTask).add(ctx, m.(*wire.Contribution))
		},
		Keyed:    true,
		Complete: func(t actor.Task, ctx actor.Context, key uint64) { t.(*reducerTask).complete(ctx, key) },
	}}
	return def
}

func (pe *PE) contribute(el *element, r actor.Reducer, v actor.Value, cb actor.Callback) {
	number := el.nextRed
	el.nextRed++
	c := &wire.Contribution{
		Collection: uint32(el.coll.def.ID), Number: number, Lin: int64(el.lin),
		Reducer: r.Name(), Callback: callbackToWire(cb), Value: valueToWire(v),
	}
	payload, err := proto.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal contribution: %v", err))
	}
	reducers := pe.colls[len(pe.colls)-1]
	lin := int(el.coll.def.ID)
	pe.send(el.id, reducers.homeOf[lin], logging.Message{
		To:         commutative.TaskID(TaskID(reducers.def.ID, lin)),
		Handler:    handlerID(reducers.def.ID, 0),
		Annotation: commutative.Annotation{Order: commutative.Commutative, RegionSize: el.coll.n},
		Key:        number,
		Payload:    payload,
	})
}

// reducerTask combines the reductions of one application collection.
type reducerTask struct {
	collection int32
	values     map[int64]*wire.Contribution
	bad        error
}

func (r *reducerTask) add(ctx actor.Context, c *wire.Contribution) {
	pe := ctx.(*taskContext).pe
	if r.values == nil {
		r.values = map[int64]*wire.Contribution{}
	}
	n := int64(pe.colls[r.collection].n)
	switch {
	case int32(c.Collection) != r.collection || c.Lin < 0 || c.Lin >= n:
		r.bad = fmt.Errorf("contribution for %d[%d] at the reducer of collection %d", c.Collection, c.Lin, r.collection)
	case r.values[c.Lin] != nil:
		r.bad = fmt.Errorf("element %d contributed twice to reduction %d", c.Lin, c.Number)
	default:
		r.values[c.Lin] = c
	}
}

func (r *reducerTask) complete(ctx actor.Context, number uint64) {
	tc := ctx.(*taskContext)
	pe := tc.pe
	defer func() {
		r.values, r.bad = nil, nil
		ctx.Expect(number + 1)
	}()
	cs := pe.colls[r.collection]
	first := r.values[0]
	if r.bad == nil && (first == nil || len(r.values) != cs.n) {
		r.bad = fmt.Errorf("%d contributions of %d", len(r.values), cs.n)
	}
	var reducer actor.Reducer
	if r.bad == nil {
		var ok bool
		if reducer, ok = pe.job.Reducer(first.Reducer); !ok {
			r.bad = fmt.Errorf("unknown reducer %q", first.Reducer)
		}
	}
	if r.bad == nil {
		r.bad = pe.checkCallback(first.Callback)
	}
	for lin := int64(0); r.bad == nil && lin < int64(cs.n); lin++ {
		c := r.values[lin]
		if c.Reducer != first.Reducer || !proto.Equal(c.Callback, first.Callback) {
			r.bad = fmt.Errorf("element %d used reducer %q and callback %v, element 0 %q and %v", lin, c.Reducer, c.Callback, first.Reducer, first.Callback)
		}
	}
	if r.bad != nil {
		pe.drop(fmt.Errorf("%w: reduction %d of %q: %v", ErrBadReduction, number, cs.def.Name, r.bad))
		return
	}
	var fold func(lo, hi int64) actor.Value
	fold = func(lo, hi int64) actor.Value {
		if hi-lo == 1 {
			return valueFromWire(r.values[lo].Value)
		}
		mid := (lo + hi) / 2
		return reducer.Combine(fold(lo, mid), fold(mid, hi))
	}
	v := fold(0, int64(cs.n))
	res := &actor.ReductionResult{Reducer: first.Reducer, Floats: v.Floats, Ints: v.Ints, Bytes: v.Bytes, Number: number, Contributors: int64(cs.n)}
	cb := callbackFromWire(first.Callback)
	pe.deliverToCallback(tc.el.id, cb.Target(), cb.MessageName(), res)
}

// MarshalBinary packs the reducer: its collection and the contributions of
// the open reduction (none at a coordinated checkpoint).
func (r *reducerTask) MarshalBinary() ([]byte, error) {
	b := binary.AppendUvarint(nil, uint64(r.collection))
	lins := make([]int64, 0, len(r.values))
	for lin := range r.values {
		lins = append(lins, lin)
	}
	slices.Sort(lins)
	for _, lin := range lins {
		c, err := proto.Marshal(r.values[lin])
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b, nil
}

// UnmarshalBinary restores what MarshalBinary packed.
func (r *reducerTask) UnmarshalBinary(b []byte) error {
	coll, n := binary.Uvarint(b)
	if n <= 0 {
		return fmt.Errorf("%w: reducer state", ErrMalformed)
	}
	r.collection, b = int32(coll), b[n:]
	r.values = nil
	for len(b) > 0 {
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return fmt.Errorf("%w: reducer state", ErrMalformed)
		}
		c := &wire.Contribution{}
		if err := proto.Unmarshal(b[n:n+int(size)], c); err != nil {
			return fmt.Errorf("%w: reducer state: %v", ErrMalformed, err)
		}
		if r.values == nil {
			r.values = map[int64]*wire.Contribution{}
		}
		r.values[c.Lin] = c
		b = b[n+int(size):]
	}
	return nil
}

// checkCallback validates a callback that came off the wire.
func (pe *PE) checkCallback(w *wire.Callback) error {
	if w == nil {
		return fmt.Errorf("no callback")
	}
	if int(w.Collection) >= len(pe.colls)-1 {
		return fmt.Errorf("callback to collection %d", w.Collection)
	}
	def := pe.colls[w.Collection].def
	if int(w.Handler) >= len(def.Handlers) {
		return fmt.Errorf("callback to handler %d of %q", w.Handler, def.Name)
	}
	if got := def.Handlers[w.Handler].Message.Name; got != w.Message {
		return fmt.Errorf("callback handler %s.%s takes %s, not %s", def.Name, def.Handlers[w.Handler].Name, got, w.Message)
	}
	if !w.All && !def.Shape.Contains(callbackFromWire(w).Target().Index) {
		return fmt.Errorf("callback to %v outside %q", w.Index, def.Name)
	}
	return nil
}

func callbackToWire(cb actor.Callback) *wire.Callback {
	t := cb.Target()
	w := &wire.Callback{Collection: uint32(t.Collection), Handler: uint32(t.Handler), All: t.Scope == actor.ScopeAll, Message: cb.MessageName()}
	for _, c := range t.Index {
		w.Index = append(w.Index, c)
	}
	return w
}

func callbackFromWire(w *wire.Callback) actor.Callback {
	t := actor.Target{Collection: int32(w.Collection), Handler: int32(w.Handler), Scope: actor.ScopeOne}
	if w.All {
		t.Scope = actor.ScopeAll
	}
	for d := 0; d < len(w.Index) && d < actor.MaxDims; d++ {
		t.Index[d] = w.Index[d]
	}
	return actor.NewCallback(t, w.Message)
}

func valueToWire(v actor.Value) *wire.Value {
	return &wire.Value{Floats: v.Floats, Ints: v.Ints, Bytes: v.Bytes}
}

func valueFromWire(w *wire.Value) actor.Value {
	if w == nil {
		return actor.Value{}
	}
	return actor.Value{Floats: w.Floats, Ints: w.Ints, Bytes: w.Bytes}
}
