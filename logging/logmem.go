package logging

import (
	"runtime"
	"sync"
	"unsafe"
)

// Where the sender log's chunks live. By default they are ordinary Go
// allocations. With Config.LogOffHeap they are memory mapped by the log
// itself, outside the Go heap (logmem_linux.go; elsewhere they stay on
// the heap), for two reasons measured on the mini-apps (docs/benchmarks.md,
// "Sender log"):
//
//   - the collector sets its next goal from the live heap (twice it, with
//     the default GOGC), and a log of hundreds of MiB on the heap lets the
//     heap grow by as much again before a collection: every short-lived
//     allocation of the run (a message's encoding, the receiver's decoding
//     of a face) then lands on memory fresh from the kernel and pays a page
//     fault and a clear per page. Off the heap the log does not count, the
//     goal stays near what the PE really keeps, and the short-lived
//     allocations are made again and again in the same warm memory;
//   - a mapped chunk is asked to be backed by huge pages, so writing the
//     log costs one fault per 2 MiB instead of one per 4 KiB; the log
//     faults it in a huge page at a time, in one call each, as it
//     reaches it (fault), and only as far as it reaches (DumpMemory's
//     chunks are faulted in whole when mapped).
//
// A mapped chunk is unmapped when a checkpoint finds it unused for a whole
// period (the log shrank), and every one when the log itself is garbage
// (its Protocol was dropped, e.g. replaced in a rollback): a runtime
// cleanup unmaps them. That is safe only if nothing keeps a slice of a
// logged payload beyond the Protocol that logged it, which is what
// Config.LogOffHeap asks of the caller (a payload is in any case valid only
// until the next Checkpoint, which reuses the chunk).

// heapChunk is the size of a chunk on the heap, mappedChunk of a mapped
// one (a multiple of the 2 MiB huge page): large enough that a chunk holds
// many messages of the mini-apps (a stencil3d face of 64² doubles is
// 32 KiB), small enough that the last, partly used one wastes little (a
// mapped chunk's untouched pages cost no memory). A message larger than a
// chunk gets a chunk of its own size.
const (
	heapChunk   = 1 << 20
	mappedChunk = 4 << 20
	hugePage    = 2 << 20
)

// logMemory hands out the chunks of one log. Its zero value gives heap
// chunks.
type logMemory struct {
	// owner is nil for heap chunks. Only the log refers to it: once the
	// log is garbage, so is owner, and its cleanup unmaps owner.maps.
	owner *memOwner
	// size, if above 0, is the size of a chunk instead of heapChunk or
	// mappedChunk (a log under a quota: quotaChunk); a mapped chunk
	// smaller than a huge page is mapped with small pages.
	size int
	// faultWhole faults a mapped chunk in whole when it is mapped
	// (DumpMemory's: a logger writes its chunks whole); otherwise the log
	// faults it in as it reaches it (fault).
	faultWhole bool
}

type memOwner struct{ maps *mappings }

// mappings are the mapped regions of one log, by their chunk's first
// byte (the chunk is a huge-page-aligned part of the region).
// The log and, once the log is garbage, its cleanup use it, one after
// the other; mu orders them for the race detector and for tests that
// watch the cleanup.
type mappings struct {
	mu      sync.Mutex
	regions map[*byte][]byte
	// shared, if set, hands out the chunks first (a log under a quota
	// with a logger on its host: Config.LogShared); held are the chunks
	// the log holds of it, by their first byte, given back with release
	// or, once the log is garbage, by its cleanup.
	shared SharedLogMemory
	held   map[*byte][]byte
}

// SharedLogMemory is memory a log under a quota shares with its loggers
// on the same host (the launcher's: a memory file each such logger
// maps). A dump to such a logger names where each payload lies in it
// (an offset) instead of carrying the bytes, and the logger copies them
// out: the PE copies nothing. The caller owns the memory and its
// safety: a chunk given back (Release) may still be read by a logger
// for the dumps taken before, so the memory must not hand it out again
// until every logger has read those (or is gone). Its methods may be
// called from any goroutine (a log's cleanup gives its chunks back).
type SharedLogMemory interface {
	// Chunk returns an empty chunk of capacity at least size, or nil
	// (none free now: the log maps one of its own, whose payloads its
	// dumps carry).
	Chunk(size int) []byte
	// Release gives back a chunk Chunk returned, which the log will
	// not write again.
	Release(c []byte)
	// Offset returns where b's first byte lies in the memory (false:
	// b is not in it).
	Offset(b []byte) (uint64, bool)
}

