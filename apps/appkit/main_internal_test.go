package appkit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
)

func packedElement(t *testing.T, e *mainElement) []byte {
	t.Helper()
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMainElementPackRoundTrip(t *testing.T) {
	for _, e := range []*mainElement{
		{results: make([]*actor.ReductionResult, 1)},
		{started: true, startedAt: 1_700_000_000_123_456_789, numPEs: 4, results: make([]*actor.ReductionResult, 1)},
		{started: true, finished: true, startedAt: 5, numPEs: 1, results: []*actor.ReductionResult{{Reducer: "x", Bytes: []byte{1, 2}}}},
		{started: true, startedAt: -3, numPEs: 7, results: []*actor.ReductionResult{
			{Reducer: "sum", Floats: []float64{1e-15, -2}, Number: 0, Contributors: 9}, nil, {Reducer: "y", Number: 2, Ints: []int64{-4}}}},
	} {
		packed := packedElement(t, e)
		back := &mainElement{results: make([]*actor.ReductionResult, len(e.results))}
		if err := back.UnmarshalBinary(packed); err != nil {
			t.Fatal(err)
		}
		if back.started != e.started || back.finished != e.finished || back.startedAt != e.startedAt || back.numPEs != e.numPEs {
			t.Errorf("unpacked %+v, want %+v", back, e)
		}
		for slot := range e.results {
			if !proto.Equal(back.results[slot], e.results[slot]) || (back.results[slot] == nil) != (e.results[slot] == nil) {
				t.Errorf("slot %d: %v, want %v", slot, back.results[slot], e.results[slot])
			}
		}
		if !bytes.Equal(packedElement(t, back), packed) {
			t.Error("packing the unpacked element gives other bytes")
		}
	}
}

// A packed state that is not a main element's of the same shape is
// refused with errBadMainState, and the element keeps its state.
func TestMainElementRefusesForeignState(t *testing.T) {
	src := &mainElement{started: true, startedAt: 9, numPEs: 2, results: []*actor.ReductionResult{{Reducer: "sum", Ints: []int64{3}}, nil}}
	packed := packedElement(t, src)
	corrupt := func(edit func([]byte) []byte) []byte { return edit(bytes.Clone(packed)) }
	for name, data := range map[string][]byte{
		"empty":          nil,
		"short":          packed[:mainHeaderBytes-1],
		"magic":          corrupt(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":        corrupt(func(b []byte) []byte { b[4] = 2; return b }),
		"flags":          corrupt(func(b []byte) []byte { b[5] = 0x80; return b }),
		"finished first": corrupt(func(b []byte) []byte { b[5] = mainFinished; return b }),
		"slot count":     corrupt(func(b []byte) []byte { b[18] = 3; return b }),
		"torn result":    packed[:len(packed)-6],
		"result length":  corrupt(func(b []byte) []byte { b[mainHeaderBytes] = 0xff; return b }),
		"trailing":       append(bytes.Clone(packed), 0),
	} {
		e := &mainElement{started: true, startedAt: 1, numPEs: 5, results: make([]*actor.ReductionResult, 2)}
		before := packedElement(t, e)
		if err := e.UnmarshalBinary(data); !errors.Is(err, errBadMainState) {
			t.Errorf("%s: UnmarshalBinary = %v, want %v", name, err, errBadMainState)
		}
		if !bytes.Equal(before, packedElement(t, e)) {
			t.Errorf("%s: a refused state changed the element", name)
		}
	}
	one := &mainElement{results: make([]*actor.ReductionResult, 1)}
	if err := one.UnmarshalBinary(packed); !errors.Is(err, errBadMainState) || !strings.Contains(err.Error(), "2 result slots") {
		t.Errorf("state of a two-result element into a one-result one: %v", err)
	}
}

// recordingContext is the actor.Context of a direct handler call.
type recordingContext struct {
	actor.Context
	expected []uint64
	output   []string
	exits    []int
}

func (c *recordingContext) Expect(key uint64) { c.expected = append(c.expected, key) }
func (c *recordingContext) Printf(format string, args ...any) {
	c.output = append(c.output, fmt.Sprintf(format, args...))
}
func (c *recordingContext) Exit(status int) { c.exits = append(c.exits, status) }

func mustPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Errorf("%s: panic %v, want one saying %q", what, r, want)
		}
	}()
	f()
}

// The main element states the keys it takes next, and a second Start or
// a result it does not wait for is a broken protocol: it panics.
func TestMainElementKeysAndProtocolErrors(t *testing.T) {
	begun := 0
	m := Main{Collection: "driver", Results: 2, Begin: func(actor.Context) { begun++ },
		Finish: func(actor.Context, Run) ([]string, int, error) { return []string{"done"}, 4, nil }}
	m.Clock = func() time.Time { return time.Unix(100, 0) }
	e := &mainElement{results: make([]*actor.ReductionResult, 2)}
	ctx := &recordingContext{}
	m.onStart(e, ctx, &actor.Start{NumPes: 3})
	mustPanic(t, "second Start", "driver element started twice", func() { m.onStart(e, ctx, &actor.Start{}) })
	mustPanic(t, "result 5", "unexpected reduction result 5", func() { m.onResult(e, ctx, &actor.ReductionResult{Number: 5}) })
	m.onResult(e, ctx, &actor.ReductionResult{Number: 0})
	mustPanic(t, "result 0 again", "unexpected reduction result 0", func() { m.onResult(e, ctx, &actor.ReductionResult{Number: 0}) })
	m.onResult(e, ctx, &actor.ReductionResult{Number: 1})
	mustPanic(t, "result after the last", "unexpected reduction result 1", func() { m.onResult(e, ctx, &actor.ReductionResult{Number: 1}) })
	if begun != 1 || fmt.Sprint(ctx.expected) != "[1 2]" || fmt.Sprint(ctx.output) != "[done]" || fmt.Sprint(ctx.exits) != "[4]" || e.numPEs != 3 {
		t.Errorf("begun %d, expected keys %v, output %v, exits %v, PEs %d", begun, ctx.expected, ctx.output, ctx.exits, e.numPEs)
	}
	if key := m.resultKey(&actor.ReductionResult{Number: 1}); key != 2 {
		t.Errorf("result 1 has key %d, want 2", key)
	}
	single := Main{Results: 1}
	if key := single.resultKey(&actor.ReductionResult{Number: 41}); key != 1 {
		t.Errorf("the only result has key %d, want 1 whatever its number", key)
	}
}
