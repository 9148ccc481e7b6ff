package regioncheck_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/actor/regioncheck"
)

func TestOrders(t *testing.T) {
	require.Nil(t, regioncheck.Orders(1, 5, 1))
	require.Nil(t, regioncheck.Orders(4, 0, 1))
	require.Equal(t, [][]int{{1, 0}}, regioncheck.Orders(2, 2, 1), "two messages have one other order")
	require.Len(t, regioncheck.Orders(3, 5, 1), 5, "k covers all: every other order")
	require.Len(t, regioncheck.Orders(3, 99, 1), 5)

	orders := regioncheck.Orders(10, 6, 42)
	require.Len(t, orders, 6)
	require.Equal(t, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, orders[0], "the reverse first")
	seen := map[string]bool{fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}): true}
	for _, o := range orders {
		sorted := slices.Sorted(slices.Values(o))
		require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, sorted, "a permutation")
		require.False(t, seen[fmt.Sprint(o)], "distinct and not the delivery order: %v", o)
		seen[fmt.Sprint(o)] = true
	}
	require.Equal(t, orders, regioncheck.Orders(10, 6, 42), "seeded")
	require.NotEqual(t, orders, regioncheck.Orders(10, 6, 43))

	all := regioncheck.AllOrders(4)
	require.Len(t, all, 23)
	set := map[string]bool{}
	for _, o := range all {
		set[fmt.Sprint(o)] = true
	}
	require.Len(t, set, 23)
	require.False(t, set[fmt.Sprint([]int{0, 1, 2, 3})])
	require.Panics(t, func() { regioncheck.AllOrders(9) })
}

// probe is a task whose commutative handler does what Mode says.
type probe struct {
	Mode string
	Sum  int64
	Last int64
}

type value struct{ V int64 }

func probeJob(t *testing.T) (*actor.Job, *actor.CollectionDef, *actor.HandlerDef) {
	j := actor.NewJob()
	coll := actor.NewCollection(j, "probes", actor.Shape{2}, actor.BlockMap, func(actor.Index) *probe { return &probe{} })
	var other *actor.Proxy[value]
	p := actor.Handle(coll, "take", actor.AnnotateCommutative(3), func(p *probe, ctx actor.Context, m value) {
		switch p.Mode {
		case "sum":
			p.Sum += m.V
		case "last":
			p.Last = m.V
		case "expect":
			ctx.Expect(uint64(m.V))
		case "print":
			p.Sum += m.V
			ctx.Printf("sum so far %d", p.Sum)
		case "send":
			p.Sum += m.V
			other.Send(ctx, actor.Idx(1), value{V: p.Sum})
		case "panic":
			if p.Sum == 0 && m.V == 3 {
				panic("3 came first")
			}
			p.Sum += m.V
		case "contribute":
			p.Sum += m.V
			ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{p.Sum}}, actor.Callback{})
		}
	})
	other = actor.Handle(coll, "other", actor.AnnotateOrderDependent(), func(*probe, actor.Context, value) {})
	actor.Main(j, actor.Handle(coll, "start", actor.AnnotateOrderDependent(), func(*probe, actor.Context, *actor.Start) {}), actor.Idx(0))
	require.NoError(t, j.Err())
	return j, coll.Def(), p.Handler()
}

func region(t *testing.T, coll *actor.CollectionDef, h *actor.HandlerDef, mode string, values ...int64) regioncheck.Region {
	before, err := coll.PackTask(&probe{Mode: mode})
	require.NoError(t, err)
	r := regioncheck.Region{Collection: coll, Handler: h, Index: actor.Idx(0), Key: 7, Before: before}
	for i, v := range values {
		payload, err := h.Message.Append(nil, value{V: v})
		require.NoError(t, err)
		r.Messages = append(r.Messages, regioncheck.Message{Payload: payload, From: fmt.Sprintf("sender%d", i)})
	}
	return r
}