// count is the number of regions mapped.
func (ms *mappings) count() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.regions)
}

// setShared makes a mapped log's memory take its chunks from shared
// first (nil: none).
func (m logMemory) setShared(shared SharedLogMemory) {
	if m.owner == nil || shared == nil {
		return
	}
	ms := m.owner.maps
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.shared, ms.held = shared, map[*byte][]byte{}
}

// sharedOf returns the shared memory chunk c lies in (nil if none).
func (m logMemory) sharedOf(c []byte) SharedLogMemory {
	if m.owner == nil || cap(c) == 0 {
		return nil
	}
	ms := m.owner.maps
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if _, ok := ms.held[&c[:1][0]]; ok {
		return ms.shared
	}
	return nil
}

// shared is the log's shared memory (nil: none).
func (m logMemory) shared() SharedLogMemory {
	if m.owner == nil {
		return nil
	}
	ms := m.owner.maps
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.shared
}

// newLogMemory returns the memory of a log, mapped if offHeap and the
// platform supports it.
func newLogMemory(offHeap bool) logMemory {
	if !offHeap || !canMap {
		return logMemory{}
	}
	o := &memOwner{&mappings{regions: map[*byte][]byte{}}}
	runtime.AddCleanup(o, (*mappings).unmapAll, o.maps)
	return logMemory{owner: o}
}

// chunk returns an empty chunk of capacity at least need.
func (m logMemory) chunk(need int) []byte {
	if m.owner != nil {
		ms := m.owner.maps
		ms.mu.Lock()
		shared := ms.shared
		ms.mu.Unlock()
		if shared != nil {
			if c := shared.Chunk(need); cap(c) >= need && cap(c) > 0 {
				ms.mu.Lock()
				ms.held[&c[:1][0]] = c[:cap(c)]
				ms.mu.Unlock()
				return c[:0]
			}
		}
		size := (max(mappedChunk, need) + hugePage - 1) / hugePage * hugePage
		if m.size > 0 && need <= m.size {
			size = m.size
		}
		if c, region, ok := mapChunk(size, m.faultWhole); ok {
			ms := m.owner.maps
			ms.mu.Lock()
			ms.regions[&c[:1][0]] = region
			ms.mu.Unlock()
			return c[:0]
		}
		// Mapping failed (e.g. address space exhausted): the heap still
		// serves.
	}
	if m.size > 0 {
		return make([]byte, 0, max(m.size, need))
	}
	return make([]byte, 0, max(heapChunk, need))
}

// fault faults in chunk c, a huge page (2 MiB) at a time, from byte from
// (where the pages before are faulted in) to the huge page that holds
// byte end-1, and returns how far c is faulted in then: in one call per
// huge page rather than as the log writes it (where the kernel has no
// huge page to give, one fault per 4 KiB costs about twice as much:
// docs/benchmarks.md, "Checkpoint cost"). Only a mapped chunk of whole
// huge pages is faulted in so; any other faults as it is written (it
// returns cap(c)).
func (m logMemory) fault(c []byte, from, end int) int {
	if m.owner == nil || m.faultWhole || cap(c)%hugePage != 0 || addrOf(c[:1])%hugePage != 0 {
		return cap(c)
	}
	to := min((end+hugePage-1)/hugePage*hugePage, cap(c))
	if to > from {
		populate(c[from:to:to])
	}
	return max(to, from)
}

// release gives back a chunk no slice refers to any more.
func (m logMemory) release(c []byte) {
	if m.owner == nil || cap(c) == 0 {
		return
	}
	ms := m.owner.maps
	ms.mu.Lock()
	defer ms.mu.Unlock()
	key := &c[:1][0]
	if full, ok := ms.held[key]; ok {
		delete(ms.held, key)
		ms.shared.Release(full)
		return
	}
	if region, ok := ms.regions[key]; ok {
		delete(ms.regions, key)
		unmap(region)
	}
}

// mappedBytes is the memory mapped for the log's chunks (address space:
// only the pages written to cost memory).
func (m logMemory) mappedBytes() int {
	if m.owner == nil {
		return 0
	}
	ms := m.owner.maps
	ms.mu.Lock()
	defer ms.mu.Unlock()
	n := 0
	for _, r := range ms.regions {
		n += len(r)
	}
	return n
}

func (ms *mappings) unmapAll() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for k, r := range ms.regions {
		unmap(r)
		delete(ms.regions, k)
	}
	for k, c := range ms.held {
		ms.shared.Release(c)
		delete(ms.held, k)
	}
}

// addrOf is the address of b's first byte.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
