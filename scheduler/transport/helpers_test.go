package transport

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

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
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
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
	ep   Endpoint
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

// cluster starts n endpoints on 127.0.0.1 with recorders.
type cluster struct {
	eps  []*ProtoActor
	recs []*recorder
	log  *testLog
}

func newCluster(t testing.TB, n int, tune func(*Config)) *cluster {
	t.Helper()
	logger, tl := newTestLog(t)
	c := &cluster{log: tl}
	addrs := make([]string, n)
	for r := range n {
		cfg := Config{Rank: r, Size: n, Host: "127.0.0.1", Secret: []byte("test-secret"), Logger: logger}
		if tune != nil {
			tune(&cfg)
		}
		ep, err := NewProtoActor(cfg)
		if err != nil {
			t.Fatalf("NewProtoActor(rank %d): %v", r, err)
		}
		t.Cleanup(func() { ep.Close() })
		c.eps = append(c.eps, ep)
		rec := newRecorder(r, n)
		rec.ep = ep
		c.recs = append(c.recs, rec)
		addrs[r] = ep.Addr()
	}
	for r, ep := range c.eps {
		if err := ep.Start(addrs, c.recs[r]); err != nil {
			t.Fatalf("Start(rank %d): %v", r, err)
		}
	}
	return c
}

// plan records that from will send sizes to to; call before sending.
func (c *cluster) plan(from, to int, sizes []int) {
	rec := c.recs[to]
	rec.mu.Lock()
	rec.sizes[from] = append(rec.sizes[from], sizes...)
	rec.mu.Unlock()
}

func (c *cluster) send(from, to int, sizes []int) {
	c.plan(from, to, sizes)
	c.eps[from].Post(sendCmd{to: to, sizes: sizes})
}

// waitDelivered waits until every planned payload arrived and every
// endpoint's backlog is acknowledged, then checks for errors.
func (c *cluster) waitDelivered(t testing.TB) {
	t.Helper()
	for to, rec := range c.recs {
		for from := range c.eps {
			rec.mu.Lock()
			want := len(rec.sizes[from])
			rec.mu.Unlock()
			waitFor(t, fmt.Sprintf("%d payloads %d->%d", want, from, to), func() bool {
				return rec.count(from) >= want || len(rec.errors()) > 0
			})
		}
	}
	for _, rec := range c.recs {
		for _, err := range rec.errors() {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for r, ep := range c.eps {
		waitFor(t, fmt.Sprintf("backlog of PE %d to drain", r), func() bool { return ep.Backlog() == 0 })
	}
}
