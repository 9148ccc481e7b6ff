package launcher

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gochare/gochare/logging"
)

// sharedLog is the memory a PE's sender log shares with the loggers on
// its host under a quota (logging.SharedLogMemory): a sealed memfd the
// PE maps and offers to each such logger with its dump ring
// (offerDumpRing), in slots of the log's chunk size. The log's chunks
// are cut from it, so a dump placed in the ring names where its payloads
// lie (logging.ExpandPlaced) and the logger copies them out of this
// memory into its store: the PE copies no payload into the ring (LeanMD
// at a tenth of its peak: about 48 MB a run, about 11 ms of the four
// PEs' CPU).
//
// A chunk the log gives back (Release) may still be named by dumps in
// the ring that a logger has not read yet: it is handed out again only
// once every logger it may have been dumped to has consumed its ring up
// to where the ring's head was when the chunk came back (its gate), or
// is gone (a logger that lost its connection reads no more of the PE's
// dumps, and what it stored of them is lost for the PE anyway). Dumps
// placed before the log gives a chunk back are all in the ring then: a
// chunk is given back once its entries are acknowledged, and a dump
// handed over in the ring is acknowledged when it is placed there, one
// through the socket when the logger stored it. The memory holds the
// log's chunks under the quota and sharedLogTransit more for chunks given
// back and not read yet; when no slot is free the log maps a chunk of
// its own, whose payloads its dumps carry as before.
type sharedLog struct {
	mem  []byte
	fd   int
	slot int
	// links are the client's, for the gates (set once, before the
	// first chunk).
	links []*dumpLink
	mu    sync.Mutex
	// next is the first slot never handed out; back are the slots
	// given back, oldest first, with their gates.
	next int
	back []sharedSlot
	// reused and fresh count the slots handed out again and for the
	// first time, refused the chunks asked for when none was free.
	reused, fresh, refused int
	// placed counts the dumps placed (dumpTo).
	placed atomic.Int64
}

// sharedSlot is a slot given back and its gate: per link, the ring
// position its logger must have consumed (0: none).
type sharedSlot struct {
	off  int
	gate []uint64
}

// sharedLogTransit is the memory a shared log has beyond the quota's
// chunks for chunks given back and not yet read by a logger (as the
// ring's 1 MiB bounds the dumps in transit).
const sharedLogTransit = 1 << 20

// newSharedLog maps the memory shared by a log under quota bytes, nil if
// it cannot (the log then keeps its chunks to itself).
func newSharedLog(quota int, links []*dumpLink) *sharedLog {
	if quota <= 0 {
		return nil
	}
	slot := logging.QuotaChunk(quota)
	slots := (quota+2*slot+sharedLogTransit)/slot + 1
	size := slots * slot
	fd, err := unix.MemfdCreate("gochare-log", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil
	}
	fail := func() *sharedLog { unix.Close(fd); return nil }
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail()
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail()
	}
	// Not populated: the log faults in the slots it uses, which stay
	// few while the loggers keep up (the oldest slot given back that
	// may be is handed out first).
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail()
	}
	return &sharedLog{mem: mem, fd: fd, slot: slot, links: links}
}

