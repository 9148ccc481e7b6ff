package actortest

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/actor/regioncheck"
)

// maxAllOrders is the largest region whose every order is tried; a larger
// one gets randomOrders seeded orders.
const (
	maxAllOrders = 6
	randomOrders = 720
	seed         = 1
)

// CheckCommutative fails t unless the messages msgs, a region of key key
// of the commutative handler named handler of collection collection,
// leave the same packed state and make the same sends in every order when
// handled by task, the element at index at (see regioncheck.Check). job
// is the application's declaration (actor.NewJob, then the app's Define);
// task is only packed (CollectionDef.PackTask): the region runs on copies
// unpacked from that state.
// Each message is of the handler's message type.
func CheckCommutative(t testing.TB, job *actor.Job, collection, handler string, at actor.Index, task actor.Task, key uint64, msgs ...any) {
	t.Helper()
	if err := CommutativeErr(job, collection, handler, at, task, key, msgs...); err != nil {
		t.Fatal(err)
	}
}

// CommutativeErr is CheckCommutative's check: nil, or the first order that
// differs (an error wrapping regioncheck.ErrNotCommutative), or why the
// region could not be run.
func CommutativeErr(job *actor.Job, collection, handler string, at actor.Index, task actor.Task, key uint64, msgs ...any) error {
	var coll *actor.CollectionDef
	for _, c := range job.Collections() {
		if c.Name == collection {
			coll = c
		}
	}
	if coll == nil {
		return fmt.Errorf("actortest: no collection %q", collection)
	}
	var h *actor.HandlerDef
	for _, hd := range coll.Handlers {
		if hd.Name == handler {
			h = hd
		}
	}
	if h == nil {
		return fmt.Errorf("actortest: collection %q has no handler %q", collection, handler)
	}
	if h.Annotation.Order != actor.Commutative {
		return fmt.Errorf("actortest: handler %s.%s is %v, not commutative", collection, handler, h.Annotation)
	}
	if !coll.Shape.Contains(at) {
		return fmt.Errorf("actortest: %v is outside collection %q of shape %v", at, collection, coll.Shape)
	}
	if n := h.Annotation.RegionSizeAt(at, key); n != len(msgs) {
		return fmt.Errorf("actortest: a region of key %d of %s.%s at %v has %d messages, %d given", key, collection, handler, at, n, len(msgs))
	}
	before, err := coll.PackTask(task)
	if err != nil {
		return fmt.Errorf("actortest: pack the task: %w", err)
	}
	r := regioncheck.Region{Collection: coll, Handler: h, Index: at, Key: key, Before: before}
	for i, m := range msgs {
		payload, err := h.Message.Append(nil, m)
		if err != nil {
			return fmt.Errorf("actortest: message %d (%T) for %s.%s: %w", i, m, collection, handler, err)
		}
		r.Messages = append(r.Messages, regioncheck.Message{Payload: payload, From: fmt.Sprintf("msgs[%d]", i)})
	}
	var orders [][]int
	switch n := len(msgs); {
	case n < 2:
		return nil
	case n <= maxAllOrders:
		orders = regioncheck.AllOrders(n)
	default:
		orders = regioncheck.Orders(n, randomOrders, seed)
	}
	return regioncheck.Check(r, regioncheck.Env{Job: job, NumPEs: 1}, orders)
}