func TestCheck(t *testing.T) {
	j, coll, h := probeJob(t)
	env := regioncheck.Env{Job: j, NumPEs: 1}
	all := regioncheck.AllOrders(3)
	for _, c := range []struct {
		mode string
		want error
		says string
	}{
		{"sum", nil, ""},
		{"last", regioncheck.ErrNotCommutative, "the packed state differs"},
		{"expect", regioncheck.ErrNotCommutative, "in order [0 2 1] (delivery order [0 1 2]), the task expects key 2 after the region, 3 in delivery order"},
		{"print", regioncheck.ErrNotCommutative, "the handler of message 1 did Printf with other bytes"},
		{"send", regioncheck.ErrNotCommutative, "the handler of message 1 did send to probes(1).other key 0 with other bytes"},
		{"contribute", regioncheck.ErrNotCommutative, "did Contribute(sum)"},
		{"panic", regioncheck.ErrNotCommutative, "the handler of message 2 panicked: 3 came first"},
	} {
		err := regioncheck.Check(region(t, coll, h, c.mode, 1, 2, 3), env, all)
		if c.want == nil {
			require.NoError(t, err, c.mode)
			continue
		}
		require.ErrorIs(t, err, c.want, c.mode)
		require.ErrorContains(t, err, c.says, c.mode)
		require.ErrorContains(t, err, `collection "probes", handler "take", region key 7 (task probes(0))`, c.mode)
		require.ErrorContains(t, err, "messages by index: 0 from sender0, 1 from sender1, 2 from sender2", c.mode)
	}
}

func TestCheckRerunErrors(t *testing.T) {
	j, coll, h := probeJob(t)
	env := regioncheck.Env{Job: j, NumPEs: 1}
	require.NoError(t, regioncheck.Check(region(t, coll, h, "last", 5), env, nil), "one message: no other order")

	// The task's state after the region must be what the delivery order
	// gives on a copy.
	r := region(t, coll, h, "sum", 1, 2, 3)
	r.After, _ = coll.PackTask(&probe{Mode: "sum", Sum: 6})
	require.NoError(t, regioncheck.Check(r, env, regioncheck.AllOrders(3)))
	r.After, _ = coll.PackTask(&probe{Mode: "sum", Sum: 7})
	err := regioncheck.Check(r, env, regioncheck.AllOrders(3))
	require.ErrorIs(t, err, regioncheck.ErrRerun)
	require.ErrorContains(t, err, "the task's packing leaves out part of its state")

	// Panicking in the delivery order is no annotation's fault.
	err = regioncheck.Check(region(t, coll, h, "panic", 3, 1, 2), env, nil)
	require.ErrorIs(t, err, regioncheck.ErrRerun)
	require.False(t, errors.Is(err, regioncheck.ErrNotCommutative))

	r = region(t, coll, h, "sum", 1, 2, 3)
	r.Before = []byte{0xff}
	require.ErrorIs(t, regioncheck.Check(r, env, nil), regioncheck.ErrRerun)
	r = region(t, coll, h, "sum", 1, 2, 3)
	r.Messages[1].Payload = []byte{0xff}
	require.ErrorIs(t, regioncheck.Check(r, env, nil), regioncheck.ErrRerun)
	require.ErrorIs(t, regioncheck.Check(region(t, coll, h, "sum", 1, 2, 3), env, [][]int{{1, 0}}), regioncheck.ErrRerun)
}

// keeper is a task that keeps the buffer it is unpacked from (which
// encoding.BinaryUnmarshaler allows it not to do) and changes it.
type keeper struct{ b []byte }

func (k *keeper) MarshalBinary() ([]byte, error) { return append([]byte(nil), k.b...), nil }
func (k *keeper) UnmarshalBinary(data []byte) error {
	k.b = data
	return nil
}

// Every run starts from the state before the region, even for a task that
// writes into the buffer it was unpacked from: its byte additions commute.
func TestCheckRunsOnCopies(t *testing.T) {
	j := actor.NewJob()
	coll := actor.NewCollection(j, "keepers", actor.Shape{1}, actor.BlockMap, func(actor.Index) *keeper { return &keeper{} })
	add := actor.Handle(coll, "add", actor.AnnotateCommutative(3), func(k *keeper, _ actor.Context, m value) { k.b[0] += byte(m.V) })
	actor.Main(j, actor.Handle(coll, "start", actor.AnnotateOrderDependent(), func(*keeper, actor.Context, *actor.Start) {}), actor.Idx(0))
	require.NoError(t, j.Err())
	r := regioncheck.Region{Collection: coll.Def(), Handler: add.Handler(), Index: actor.Idx(0), Before: []byte{10}}
	for _, v := range []int64{1, 2, 3} {
		payload, err := add.Handler().Message.Append(nil, value{V: v})
		require.NoError(t, err)
		r.Messages = append(r.Messages, regioncheck.Message{Payload: payload})
	}
	r.After = []byte{16}
	require.NoError(t, regioncheck.Check(r, regioncheck.Env{Job: j, NumPEs: 1}, regioncheck.AllOrders(3)))
	require.Equal(t, []byte{10}, r.Before)
}
