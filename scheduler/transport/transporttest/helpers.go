package transporttest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gochare/gochare/scheduler/transport"
)

// TestLog is a slog.Handler's output that writes to t.Log.
type TestLog = testLog

// NewTestLog returns a logger writing to t.Log and the lines it keeps.
func NewTestLog(t testing.TB) (*slog.Logger, *TestLog) { return newTestLog(t) }

// Find returns the first line containing every substring, or "".
func (l *testLog) Find(substrings ...string) string { return l.find(substrings...) }

// WaitFor polls cond until it holds or a generous deadline passes.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, cond)
}

// testLog is a slog.Logger writing to t.Log until the test ends (protoactor
// goroutines may log after that) and keeping every line for assertions.
type testLog struct {
	t     testing.TB
	mu    sync.Mutex
	done  bool
	lines []string
}

func newTestLog(t testing.TB) (*slog.Logger, *testLog) {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := strings.TrimRight(string(p), "\n")
	l.lines = append(l.lines, line)
	if !l.done {
		l.t.Log(line)
	}
	return len(p), nil
}

func (l *testLog) find(substrings ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, line := range l.lines {
		for _, s := range substrings {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		return line
	}
	return ""
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitProgressing(t, what, cond, nil)
}

// WaitProgressing is WaitFor for a condition that progress measures (a
// count that grows towards it): the deadline is counted from the last
// change of progress, so a long transfer on a loaded machine is waited
// for while it moves, and a stalled one fails as soon as with WaitFor.
func WaitProgressing(t testing.TB, what string, cond func() bool, progress func() int) {
	t.Helper()
	waitProgressing(t, what, cond, progress)
}

func waitProgressing(t testing.TB, what string, cond func() bool, progress func() int) {
	t.Helper()
	// A safety net against a hang, not a timing check: under -race on a
	// loaded 2-core machine moving the larger tests' payloads through
	// protoactor takes well over 20 s.
	const bound = 2 * time.Minute
	deadline, last := time.Now().Add(bound), 0
	if progress != nil {
		last = progress()
	}
	for !cond() {
		if progress != nil {
			if p := progress(); p != last {
				deadline, last = time.Now().Add(bound), p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// makePayload returns a payload of size bytes that names its sender and
// index, so the receiver can check content and order.
func makePayload(from, index, size int) []byte {
	p := make([]byte, size)
	var head [16]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(from))
	binary.LittleEndian.PutUint64(head[8:], uint64(index))
	for i := range p {
		if i < 16 {
			p[i] = head[i]
		} else {
			p[i] = byte(i*7 + from + index)
		}
	}
	return p
}

// checkPayload verifies a payload made by makePayload(from, index, size).
func checkPayload(from, index, size int, p []byte) error {
	if len(p) != size {
		return fmt.Errorf("payload %d from %d: %d bytes, want %d", index, from, len(p), size)
	}
	if !bytes.Equal(p, makePayload(from, index, size)) {
		return fmt.Errorf("payload %d from %d: content differs", index, from)
	}
	return nil
}

// sendCmd is posted to a recorder to make it send payloads.
type sendCmd struct {
	to    int
	sizes []int
}

// recorder is a Handler that sends on command and checks that payloads
// from each sender arrive in order with the right content.
type recorder struct {
	rank int
	ep   transport.Endpoint
	// sizes[from] are the sizes from will send, in order.
	sizes [][]int
	// gate, when not nil, blocks Receive until it is closed; entered is
	// closed when the first Receive starts waiting on it.
	gate    chan struct{}
	entered chan struct{}

	mu       sync.Mutex
	received []int // per sender
	errs     []error
	events   []any
	sent     []int // per destination: payloads sent so far
}

func newRecorder(rank, size int) *recorder {
	return &recorder{rank: rank, sizes: make([][]int, size), received: make([]int, size), sent: make([]int, size)}
}

func (r *recorder) Receive(from int, payload []byte) {
	if r.gate != nil {
		select {
		case <-r.entered:
		default:
			close(r.entered)
		}
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.received[from]
	if i >= len(r.sizes[from]) {
		r.errs = append(r.errs, fmt.Errorf("PE %d: extra payload %d from %d", r.rank, i, from))
		return
	}
	if err := checkPayload(from, i, r.sizes[from][i], payload); err != nil {
		r.errs = append(r.errs, fmt.Errorf("PE %d: %w", r.rank, err))
	}
	r.received[from]++
}

func (r *recorder) Event(ev any) {
	if f, ok := ev.(func()); ok { // run on the endpoint goroutine
		f()
		return
	}
	if cmd, ok := ev.(sendCmd); ok {
		r.mu.Lock()
		first := r.sent[cmd.to]
		r.sent[cmd.to] += len(cmd.sizes)
		r.mu.Unlock()
		for i, size := range cmd.sizes {
			r.ep.Send(cmd.to, makePayload(r.rank, first+i, size))
		}
		r.ep.Flush()
		return
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) count(from int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.received[from]
}

func (r *recorder) errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// peerReport is what a recorder tells about itself.
type peerReport struct {
	Received []int
	Errors   []string
	Backlog  int
	Stats    transport.Stats
}

func (r *recorder) report() peerReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := peerReport{Received: append([]int(nil), r.received...), Backlog: r.ep.Backlog(), Stats: r.ep.Stats()}
	for _, err := range r.errs {
		rep.Errors = append(rep.Errors, err.Error())
	}
	return rep
}

// plan records that from will send sizes to r; call it before the sends.
func (r *recorder) plan(from int, sizes []int) {
	r.mu.Lock()
	r.sizes[from] = append(r.sizes[from], sizes...)
	r.mu.Unlock()
}

// Recorder is a Handler that records events and checks payloads made by
// the suite; NewRecorder gives it the endpoint it sends with.
type Recorder = recorder

// NewRecorder returns a Recorder for PE rank of size PEs, sending with ep.
func NewRecorder(rank, size int, ep transport.Endpoint) *Recorder {
	r := newRecorder(rank, size)
	r.ep = ep
	return r
}

// Events returns the events received so far.
func (r *recorder) Events() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.events...)
}

// PostOrder posts events to ep from several goroutines at once and checks
// that rec, ep's handler, gets each goroutine's events in its Post order.
func PostOrder(t *testing.T, ep transport.Endpoint, rec *Recorder) {
	const goroutines, each = 4, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ep.Post([2]int{g, i})
			}
		}()
	}
	wg.Wait()
	waitFor(t, "all events", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.events) == goroutines*each
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	next := make([]int, goroutines)
	for _, ev := range rec.events {
		e := ev.([2]int)
		if e[1] != next[e[0]] {
			t.Fatalf("event %d of goroutine %d arrived when %d was expected", e[1], e[0], next[e[0]])
		}
		next[e[0]]++
	}
	rec.events = nil
}

// Plan records that from will send sizes to r; call it before the sends.
func (r *recorder) Plan(from int, sizes []int) { r.plan(from, sizes) }

// Count returns the payloads received from PE from.
func (r *recorder) Count(from int) int { return r.count(from) }

// Errors returns what went wrong: payloads out of order, extra or changed.
func (r *recorder) Errors() []error { return r.errors() }

// SendCommand is an event that makes a Recorder send payloads of sizes to
// PE to (checked by the receiver's Recorder, given the same Plan), then
// Flush. Post it to the sender's endpoint.
func SendCommand(to int, sizes []int) any { return sendCmd{to: to, sizes: sizes} }
