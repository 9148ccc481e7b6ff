package transport

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// collectUntil runs collections until cond holds (finalizers run on their
// own goroutine, after a collection), failing after a deadline.
func collectUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute of collections", what)
		}
		runtime.GC()
		runtime.Gosched()
	}
}

func (p *recvPool) pooled() (n, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free), p.bytes
}

// A buffer that nothing refers to any more comes back to the pool and is
// handed out again (same memory, the size asked); one still referred to
// does not come back.
func TestRecvPoolReuse(t *testing.T) {
	p := &recvPool{maxBytes: 1 << 20}
	kept := p.get(100 << 10)
	kept[0] = 7
	dropped := p.get(100 << 10)
	addr := uintptr(unsafe.Pointer(&dropped[0]))
	dropped = nil
	collectUntil(t, "buffer back in the pool", func() bool { n, _ := p.pooled(); return n == 1 })
	if n, b := p.pooled(); n != 1 || b != 100<<10 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 1 of %d", n, b, 100<<10)
	}
	again := p.get(90 << 10)
	if got := uintptr(unsafe.Pointer(&again[0])); got != addr {
		t.Errorf("a buffer of 90 KiB did not reuse the pooled 100 KiB one")
	}
	if len(again) != 90<<10 || cap(again) != 90<<10 {
		t.Errorf("reused buffer: len %d cap %d, want %d", len(again), cap(again), 90<<10)
	}
	// Far larger or smaller than asked: not reused.
	if n, _ := p.pooled(); n != 0 {
		t.Fatalf("pool still holds %d buffers after handing its one out", n)
	}
	if kept[0] != 7 {
		t.Error("a buffer still referred to was handed out again")
	}
	runtime.KeepAlive(kept)
}

// Sizes that do not fit do not share buffers, the pool keeps at most
// maxBytes, and a closed pool keeps nothing.
func TestRecvPoolBounds(t *testing.T) {
	p := &recvPool{maxBytes: 300 << 10}
	for range 4 {
		p.get(100 << 10)
	}
	collectUntil(t, "buffers back in the pool", func() bool { _, b := p.pooled(); return b == 300<<10 })
	// The fourth was freed, not pooled; give it time to come back wrongly.
	for range 5 {
		runtime.GC()
	}
	if n, b := p.pooled(); n != 3 || b != 300<<10 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 3, %d", n, b, 300<<10)
	}
	big := p.get(200 << 10)  // 100 KiB buffers are too small
	small := p.get(50 << 10) // and too large
	if n, _ := p.pooled(); n != 3 {
		t.Errorf("buffers of 200 and 50 KiB took pooled ones of 100 KiB")
	}
	runtime.KeepAlive(big)
	runtime.KeepAlive(small)
	p.close()
	if n, b := p.pooled(); n != 0 || b != 0 {
		t.Fatalf("closed pool holds %d buffers, %d bytes", n, b)
	}
	p.get(100 << 10)
	for range 5 {
		runtime.GC()
	}
	if n, _ := p.pooled(); n != 0 {
		t.Fatalf("closed pool took back %d buffers", n)
	}
	if p.get(0) != nil {
		t.Error("get(0) is not nil")
	}
}

// A buffer given back with put is handed out again at once, without a
// collection, and only once: its finalizer no longer returns it. A
// slice that is not a buffer of the pool's is refused.
func TestRecvPoolPut(t *testing.T) {
	p := &recvPool{maxBytes: 4 << 20}
	b := p.get(1 << 20)
	addr := uintptr(unsafe.Pointer(&b[0]))
	if p.put(make([]byte, 1<<20)) {
		t.Fatal("put took a buffer the pool never handed out")
	}
	if !p.put(b) {
		t.Fatal("put refused a buffer of the pool's")
	}
	if p.put(b) {
		t.Fatal("put took the same buffer twice")
	}
	b = nil
	again := p.get(1 << 20)
	if got := uintptr(unsafe.Pointer(&again[0])); got != addr {
		t.Fatal("the buffer put back was not handed out again")
	}
	// The finalizer was cleared: collections do not pool it a second
	// time while it is in use.
	for range 5 {
		runtime.GC()
	}
	if n, _ := p.pooled(); n != 0 {
		t.Fatalf("pool holds %d buffers while its only one is in use", n)
	}
	runtime.KeepAlive(again)
	// With slack, a buffer serves again for a slightly larger size.
	sl := &recvPool{maxBytes: 4 << 20, slack: 16}
	first := sl.get(1 << 20)
	firstAddr := uintptr(unsafe.Pointer(&first[0]))
	if len(first) != 1<<20 || cap(first) != 1<<20 || !sl.put(first) {
		t.Fatalf("slack pool: len %d cap %d, or put refused", len(first), cap(first))
	}
	grown := sl.get(1<<20 + 1000)
	if got := uintptr(unsafe.Pointer(&grown[0])); got != firstAddr || len(grown) != 1<<20+1000 {
		t.Fatal("a buffer with slack did not serve a size 1000 bytes larger")
	}
	runtime.KeepAlive(grown)
	full := &recvPool{maxBytes: 1 << 20}
	x, y := full.get(1<<20), full.get(1<<20)
	if !full.put(x) || full.put(y) {
		t.Fatal("a pool of 1 MiB took two buffers of 1 MiB")
	}
}
