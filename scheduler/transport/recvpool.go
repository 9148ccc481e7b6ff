package transport

import (
	"runtime"
	"sync"
	"unsafe"
)

// recvPool recycles the TCP readers' buffers: the 64 KiB chunks small
// frames are read into and the buffers of big frames. A buffer handed out
// belongs to the handler through the payloads that alias it, and the
// endpoint cannot know when the handler lets go of them; the garbage
// collector does. So every buffer handed out carries a finalizer that,
// once nothing refers to the buffer any more, puts it back here instead
// of letting it be freed, up to maxBytes pooled; past that it is freed as
// usual.
//
// Why: a fresh 512 KiB buffer per big frame costs its clearing (or the
// page faults of memory the runtime had returned to the system) and
// drives a garbage collection every few frames (the live heap of a PE
// that streams large messages is small, so its heap goal is too). A
// reused buffer costs neither, and pooled buffers count as live heap,
// which spaces the collections out by as much. A buffer comes back only
// after a collection found it unreachable, so between collections the
// readers still allocate; the pool halves that and makes collections
// rarer.
//
// A buffer is written in full before any of it is handed out again (the
// reader hands out only the bytes it read into it), so reuse exposes no
// stale bytes.
type recvPool struct {
	maxBytes int
	mu       sync.Mutex
	free     [][]byte // each with len == cap
	bytes    int      // sum of cap over free
	closed   bool
	// out is the capacity of each buffer handed out, by its address (the
	// heap does not move objects): the finalizer gets only a pointer.
	out map[uintptr]int
	fin func(*byte) // p.reclaim, made once
	// slack, when > 0, makes a new buffer 1/slack larger than asked, so
	// that it serves again for a slightly larger size (a checkpoint's
	// copy grows by a few bytes now and then).
	slack int
}

// recvPoolBytes is the most bytes a TCP endpoint keeps pooled;
// joinedPoolBytes the most its pool of joined payloads of joinedMin bytes
// or more keeps (TCP.joined): a few buddy copies of a checkpoint.
const (
	recvPoolBytes   = 32 << 20
	joinedPoolBytes = 64 << 20
	joinedMin       = 1 << 20
)

// get returns a buffer of n bytes (its contents undefined) whose memory
// comes back to p when it is garbage.
func (p *recvPool) get(n int) []byte {
	if n <= 0 {
		return nil
	}
	var b []byte
	p.mu.Lock()
	for i, fb := range p.free {
		// A pooled buffer at most a quarter larger than asked: frames of
		// one size (a job's messages) reuse each other's buffers without
		// holding much memory idle.
		if c := cap(fb); c >= n && c-n <= n/4 {
			b = fb
			last := len(p.free) - 1
			p.free[i], p.free[last] = p.free[last], nil
			p.free = p.free[:last]
			p.bytes -= c
			break
		}
	}
	if b == nil {
		p.mu.Unlock()
		size := n
		if p.slack > 0 {
			size += n / p.slack
		}
		b = make([]byte, size)
		p.mu.Lock()
	}
	if p.out == nil {
		p.out, p.fin = map[uintptr]int{}, p.reclaim
	}
	p.out[uintptr(unsafe.Pointer(&b[0]))] = cap(b)
	p.mu.Unlock()
	runtime.SetFinalizer(&b[0], p.fin)
	return b[:n:n]
}

// put takes back b, a buffer get handed out (b starts at its first byte),
// which its holder says it no longer uses, nor anything else: earlier
// than its finalizer would. It reports whether b was taken (not a buffer
// of p's, or the pool full: left to the finalizer).
func (p *recvPool) put(b []byte) bool {
	if cap(b) == 0 {
		return false
	}
	first := &b[:1][0]
	key := uintptr(unsafe.Pointer(first))
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.out[key]
	if !ok || p.closed || p.bytes+c > p.maxBytes {
		return false
	}
	runtime.SetFinalizer(first, nil)
	delete(p.out, key)
	p.free = append(p.free, unsafe.Slice(first, c))
	p.bytes += c
	return true
}

// reclaim takes back a buffer nothing refers to any more (its finalizer).
func (p *recvPool) reclaim(first *byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := uintptr(unsafe.Pointer(first))
	c := p.out[key]
	delete(p.out, key)
	if p.closed || c == 0 || p.bytes+c > p.maxBytes {
		return // freed at a later collection
	}
	p.free = append(p.free, unsafe.Slice(first, c))
	p.bytes += c
}

// close empties the pool and keeps it empty: a closed endpoint's buffers
// are freed as usual.
func (p *recvPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	clear(p.free)
	p.free, p.bytes = nil, 0
}
