package apptest

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
)

// node records what it handled, in order.
type node struct{ seen []string }

func (n *node) MarshalBinary() ([]byte, error) { return []byte(strings.Join(n.seen, ",")), nil }
func (n *node) UnmarshalBinary(b []byte) error {
	n.seen = nil
	if len(b) > 0 {
		n.seen = strings.Split(string(b), ",")
	}
	return nil
}

// regionJob: the main element sends node 0 a keyed "late" message (key 1)
// first, then a region of three commutative "part" messages (key 0) and
// one unkeyed "other" message. The node must take the region whole, then
// "late" only once its completion expects key 1, and "other" never inside
// the region.
func regionJob(exit bool) *actor.Job {
	j := actor.NewJob()
	nodes := actor.NewCollection(j, "nodes", actor.Shape{1}, actor.BlockMap, func(actor.Index) *node { return &node{} })
	mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *node { return &node{} })
	late := actor.Handle(nodes, "late", actor.AnnotateOrdered(), func(n *node, ctx actor.Context, m *wrapperspb.UInt64Value) {
		n.seen = append(n.seen, "late")
		if exit {
			ctx.Exit(0)
		}
	}, actor.KeyBy(func(m *wrapperspb.UInt64Value) uint64 { return m.GetValue() }))
	part := actor.Handle(nodes, "part", actor.AnnotateCommutative(3), func(n *node, ctx actor.Context, m *wrapperspb.UInt64Value) {
		n.seen = append(n.seen, "part")
	}, actor.KeyBy(func(m *wrapperspb.UInt64Value) uint64 { return m.GetValue() }),
		actor.WhenComplete(func(n *node, ctx actor.Context, key uint64) {
			n.seen = append(n.seen, "complete")
			ctx.Expect(1)
		}))
	other := actor.Handle(nodes, "other", actor.AnnotateOrderDependent(), func(n *node, ctx actor.Context, m *wrapperspb.StringValue) {
		n.seen = append(n.seen, "other")
	})
	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(_ *node, ctx actor.Context, _ *actor.Start) {
		at := actor.Idx(0)
		late.Send(ctx, at, wrapperspb.UInt64(1))
		for range 3 {
			part.Send(ctx, at, wrapperspb.UInt64(0))
		}
		other.Send(ctx, at, wrapperspb.String("x"))
	})
	actor.Main(j, start, actor.Idx(0))
	return j
}

func TestDoubleKeysAndRegions(t *testing.T) {
	orders := map[string]bool{}
	for seed := range uint64(20) {
		d := NewDouble(t, regionJob(true), 2, seed)
		d.PackProbability = 0.5
		d.Run(nil)
		seen := d.Task(0, 0).(*node).seen
		got := strings.Join(seen, " ")
		orders[got] = true
		region := strings.Index(got, "part part part complete")
		if region < 0 || strings.Index(got, "late") < region || len(seen) > 6 {
			t.Errorf("seed %d: handled %q", seed, got)
		}
		if d.Deliveries["nodes.part"] != 3 || d.Deliveries["main.start"] != 1 {
			t.Errorf("seed %d: deliveries %v", seed, d.Deliveries)
		}
	}
	if len(orders) < 2 {
		t.Errorf("20 seeds gave one delivery order: %v", orders)
	}
}

// fatalRecorder is a testing.TB whose Fatalf ends the run it is in with a
// panic the test catches, and records the message.
type fatalRecorder struct {
	testing.TB
	message string
}

type fatalStop struct{}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.message = fmt.Sprintf(format, args...)
	panic(fatalStop{})
}

// A job that never exits is reported, not left to hang.
func TestDoubleReportsAJobThatNeverExits(t *testing.T) {
	j := regionJob(false)
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatalStop); !ok {
					panic(r)
				}
			}
		}()
		NewDouble(rec, j, 1, 1).Run(nil)
	}()
	if !strings.Contains(rec.message, "deadlock after 6 deliveries") {
		t.Errorf("Fatalf message %q", rec.message)
	}
}
