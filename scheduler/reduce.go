package scheduler

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/scheduler/wire"
)

// Reductions are combined over a fixed binary tree of linear element
// indices: node [lo,hi) splits at (lo+hi)/2. Each PE combines the largest
// subtrees whose elements are all its own and sends them to the root PE
// (PE 0), which combines the rest of the tree. The result therefore depends
// only on the contributions, never on placement or arrival order.

type reductionKey struct {
	collection int32
	number     uint64
}

type reductionState struct {
	reducer  actor.Reducer
	callback actor.Callback
	values   map[int]actor.Value
}

type rootState struct {
	reducer  actor.Reducer
	callback *wire.Callback
	nodes    map[[2]int64]actor.Value
	covered  int64
}

const rootPE = 0

func (pe *PE) contribute(el *element, r actor.Reducer, v actor.Value, cb actor.Callback) {
	key := reductionKey{el.coll.def.ID, el.nextRed}
	el.nextRed++
	st := pe.reductions[key]
	if st == nil {
		st = &reductionState{reducer: r, callback: cb, values: map[int]actor.Value{}}
		pe.reductions[key] = st
	}
	if st.reducer.Name() != r.Name() || !sameTarget(st.callback, cb) {
		panic(fmt.Sprintf("scheduler: %s%v contributes to reduction %d with reducer %q and callback %v, others used %q and %v",
			el.coll.def.Name, el.index, key.number, r.Name(), cb.Target, st.reducer.Name(), st.callback.Target))
	}
	st.values[el.lin] = v
	cs := el.coll
	if len(st.values) < len(cs.sorted) {
		return
	}
	delete(pe.reductions, key)
	partial := &wire.ReductionPartial{
		Collection: uint32(key.collection),
		Number:     key.number,
		Reducer:    r.Name(),
		Callback:   callbackToWire(cb),
	}
	var visit func(lo, hi int)
	visit = func(lo, hi int) {
		n := countIn(cs.sorted, lo, hi)
		switch {
		case n == 0:
		case n == hi-lo:
			partial.Nodes = append(partial.Nodes, &wire.ReductionNode{Lo: int64(lo), Hi: int64(hi), Value: valueToWire(fold(r, st.values, lo, hi))})
		default:
			mid := (lo + hi) / 2
			visit(lo, mid)
			visit(mid, hi)
		}
	}
	visit(0, cs.n)
	payload, err := proto.Marshal(partial)
	if err != nil {
		panic(fmt.Sprintf("scheduler: marshal reduction: %v", err))
	}
	pe.route(rootPE, &wire.Envelope{Kind: wire.Kind_KIND_REDUCTION, Collection: uint32(key.collection), Payload: payload, Sender: TaskID(el.coll.def.ID, el.lin)})
}

// fold combines the values of [lo,hi) with the tree's own shape.
func fold(r actor.Reducer, values map[int]actor.Value, lo, hi int) actor.Value {
	if hi-lo == 1 {
		return values[lo]
	}
	mid := (lo + hi) / 2
	return r.Combine(fold(r, values, lo, mid), fold(r, values, mid, hi))
}

func countIn(sorted []int, lo, hi int) int {
	return sort.SearchInts(sorted, hi) - sort.SearchInts(sorted, lo)
}

func (pe *PE) handleReduction(env *wire.Envelope) {
	var p wire.ReductionPartial
	if err := proto.Unmarshal(env.Payload, &p); err != nil {
		pe.drop(fmt.Errorf("%w: %v", ErrBadReduction, err))
		return
	}
	if int(p.Collection) >= len(pe.colls) {
		pe.drop(fmt.Errorf("%w: collection %d", ErrBadReduction, p.Collection))
		return
	}
	cs := pe.colls[p.Collection]
	r, ok := pe.job.Reducer(p.Reducer)
	if !ok {
		pe.drop(fmt.Errorf("%w: unknown reducer %q", ErrBadReduction, p.Reducer))
		return
	}
	if err := pe.checkCallback(p.Callback); err != nil {
		pe.drop(fmt.Errorf("%w: %v", ErrBadReduction, err))
		return
	}
	key := reductionKey{int32(p.Collection), p.Number}
	st := pe.roots[key]
	if st == nil {
		st = &rootState{reducer: r, callback: p.Callback, nodes: map[[2]int64]actor.Value{}}
		pe.roots[key] = st
	}
	for _, node := range p.Nodes {
		span := [2]int64{node.Lo, node.Hi}
		if node.Lo < 0 || node.Hi > int64(cs.n) || node.Lo >= node.Hi {
			pe.drop(fmt.Errorf("%w: node [%d,%d) of %d elements", ErrBadReduction, node.Lo, node.Hi, cs.n))
			continue
		}
		if _, dup := st.nodes[span]; dup {
			pe.drop(fmt.Errorf("%w: node [%d,%d) twice", ErrBadReduction, node.Lo, node.Hi))
			continue
		}
		st.nodes[span] = valueFromWire(node.Value)
		st.covered += node.Hi - node.Lo
	}
	if st.covered < int64(cs.n) {
		return
	}
	delete(pe.roots, key)
	var eval func(lo, hi int64) actor.Value
	eval = func(lo, hi int64) actor.Value {
		if v, ok := st.nodes[[2]int64{lo, hi}]; ok {
			return v
		}
		if hi-lo <= 1 {
			panic(fmt.Sprintf("scheduler: reduction %d of %q has no value for element %d", p.Number, cs.def.Name, lo))
		}
		mid := (lo + hi) / 2
		return st.reducer.Combine(eval(lo, mid), eval(mid, hi))
	}
	v := eval(0, int64(cs.n))
	res := &actor.ReductionResult{Reducer: p.Reducer, Floats: v.Floats, Ints: v.Ints, Bytes: v.Bytes, Number: p.Number, Contributors: int64(cs.n)}
	pe.deliverToCallback(callbackFromWire(st.callback), res)
}

func sameTarget(a, b actor.Callback) bool {
	return a.Target.Collection == b.Target.Collection && a.Target.Handler == b.Target.Handler &&
		a.Target.Scope == b.Target.Scope && a.Target.Index == b.Target.Index
}

func callbackToWire(cb actor.Callback) *wire.Callback {
	w := &wire.Callback{Collection: uint32(cb.Target.Collection), Handler: uint32(cb.Target.Handler), All: cb.Target.Scope == actor.ScopeAll, Message: cb.MessageName()}
	for _, c := range cb.Target.Index {
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

// checkCallback validates a callback that came off the wire.
func (pe *PE) checkCallback(w *wire.Callback) error {
	if w == nil {
		return fmt.Errorf("no callback")
	}
	if int(w.Collection) >= len(pe.colls) {
		return fmt.Errorf("callback to collection %d", w.Collection)
	}
	def := pe.colls[w.Collection].def
	if int(w.Handler) >= len(def.Handlers) {
		return fmt.Errorf("callback to handler %d of %q", w.Handler, def.Name)
	}
	if got := string(def.Handlers[w.Handler].MessageName); got != w.Message {
		return fmt.Errorf("callback handler %s.%s takes %s, not %s", def.Name, def.Handlers[w.Handler].Name, got, w.Message)
	}
	if !w.All && !def.Shape.Contains(callbackFromWire(w).Target.Index) {
		return fmt.Errorf("callback to %v outside %q", w.Index, def.Name)
	}
	return nil
}