// Chunk returns a free slot (logging.SharedLogMemory), nil if none is.
func (s *sharedLog) Chunk(size int) []byte {
	if s == nil || size > s.slot {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.back {
		if s.passed(b.gate) {
			s.back = append(s.back[:i], s.back[i+1:]...)
			s.reused++
			return s.mem[b.off : b.off : b.off+s.slot]
		}
	}
	if off := s.next * s.slot; off+s.slot <= len(s.mem) {
		s.next++
		s.fresh++
		return s.mem[off : off : off+s.slot]
	}
	s.refused++
	return nil
}

// passed reports whether every logger of gate has consumed its ring up
// to its position there, or is gone (s.mu held; takes the links'
// locks).
func (s *sharedLog) passed(gate []uint64) bool {
	for l, pos := range gate {
		if pos == 0 {
			continue
		}
		k := s.links[l]
		k.mu.Lock()
		ok := k.gone != nil || k.ring == nil || atomic.LoadUint64(k.ring.consumed()) >= pos
		k.mu.Unlock()
		if !ok {
			return false
		}
	}
	return true
}

// Release takes back a chunk Chunk returned, gated by the rings' heads
// now.
func (s *sharedLog) Release(c []byte) {
	off, ok := s.Offset(c[:cap(c)])
	if !ok || int(off)%s.slot != 0 {
		panic(fmt.Sprintf("launcher: a chunk given back at %d is not a slot of the shared log", off))
	}
	gate := make([]uint64, len(s.links))
	for l, k := range s.links {
		k.mu.Lock()
		if k.gone == nil && k.ring != nil {
			gate[l] = k.ring.head
		}
		k.mu.Unlock()
	}
	s.mu.Lock()
	s.back = append(s.back, sharedSlot{off: int(off), gate: gate})
	s.mu.Unlock()
}

// Offset returns where b lies in the shared memory.
func (s *sharedLog) Offset(b []byte) (uint64, bool) {
	if s == nil || cap(b) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(s.mem)))
	if off >= uintptr(len(s.mem)) {
		return 0, false
	}
	return uint64(off), true
}

// acceptSharedLog maps, for reading, the log memory a PE offered with
// its ring (size bytes, the descriptor rd received after the ring's),
// after checking that the file is sealed at that size.
func acceptSharedLog(rd *rightsReader, size int) ([]byte, error) {
	return rd.mapSealed("a log memory", size, 1, maxSharedLog, unix.PROT_READ, unix.MAP_SHARED)
}

// maxSharedLog bounds the log memory a logger maps for one PE.
const maxSharedLog = 1 << 30

func unmapSharedLog(mem []byte) {
	if mem != nil {
		unix.Munmap(mem)
	}
}

// expandPlaced stores a placed dump of PE pe, n bytes before position
// end of its ring, its payloads copied out of the PE's log memory
// shared, and marks the ring consumed past it (once the payloads are
// copied: the PE may then reuse their chunks); it returns the dump and
// the number of its entries.
func (s *dumpServer) expandPlaced(ring *dumpRing, shared []byte, pe int, epoch uint64, n int, end uint64) ([]byte, int, error) {
	src, err := ring.view(n, end)
	if err != nil {
		return nil, 0, err
	}
	size, err := logging.PlacedSize(src)
	if err != nil {
		return nil, 0, err
	}
	if size > maxDump {
		// Bounded as a dump through the socket is, before the store
		// takes a buffer of that size.
		return nil, 0, fmt.Errorf("%w: a placed dump expanding to %d bytes (at most %d)", logging.ErrBadDump, size, maxDump)
	}
	buf := s.store.buffer(pe, epoch, size)
	out, count, err := logging.ExpandPlaced(buf[:0], src, shared)
	if err != nil {
		return nil, 0, err
	}
	ring.consume(end)
	return out, count, nil
}

// DumpPlaced reports whether a dump to logger may be placed
// (scheduler.LogSharer): the logger maps the shared log memory.
func (c *dumpClient) DumpPlaced(logger int) bool {
	if c.shared == nil || logger < 0 || logger >= len(c.links) {
		return false
	}
	k := c.links[logger]
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.placed && k.gone == nil
}

// SharedLogMemory returns the log memory shared with the loggers on this
// host (scheduler.LogSharer), nil if none.
func (c *dumpClient) SharedLogMemory() logging.SharedLogMemory {
	if c.shared == nil {
		return nil
	}
	return c.shared
}

// shareLog makes the log memory the PE shares with the loggers on its
// host, for a log under quota bytes (none under TLS: the dumps go
// through the connection, which has no ring then).
func (c *dumpClient) shareLog(quota int) {
	if c.tls == nil {
		c.shared = newSharedLog(quota, c.links)
	}
}

func (s *sharedLog) countPlaced() {
	if s != nil {
		s.placed.Add(1)
	}
}

// logStats logs what s handed out (at the PE's end).
func (s *sharedLog) logStats(log *slog.Logger) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	log.Info("shared log memory", "slots_fresh", s.fresh, "slots_reused", s.reused, "chunks_refused", s.refused, "placed_dumps", s.placed.Load())
}
