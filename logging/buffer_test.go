package logging

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/commutative"
)

// A reducer's region: one message from each of many senders, all waiting
// in one task's buffer (past bufferIndexMin, where the buffer is indexed).
// Every duplicate is dropped, whether it arrives while the buffer is long
// or short, and the messages are delivered once each, in arrival order.
func TestLongBufferDropsDuplicatesAndDeliversInArrivalOrder(t *testing.T) {
	for _, kind := range []Kind{KindNone, KindFullDet, KindPartialDet} {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			const n = 5 * bufferIndexMin
			senders, receiver := New(kind, Config{PE: 0, PEs: 2}), New(kind, Config{PE: 1, PEs: 2})
			const to = TaskID(n)
			for s := range TaskID(n) {
				senders.HostTask(s)
			}
			receiver.HostTask(to)
			var sent []Envelope
			for s := range TaskID(n) {
				senders.Send(s, 1, Message{To: to, Handler: 1, Annotation: commutative.CommutativeAnnotation(n), Key: 0, Payload: []byte{byte(s)}})
			}
			for _, env := range senders.Ready().Envelopes {
				if env.To == 1 {
					sent = append(sent, env)
				}
			}
			senders.Advance()
			if len(sent) != n {
				t.Fatalf("%d envelopes to the receiver, want %d", len(sent), n)
			}
			for _, env := range sent {
				receiver.Arrive(env)
			}
			for _, env := range sent { // every one again: all duplicates
				receiver.Arrive(env)
			}
			if d := receiver.Stats().Duplicates; d != n {
				t.Fatalf("%d duplicates dropped, want %d", d, n)
			}
			all := func(Message) bool { return true }
			for i := range n {
				d, ok := receiver.NextDelivery(to, all)
				if !ok {
					t.Fatalf("delivery %d of %d: none", i, n)
				}
				if d.Message.ID != sent[i].Message.ID {
					t.Fatalf("delivery %d: %v, want %v (arrival order)", i, d.Message.ID, sent[i].Message.ID)
				}
				receiver.EndHandler(to)
				// A duplicate of one delivered and of one still waiting,
				// at every length of the buffer.
				receiver.Arrive(sent[i])
				if i+1 < n {
					receiver.Arrive(sent[i+1])
				}
			}
			if d := receiver.Stats().Duplicates; d != 3*n-1 {
				t.Fatalf("%d duplicates dropped, want %d", d, 3*n-1)
			}
			if _, ok := receiver.NextDelivery(to, all); ok {
				t.Fatal("a message delivered twice")
			}
		})
	}
}

// A task that buffers a few messages at a time reuses its buffer's array
// once emptied: no allocation per message in steady state, the messages
// taken in arrival order, and what was taken cleared from the array.
func TestEmptiedBufferReusesItsArray(t *testing.T) {
	var task hostedTask
	payload := []byte{1}
	push := func(n int) {
		for i := range n {
			task.pushBuffer(Message{Key: uint64(i), Payload: payload})
		}
	}
	drain := func(n int) {
		for i := range n {
			if m := task.takeBuffered(0); m.Key != uint64(i) {
				t.Fatalf("took key %d, want %d", m.Key, i)
			}
		}
	}
	push(6)
	drain(6)
	if allocs := testing.AllocsPerRun(100, func() { push(6); drain(6) }); allocs != 0 {
		t.Errorf("%v allocations per 6 messages buffered and taken, want 0", allocs)
	}
	for _, m := range task.bufferArray[:cap(task.bufferArray)] {
		if m.Payload != nil {
			t.Fatal("a message taken is still in the array")
		}
	}
	// A long buffer's array is not kept once emptied.
	push(2 * bufferKeepMax)
	drain(2 * bufferKeepMax)
	push(1)
	if cap(task.bufferArray) > bufferKeepMax {
		t.Errorf("kept an array of %d messages, at most %d", cap(task.bufferArray), bufferKeepMax)
	}
}

// A task whose buffer never empties (it gets the next step's messages
// before it has handled all of this one's) keeps its messages in one
// array too: taken from the front and pushed at the back, they move back
// to the array's start when they reach its end, in arrival order, and
// the places they left are cleared.
func TestBufferThatNeverEmptiesReusesItsArray(t *testing.T) {
	var task hostedTask
	payload := []byte{1}
	next, want := uint64(0), uint64(0)
	push := func() {
		task.pushBuffer(Message{Key: next, Payload: payload})
		next++
	}
	take := func() {
		if m := task.takeBuffered(0); m.Key != want {
			t.Fatalf("took key %d, want %d", m.Key, want)
		}
		want++
	}
	for range 3 {
		push()
	}
	for range 3 * bufferKeepMax { // the array is in place
		push()
		take()
	}
	if allocs := testing.AllocsPerRun(100, func() {
		for range 10 {
			push()
			take()
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per 10 messages pushed and taken, want 0", allocs)
	}
	// Every place of the array holds a waiting message or nothing.
	live := 0
	for _, m := range task.bufferArray[:cap(task.bufferArray)] {
		if m.Payload != nil {
			live++
		}
	}
	if live != len(task.buffer) {
		t.Errorf("%d messages in the array, %d waiting", live, len(task.buffer))
	}
	for len(task.buffer) > 0 {
		take()
	}
	if want != next {
		t.Errorf("took %d messages, pushed %d", want, next)
	}
}
