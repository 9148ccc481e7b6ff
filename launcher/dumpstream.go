package launcher

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// The dump stream: with --log-quota every PE dumps the oldest entries of
// its sender log to a logger (scheduler/quota.go decides what and when),
// over a TCP connection of its own to the logger (one per PE and logger,
// dialed by the PE on its first dump there), authenticated as the PEs'
// connections are: under --tls a mutual TLS handshake with the job's
// certificates first, then both sides prove the job secret (the
// handshake of loggerconn.go, magic "GCD1", label "gochare-dump").
//
// Then the PE sends dumps, a 21-byte header (kind 1 u8, epoch u64, from
// u32, to u32, length u32) and the entries (logging.DumpBatch.Payload),
// and the logger answers each it stored with a cumulative
// acknowledgement (kind 2 u8, epoch u64, to u32): it holds the PE's
// entries of that period below to. For a recovery the PE asks for
// entries back with a fetch (a dump header of kind 3): with length 0 the
// whole run [from, to), else the entries of it the body lists, as pairs
// of uvarints (skip, count): from the run's start (then from the end of
// the last pair's entries) skip entries, take count. The logger answers
// with the entries, one after the other (a dump header of kind 4, the
// same epoch and range, and the entries; length 0 when it does not hold
// them). A PE on the logger's host (the Unix socket) hands the logger a
// ring of shared memory first and places its dumps there, sending their
// headers alone (kinds 6 and 5, dumpring_linux.go); the logger then
// publishes its acknowledgements in the ring and writes one on the
// socket only when the PE asked to be woken. A dump the PE handed over
// in the ring (kind 7, dumpTo) the PE acknowledges itself, and the
// logger not at all. All integers little-endian. A
// connection that breaks the handshake, or sends a malformed dump, is
// closed and logged by the logger; a PE that loses its connection to a
// logger (or cannot open one) takes that logger for dead
// (scheduler.LoggerLost): the launcher declares a logger dead for good,
// and a logger never comes back.
const (
	dumpMagic      = "GCD1"
	dumpNonce      = 16
	dumpHeaderSize = 1 + 8 + 4 + 4 + 4
	dumpAckSize    = 1 + 8 + 4
	dumpKindDump   = 1
	dumpKindAck    = 2
	dumpKindFetch  = 3
	dumpKindData   = 4
	// A PE on the logger's host hands it a ring of shared memory
	// first (dumpring_linux.go: a header of kind 6, length the ring's
	// size, and the memory's descriptor with it), and then sends dumps
	// it placed there as a header of kind 5 followed by the position
	// after the entries in the ring (u64) instead of the entries.
	dumpKindRing       = 5
	dumpKindRingOffer  = 6
	dumpRingHeaderSize = dumpHeaderSize + 8
	// A dump of kind 7 is one of kind 5 the PE took as stored when it
	// placed it in the ring (handed over, dumpClient.dumpTo): the
	// logger stores it and acknowledges nothing for it.
	dumpKindRingHandedOver = 7
	// dumpPlaced marks a dump of kind 5 or 7 in the placed form
	// (logging.ExpandPlaced): its payloads lie in the log memory the PE
	// offered with its ring (sharedlog_linux.go; its size in the ring
	// offer's epoch field, its descriptor after the ring's), and the
	// logger copies them from there.
	dumpPlaced = 0x10
	// maxDump bounds one dump's entries (a Dumper's batch is a sixteenth
	// of the quota; one entry may be larger).
	maxDump = 1 << 30
	// dumpSocketBuffer is the send buffer a PE asks for on a Unix
	// socket to its logger (the system may give less: net.core.wmem_max).
	dumpSocketBuffer = 4 << 20
	// dumpRingTell is how much a PE hands over in its ring (half of
	// it, dumpring_linux.go) before it tells the logger (dumpTo): the
	// logger then has the time the PE takes to place as much again to
	// copy it out before the ring is full. At a quarter the logger woke
	// twice as often (LeanMD at a tenth of its peak: about 40 writes a
	// PE and run instead of 24, the logger's cpu_ms about 45 instead of
	// 37, qt9 in docs/benchmarks.md).
	dumpRingTell       = 512 << 10
	dumpHandshakeLimit = 10 * time.Second
)

// errDumpRefused is the error of a dump connection refused in its
// handshake.
var errDumpRefused = errors.New("launcher: dump connection refused")

// loggerStore is what a logger holds: per PE, the entries of the PE's
// current period, in runs as they came. The runs are cut from slabs of
// mapped memory (buffer; logging.DumpMemory) that go back to a free list
// when their period ends: a logger that read every dump into fresh heap
// memory would fault in every page of all that is dumped to it (4 KiB
// at a time), which on LeanMD cost the logger more CPU than all else it
// does. Its zero value (the tests') takes the payloads it is given.
type loggerStore struct {
	mu   sync.Mutex
	pes  map[int]*peDumps
	size int // bytes held
	// mem maps the slabs (nil: payloads are the caller's); free are the
	// slabs of periods that ended, kept for reuse up to maxFreeSlabs.
	mem  *logging.DumpMemory
	free []dumpSlab
}

// dumpSlab is a slab and how far it is faulted in: a slab is faulted in
// a huge page at a time as dumps fill it (logging.DumpMemory.Fault), not
// whole when mapped: each PE's last slab of a period is mostly empty
// (LeanMD at a tenth of its peak: 4.3 MB a PE and period, in two slabs
// of 4 MiB), and this VM charges about 1 ms per MB of first touch.
type dumpSlab struct {
	mem     []byte
	faulted int
}

// maxFreeSlabs bounds the slabs a logger keeps for reuse (256 MiB).
const maxFreeSlabs = 64

type peDumps struct {
	epoch uint64
	runs  []dumpRun
	// slabs are the memory of the runs (the last one is being filled);
	// own are chunks made for one dump larger than a quarter slab.
	slabs []dumpSlab
	used  int
	own   [][]byte
	// readers counts the fetches writing runs of this period out; the
	// memory of a period that ended (ended) while one did goes back
	// when the last is done (loggerStore.done).
	readers int
	ended   bool
}

type dumpRun struct {
	from, to int
	payload  []byte
}

// period returns PE pe's dumps of period epoch, ending the one before
// (s.mu held).
func (s *loggerStore) period(pe int, epoch uint64) *peDumps {
	if s.pes == nil {
		s.pes = map[int]*peDumps{}
	}
	d := s.pes[pe]
	if d != nil && d.epoch == epoch {
		return d
	}
	if d != nil {
		for _, r := range d.runs {
			s.size -= len(r.payload)
		}
		d.ended = true
		if d.readers == 0 {
			s.recycle(d)
		}
	}
	d = &peDumps{epoch: epoch}
	s.pes[pe] = d
	return d
}

// recycle gives the memory of d, a period that ended and that no fetch
// reads any more, back: its slabs to the free list, its own chunks to
// the system (s.mu held).
func (s *loggerStore) recycle(d *peDumps) {
	for _, c := range d.slabs {
		if len(s.free) < maxFreeSlabs {
			s.free = append(s.free, c)
		} else {
			s.mem.Release(c.mem)
		}
	}
	for _, c := range d.own {
		s.mem.Release(c)
	}
	d.slabs, d.own = nil, nil
}

// buffer returns n bytes to read a dump of PE pe of period epoch into,
// for store.
func (s *loggerStore) buffer(pe int, epoch uint64, n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil {
		return make([]byte, n)
	}
	d := s.period(pe, epoch)
	if n > logging.DumpSlab/4 {
		c := s.mem.Chunk(n)
		s.mem.Fault(c, 0, n)
		d.own = append(d.own, c)
		return c[:n:n]
	}
	if len(d.slabs) == 0 || d.used+n > len(d.slabs[len(d.slabs)-1].mem) {
		var c dumpSlab
		if k := len(s.free); k > 0 {
			c, s.free = s.free[k-1], s.free[:k-1]
		} else {
			c.mem = s.mem.Chunk(logging.DumpSlab)
		}
		d.slabs = append(d.slabs, c)
		d.used = 0
	}
	c := &d.slabs[len(d.slabs)-1]
	if d.used+n > c.faulted {
		c.faulted = s.mem.Fault(c.mem, c.faulted, d.used+n)
	}
	b := c.mem[d.used : d.used+n : d.used+n]
	d.used += n
	return b
}

// store keeps a dump of PE pe and returns the acknowledgement's end. A
// dump of another period replaces what the PE had here (that period
// ended with a checkpoint, or the PE's log started again); one that
// starts below what is held replaces it from there.
func (s *loggerStore) store(pe int, epoch uint64, from, to int, payload []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.period(pe, epoch)
	for len(d.runs) > 0 && d.runs[len(d.runs)-1].from >= from {
		s.size -= len(d.runs[len(d.runs)-1].payload)
		d.runs = d.runs[:len(d.runs)-1]
	}
	d.runs = append(d.runs, dumpRun{from: from, to: to, payload: payload})
	s.size += len(payload)
	return to
}

// fetch returns PE pe's entries [from, to) of period epoch: the stored
// runs that cover them exactly, in order, as they lie in the logger's
// memory (not joined into one buffer: a fetch of tens of MiB would cost
// as many fresh pages), with their total size, or false. The runs stay
// valid, even if the period ends meanwhile, until the caller, once it
// has written them out, calls done(d) with the peDumps returned.
func (s *loggerStore) fetch(pe int, epoch uint64, from, to int) (parts [][]byte, size int, d *peDumps, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d = s.pes[pe]
	if d == nil || d.epoch != epoch {
		return nil, 0, nil, false
	}
	at := from
	for _, r := range d.runs {
		if r.to <= at || r.from >= to {
			continue
		}
		if r.from != at || r.to > to {
			return nil, 0, nil, false
		}
		parts = append(parts, r.payload)
		size += len(r.payload)
		at = r.to
	}
	if at != to {
		return nil, 0, nil, false
	}
	d.readers++
	return parts, size, d, true
}

// done ends a fetch of d's runs: fetch's runs may be reused.
func (s *loggerStore) done(d *peDumps) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.readers--
	if d.readers == 0 && d.ended {
		s.recycle(d)
	}
}

// held returns the bytes the logger holds.
func (s *loggerStore) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// dumpServer is a logger's side of the dump stream.
type dumpServer struct {
	logger int
	pes    int
	secret []byte
	tls    *tls.Config
	log    *slog.Logger
	ln     net.Listener
	// local is the listener on the Unix socket (localLoggerAddr; nil if
	// none).
	local net.Listener
	store loggerStore
	// events is the event logger, fed by the PEs' record streams on the
	// same listener (eventlogstream.go).
	events *eventLogServer
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
}

// listenDumps starts logger l's dump listener on host (":0" port).
func listenDumps(l, pes int, host string, secret []byte, tlsCfg *tls.Config, log *slog.Logger) (*dumpServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("launcher: logger %d: dump listener: %w", l, err)
	}
	s := &dumpServer{logger: l, pes: pes, secret: secret, tls: tlsCfg, log: log, ln: ln, open: map[net.Conn]struct{}{}, events: newEventLogServer(l, pes, log)}
	s.store.mem = logging.NewDumpMemory()
	if name := localLoggerAddr(s.addr()); name != "" {
		if s.local, err = net.Listen("unix", name); err != nil {
			// The PEs reach the logger over TCP.
			log.Warn("logger: no Unix socket for the PEs on this host", "logger", l, "err", err)
			s.local = nil
		}
	}
	s.wg.Add(1)
	go s.acceptLoop(s.ln)
	if s.local != nil {
		s.wg.Add(1)
		go s.acceptLoop(s.local)
	}
	return s, nil
}

func (s *dumpServer) addr() string { return s.ln.Addr().String() }

func (s *dumpServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.open[c] = struct{}{}
	return true
}

func (s *dumpServer) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
	c.Close()
}

// close stops the listener and every connection.
func (s *dumpServer) close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	if s.local != nil {
		s.local.Close()
	}
	s.wg.Wait()
}

func (s *dumpServer) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		if !s.track(nc) {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(nc)
			c, pe, kind, err := acceptLoggerConn(nc, s.tls, s.secret, s.logger, s.pes, dumpStream, eventLogStream)
			if err != nil {
				s.log.Warn("refused dump connection", "addr", nc.RemoteAddr().String(), "err", err)
				return
			}
			if kind == eventLogStream {
				s.events.serve(c, pe)
				return
			}
			if err := s.serve(c, pe); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("dump connection dropped", "pe", pe, "addr", nc.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// serve stores PE pe's dumps and acknowledges each.
func (s *dumpServer) serve(nc net.Conn, pe int) error {
	// A small buffer: the headers come through it, and a dump's
	// entries, larger than it, mostly go straight from the socket into
	// their buffer (bufio reads past an empty buffer).
	raw := rawConnOf(nc)
	stream := &streamReader{conn: nc, raw: raw}
	var rights *rightsReader // a PE's connection on this host
	if uc, ok := nc.(*net.UnixConn); ok {
		rights = newRightsReader(uc)
		defer rights.close()
		stream.conn = rights
	}
	r := bufio.NewReaderSize(stream, 16<<10)
	var ring *dumpRing // the PE's, once offered
	defer func() { ring.unmap() }()
	var sharedLog []byte // the PE's log memory, offered with the ring
	defer func() { unmapSharedLog(sharedLog) }()
	var h [dumpRingHeaderSize]byte
	var ack [dumpAckSize]byte
	// An acknowledgement is cumulative: while more of the stream is
	// already here (the PE sends the dumps it took together in one
	// write), it waits for the next dump's, and one goes for them all.
	// It goes before the logger waits on the connection or answers a
	// fetch: the PE may be waiting for it.
	ackDue := false
	sendAck := func() error {
		if !ackDue {
			return nil
		}
		ackDue = false
		n := 0
		if raw != nil {
			n = writeNow(raw, ack[:])
		}
		if n == len(ack) {
			return nil
		}
		_, err := nc.Write(ack[n:]) // the socket full, or its error
		return err
	}
	for {
		if ackDue && r.Buffered() == 0 && (raw == nil || !moreToRead(raw)) {
			if err := sendAck(); err != nil {
				return err
			}
		}
		if _, err := io.ReadFull(r, h[:dumpHeaderSize]); err != nil {
			return err
		}
		// The ring offer's descriptor, if any, came with the first
		// bytes.
		stream.plain = true
		epoch := binary.LittleEndian.Uint64(h[1:])
		from, to := binary.LittleEndian.Uint32(h[9:]), binary.LittleEndian.Uint32(h[13:])
		n := binary.LittleEndian.Uint32(h[17:])
		if h[0] == dumpKindRingOffer && rights != nil && ring == nil {
			var err error
			if ring, err = acceptDumpRing(rights, int(n)); err != nil {
				return fmt.Errorf("launcher: PE %d's dump ring: %w", pe, err)
			}
			if epoch > 0 {
				if sharedLog, err = acceptSharedLog(rights, int(min(epoch, 1<<40))); err != nil {
					return fmt.Errorf("launcher: PE %d's log memory: %w", pe, err)
				}
			}
			continue
		}
		placed := h[0]&dumpPlaced != 0 && sharedLog != nil && ring != nil
		if placed {
			h[0] &^= dumpPlaced
		}
		var ringEnd uint64
		inRing := (h[0] == dumpKindRing || h[0] == dumpKindRingHandedOver) && ring != nil
		if inRing {
			if _, err := io.ReadFull(r, h[dumpHeaderSize:]); err != nil {
				return err
			}
			ringEnd = binary.LittleEndian.Uint64(h[dumpHeaderSize:])
		}
		if (h[0] != dumpKindDump && h[0] != dumpKindFetch && !inRing) || to <= from || n > maxDump || from > 1<<31 || to > 1<<31 ||
			(h[0] == dumpKindFetch && uint64(n) > maxNeedBytes*uint64(to-from)) {
			return fmt.Errorf("launcher: malformed dump from PE %d: kind %d, entries [%d, %d), %d bytes", pe, h[0], from, to, n)
		}
		if h[0] == dumpKindFetch {
			if err := sendAck(); err != nil {
				return err
			}
			var need []int
			if n > 0 {
				body := make([]byte, n)
				if _, err := io.ReadFull(r, body); err != nil {
					return err
				}
				var err error
				if need, err = decodeNeed(int(from), int(to), body); err != nil {
					return fmt.Errorf("launcher: malformed fetch from PE %d: %w", pe, err)
				}
			}
			if err := s.answerFetch(nc, (*[dumpHeaderSize]byte)(h[:dumpHeaderSize]), pe, epoch, int(from), int(to), need); err != nil {
				return err
			}
			continue
		}
		var payload []byte
		count := -1 // a placed dump's is counted as it is expanded
		var err error
		if placed && inRing {
			if payload, count, err = s.expandPlaced(ring, sharedLog, pe, epoch, int(n), ringEnd); err != nil {
				return fmt.Errorf("launcher: dump from PE %d: %w", pe, err)
			}
		} else if payload = s.store.buffer(pe, epoch, int(n)); inRing {
			if err := ring.take(payload, ringEnd); err != nil {
				return fmt.Errorf("launcher: dump from PE %d: %w", pe, err)
			}
		} else if _, err := io.ReadFull(r, payload); err != nil {
			return err
		}
		// The logger stores and returns bytes: it checks their framing
		// only (the PE decodes in full what it fetches back).
		if count < 0 {
			if count, err = logging.CountDumped(payload); err != nil {
				return fmt.Errorf("launcher: dump from PE %d: %w", pe, err)
			}
		}
		if count != int(to-from) {
			return fmt.Errorf("launcher: dump from PE %d: %d entries for [%d, %d)", pe, count, from, to)
		}
		end := s.store.store(pe, epoch, int(from), int(to), payload)
		if h[0] == dumpKindRingHandedOver {
			// The PE acknowledged it itself.
			continue
		}
		if ring != nil && !ring.publishAck(epoch, end) && !ackDue {
			// The PE reads the acknowledgement in the ring's first
			// page; it asked for none on the socket.
			continue
		}
		if ackDue && binary.LittleEndian.Uint64(ack[1:]) != epoch {
			// An acknowledgement covers one period.
			if err := sendAck(); err != nil {
				return err
			}
		}
		ack[0] = dumpKindAck
		binary.LittleEndian.PutUint64(ack[1:], epoch)
		binary.LittleEndian.PutUint32(ack[9:], uint32(end))
		ackDue = true
	}
}

// streamReader reads a logger's end of a dump connection: through conn
// until the first frame is read (a ring offer's descriptor comes with the
// first bytes: rightsReader), then, on a plain socket, with reads that
// cannot block (readNow, RawSyscall) and a wait in the netpoller when it
// is empty: without the runtime's bookkeeping for a call that may
// block, whose every entry woke the logger's sysmon thread while the
// logger was idle between two dumps.
type streamReader struct {
	conn  io.Reader
	raw   syscall.RawConn
	plain bool
}

func (r *streamReader) Read(p []byte) (int, error) {
	if !r.plain || r.raw == nil || len(p) == 0 {
		return r.conn.Read(p)
	}
	var n int
	var err error
	rerr := r.raw.Read(func(fd uintptr) bool {
		n, err = readNow(fd, p)
		return n > 0 || err != nil // else wait until readable
	})
	if err == nil && n == 0 {
		err = rerr
	}
	return n, err
}

// answerFetch answers PE pe's fetch of entries [from, to) of period
// epoch, or of entries need of them if need is not nil (h, the fetch's
// header, becomes the answer's): the header, then the entries straight
// from where the logger stores them, in one vectored write.
func (s *dumpServer) answerFetch(nc net.Conn, h *[dumpHeaderSize]byte, pe int, epoch uint64, from, to int, need []int) error {
	parts, size, d, ok := s.store.fetch(pe, epoch, from, to)
	if ok {
		defer s.store.done(d)
	}
	if ok && need != nil {
		// The runs are pinned (fetch): they are read without the lock.
		runs := parts
		parts, size = nil, 0
		at := from
		for _, run := range runs {
			count, err := logging.CountDumped(run)
			if err != nil {
				ok = false
				break
			}
			if parts, need, err = logging.PickDumped(parts, run, at, need); err != nil {
				ok = false
				break
			}
			at += count
		}
		if !ok || len(need) > 0 || at != to {
			ok, parts = false, nil
		}
		for _, p := range parts {
			size += len(p)
		}
	}
	if !ok {
		s.log.Warn("a PE asked for log entries this logger does not hold", "pe", pe, "epoch", epoch, "from", from, "to", to)
	}
	h[0] = dumpKindData
	binary.LittleEndian.PutUint32(h[17:], uint32(size))
	return writeBuffers(nc, append(net.Buffers{h[:]}, parts...), nil)
}

// writeBuffers writes bufs to nc: in vectored writes on a TCP
// connection; through a buffered writer (bw, made on first use if nil)
// on any other, a TLS one, where each part would be a record and a
// write of its own.
func writeBuffers(nc net.Conn, bufs net.Buffers, bw **bufio.Writer) error {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		_, err := bufs.WriteTo(nc)
		return err
	}
	var w *bufio.Writer
	if bw != nil {
		w = *bw
	}
	if w == nil {
		w = bufio.NewWriterSize(nc, 256<<10)
		if bw != nil {
			*bw = w
		}
	}
	if _, err := bufs.WriteTo(w); err != nil {
		return err
	}
	return w.Flush()
}

// maxNeedBytes bounds a fetch's body per entry of its range: a pair of
// uvarints below 2^31.
const maxNeedBytes = 10

// encodeNeed encodes entries need (sorted, from from on) as a fetch's
// body.
func encodeNeed(from int, need []int) []byte {
	var b []byte
	at := from
	for k := 0; k < len(need); {
		n := 1
		for k+n < len(need) && need[k+n] == need[k]+n {
			n++
		}
		b = binary.AppendUvarint(b, uint64(need[k]-at))
		b = binary.AppendUvarint(b, uint64(n))
		at = need[k] + n
		k += n
	}
	return b
}

// decodeNeed decodes a fetch's body: the entries it lists, all in
// [from, to).
func decodeNeed(from, to int, b []byte) ([]int, error) {
	var need []int
	at := from
	for len(b) > 0 {
		skip, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("bad entry list")
		}
		b = b[k:]
		count, k := binary.Uvarint(b)
		if k <= 0 || count == 0 {
			return nil, errors.New("bad entry list")
		}
		b = b[k:]
		if skip > uint64(to-at) || count > uint64(to-at)-skip {
			return nil, fmt.Errorf("entries past the range [%d, %d)", from, to)
		}
		at += int(skip)
		for range count {
			need = append(need, at)
			at++
		}
	}
	if need == nil {
		return nil, errors.New("an empty entry list")
	}
	return need, nil
}

// dumpClient is a PE's side of the dump stream: a
// scheduler.DumpAckSource with one connection per logger, dialed on the
// first dump there. Dump writes what the socket takes at once on the
// PE's goroutine (a plain connection, nothing queued before it) and
// queues the rest for a writer goroutine per logger; the
// acknowledgements are kept for the PE to take between slices
// (TakeDumpAcks, which reads the sockets itself while dumps are
// unacknowledged), by it or by a reader goroutine per logger, which
// then tells the PE (post); the first error posts the logger's loss.
// With one thread per PE those goroutines run only when the PE waits.
type dumpClient struct {
	rank   int
	secret []byte
	tls    *tls.Config
	post   func(any)
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	links  []*dumpLink
	// acks are the latest acknowledgement of each logger not yet taken
	// (To 0: none); pending is set while there is one.
	ackMu   sync.Mutex
	acks    []scheduler.DumpAcked
	pending atomic.Bool
	// shared is the log memory offered to the loggers on this host
	// with the rings (nil: none).
	shared *sharedLog
}

type dumpLink struct {
	logger int
	addr   string
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []dumpOut
	gone   error
	start  sync.Once
	conn   net.Conn
	// fetches wait for the logger's answers, in the order asked.
	fetches []chan fetchReply
	// lost is closed when the link is gone.
	lost chan struct{}
	// raw is conn's socket when the PE writes and reads it itself
	// (plain TCP or Unix; set with conn, under mu, before pollable);
	// writing is set while the writer writes outside mu.
	raw      syscall.RawConn
	pollable atomic.Bool
	writing  bool
	// ring is the memory shared with a logger on this host (nil: none;
	// set with raw, used under mu); heads, iov and outs are the
	// headers, buffers and dumps of the PE's own vectored write
	// (dumpTo, on the PE goroutine).
	ring *dumpRing
	// placed is set with ring when the logger took the shared log
	// memory with it: dumps to it may be placed (DumpPlaced).
	placed bool
	heads  []byte
	iov    [][]byte
	outs   []dumpOut
	// untold are the dumps handed over in the ring whose headers are
	// not written yet, untoldBytes their entries' bytes (under mu): the
	// logger hears of them together (dumpTo).
	untold      []dumpOut
	untoldBytes int
	// sockEpoch and sockTo are the period and end of the last dump
	// whose entries went through the socket; sockUnacked is set from
	// then until the logger acknowledges it (under mu): until then no
	// dump is handed over (an acknowledgement is cumulative).
	sockEpoch   uint64
	sockTo      int
	sockUnacked bool
	// lastEpoch and lastTo are the period and end of the last dump
	// (under mu); unacked is set from then until an acknowledgement
	// covers it.
	lastEpoch uint64
	lastTo    int
	unacked   atomic.Bool
	// ringAcks is set once ring is: the acknowledgements are read in
	// the ring's first page (dumpRing.ack), an acknowledgement on the
	// socket only wakes the reader goroutine; ringAckSeq is the
	// sequence count of the last one taken there (under mu).
	ringAcks   atomic.Bool
	ringAckSeq uint64
	// inbox holds what was read from a raw connection and not yet taken
	// as frames, by the reader goroutine or the PE's polls, whichever
	// holds rdMu.
	rdMu  sync.Mutex
	inbox rawInbox
}

// dumpOut is a dump or (fetch set) a fetch to send, of which the first
// sent bytes (of header and payload) are written.
type dumpOut struct {
	logging.DumpBatch
	fetch bool
	// ringLen > 0: the entries, ringLen bytes, are in the link's ring
	// before position ringEnd (Payload is nil).
	ringLen int
	ringEnd uint64
	// handedOver: a dump in the ring the PE took as stored when it
	// placed it there (kind dumpKindRingHandedOver).
	handedOver bool
	sent       int
}

// header fills h (dumpRingHeaderSize bytes) with o's header and returns
// it.
func (o *dumpOut) header(h []byte) []byte {
	switch {
	case o.fetch:
		putDumpHeader(h, dumpKindFetch, o.DumpBatch)
	case o.ringLen > 0:
		kind := byte(dumpKindRing)
		if o.handedOver {
			kind = dumpKindRingHandedOver
		}
		if o.Placed {
			kind |= dumpPlaced
		}
		putDumpHeader(h, kind, o.DumpBatch)
		binary.LittleEndian.PutUint32(h[17:], uint32(o.ringLen))
		binary.LittleEndian.PutUint64(h[dumpHeaderSize:], o.ringEnd)
		return h[:dumpRingHeaderSize]
	default:
		putDumpHeader(h, dumpKindDump, o.DumpBatch)
	}
	return h[:dumpHeaderSize]
}

// putDumpHeader fills h, a dump stream header of kind for b.
func putDumpHeader(h []byte, kind byte, b logging.DumpBatch) {
	h[0] = kind
	binary.LittleEndian.PutUint64(h[1:], b.Epoch)
	binary.LittleEndian.PutUint32(h[9:], uint32(b.From))
	binary.LittleEndian.PutUint32(h[13:], uint32(b.To))
	binary.LittleEndian.PutUint32(h[17:], uint32(len(b.Payload)))
}

type fetchReply struct {
	from, to int
	payload  []byte
}

func newDumpClient(rank int, addrs []string, secret []byte, tlsCfg *tls.Config, post func(any), log *slog.Logger) *dumpClient {
	ctx, cancel := context.WithCancel(context.Background())
	c := &dumpClient{rank: rank, secret: secret, tls: tlsCfg, post: post, log: log, ctx: ctx, cancel: cancel, acks: make([]scheduler.DumpAcked, len(addrs))}
	for l, a := range addrs {
		k := &dumpLink{logger: l, addr: a, lost: make(chan struct{})}
		k.cond = sync.NewCond(&k.mu)
		if a == "" {
			k.gone = fmt.Errorf("launcher: logger %d was dead before the job began", l)
			close(k.lost)
		}
		c.links = append(c.links, k)
	}
	return c
}

// dialAhead dials the connection to the logger this PE dumps to first
// (its rank modulo the loggers, or the next live one: the Dumper's
// choice, logging.DumpConfig.Prefer) before its first dump, in the
// background: dialed at the first dump, the connection and its ring were
// up only after a dozen dumps or so (the PE runs its handlers
// meanwhile, and with one thread the dial waits for it), and those went
// through the socket, each batch waiting for the logger's
// acknowledgement before the next could be handed over.
func (c *dumpClient) dialAhead() {
	n := len(c.links)
	for i := range n {
		k := c.links[(c.rank+i)%n]
		k.mu.Lock()
		gone := k.gone != nil
		k.mu.Unlock()
		if !gone {
			k.start.Do(func() {
				c.wg.Add(1)
				go c.run(k)
			})
			return
		}
	}
}

// Dump queues b for its logger; it never blocks.
func (c *dumpClient) Dump(b logging.DumpBatch) {
	one := [1]logging.DumpBatch{b}
	c.DumpAll(one[:])
}

// DumpAll queues bs, in order, for their loggers
// (scheduler.DumpBatcher); it never blocks. The dumps to one logger go
// out together, in one vectored write where the socket takes them: the
// logger then wakes once for them and acknowledges them once.
func (c *dumpClient) DumpAll(bs []logging.DumpBatch) {
	for len(bs) > 0 {
		n := 1
		for n < len(bs) && bs[n].Logger == bs[0].Logger {
			n++
		}
		c.dumpTo(bs[:n])
		bs = bs[n:]
	}
}

// dumpTo queues bs, dumps to one logger.
//
// On the logger's host a dump placed in the ring is handed over: the
// logger maps the ring and copies the dump out of it even if this PE
// dies meanwhile, so the PE takes it as stored at once (its own
// acknowledgement, taken as the logger's are) and tells the logger of it
// later, with the dumps placed after it, once they fill half of the
// ring (dumpRingTell) or anything else goes on the connection (a dump
// through the socket, a fetch): the logger wakes once for several dumps
// and acknowledges none of them, where it woke and acknowledged for each
// (about 1,800 a LeanMD run at a tenth of its peak). A dump is handed
// over only while no dump through the socket waits for the logger's
// acknowledgement (which covers every dump before it).
func (c *dumpClient) dumpTo(bs []logging.DumpBatch) {
	l := bs[0].Logger
	if l < 0 || l >= len(c.links) {
		c.post(scheduler.LoggerLost{Logger: l, Why: fmt.Errorf("launcher: no logger %d", l)})
		return
	}
	k := c.links[l]
	k.mu.Lock()
	if k.gone != nil {
		err := k.gone
		k.mu.Unlock()
		c.post(scheduler.LoggerLost{Logger: l, Why: err})
		return
	}
	last := bs[len(bs)-1]
	k.lastEpoch, k.lastTo = last.Epoch, last.To
	k.unacked.Store(true)
	// Dumps in the ring go as their headers alone: those encoded there
	// (DumpBuffer), and the others, copied there, whose buffers are then
	// free at once.
	// Positions must grow in the order the dumps go (the logger's
	// consumed position follows them): none is copied into the ring
	// before one encoded there.
	outs := k.outs[:0]
	copyFrom := 0
	for i, b := range bs {
		if _, ok := k.ring.position(b.Payload); ok {
			copyFrom = i + 1
		}
	}
	handOver := k.ring != nil && !k.sockUnacked
	for i, b := range bs {
		o := dumpOut{DumpBatch: b}
		if end, ok := k.ring.position(b.Payload); ok {
			o.Payload, o.ringLen, o.ringEnd = nil, len(b.Payload), end
		} else if i >= copyFrom {
			if slot, end, ok := k.ring.alloc(len(b.Payload)); ok {
				copy(slot, b.Payload)
				o.Payload, o.ringLen, o.ringEnd = nil, len(b.Payload), end
			}
		}
		if o.ringLen == 0 {
			handOver = false
		}
		if o.Placed {
			c.shared.countPlaced()
		}
		outs = append(outs, o)
	}
	selfAcked := false
	if handOver {
		for i := range outs {
			outs[i].handedOver = true
			k.untoldBytes += outs[i].ringLen
			if outs[i].Placed {
				// What the logger copies for it, and what the
				// shared log waits for.
				n, _ := logging.PlacedSize(bs[i].Payload)
				k.untoldBytes += n
			}
		}
		selfAcked = c.ackedLocked(k, scheduler.DumpAcked{Logger: l, Epoch: last.Epoch, To: last.To})
	} else {
		for _, o := range outs {
			if o.ringLen == 0 {
				k.sockEpoch, k.sockTo, k.sockUnacked = o.Epoch, o.To, true
			}
		}
	}
	// The dumps not told yet go first (placed first in the ring), all
	// of them once they are enough or something else goes.
	k.untold = append(k.untold, outs...)
	if handOver && k.untoldBytes < dumpRingTell {
		outs = outs[:0]
	} else {
		outs = append(outs[:0], k.untold...)
		clear(k.untold)
		k.untold, k.untoldBytes = k.untold[:0], 0
	}
	written, partial := 0, 0 // dumps written whole, bytes of the next
	if len(outs) > 0 && k.raw != nil && !k.writing && len(k.queue) == 0 {
		// Write at once what the socket takes, which is all of it
		// unless the logger is behind: the writer is not woken for
		// each dump, and gets the rest, or the error, if any.
		k.heads = slices.Grow(k.heads[:0], dumpRingHeaderSize*len(outs))[:dumpRingHeaderSize*len(outs)]
		k.iov = k.iov[:0]
		for i := range outs {
			h := outs[i].header(k.heads[i*dumpRingHeaderSize : (i+1)*dumpRingHeaderSize])
			k.iov = append(k.iov, h)
			if len(outs[i].Payload) > 0 {
				k.iov = append(k.iov, outs[i].Payload)
			}
		}
		n := writeBuffersNow(k.raw, k.iov)
		clear(k.iov)
		for written < len(outs) {
			size := dumpHeaderSize + len(outs[written].Payload)
			if outs[written].ringLen > 0 {
				size = dumpRingHeaderSize
			}
			if n < size {
				break
			}
			n -= size
			written++
		}
		partial = n
	}
	for _, o := range outs[written:] {
		o.sent = partial
		k.queue = append(k.queue, o)
		partial = 0
	}
	queued := written < len(outs)
	if queued {
		k.cond.Signal()
	}
	// bs[i] is outs[skip+i] when outs were written (bs go last), else
	// all of bs are in the ring.
	skip := len(outs) - len(bs)
	k.mu.Unlock()
	for i, b := range bs {
		if cap(b.Payload) == 0 || inRing(k, b.Payload) {
			continue
		}
		if len(outs) == 0 || skip+i < written || outs[skip+i].ringLen > 0 {
			c.post(scheduler.DumpSent{Payload: b.Payload})
		}
	}
	if selfAcked {
		c.post(scheduler.DumpAcksPending{})
	}
	clear(outs)
	k.outs = outs[:0]
	if queued {
		k.start.Do(func() {
			c.wg.Add(1)
			go c.run(k)
		})
	}
}

// DumpBuffer returns memory in the ring shared with logger for a dump of
// at most size bytes (scheduler.DumpBufferer): len 0, capacity size; nil
// when there is no ring or no room in it.
func (c *dumpClient) DumpBuffer(logger, size int) []byte {
	if logger < 0 || logger >= len(c.links) {
		return nil
	}
	k := c.links[logger]
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ring == nil || k.gone != nil {
		return nil
	}
	slot, _, ok := k.ring.alloc(size)
	if !ok {
		return nil
	}
	return slot[:0]
}

// inRing reports whether b lies in k's ring (the PE goroutine's view:
// the ring is set once and unmapped only by close).
func inRing(k *dumpLink, b []byte) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.ring.position(b)
	return ok
}

// Fetch asks logger for entries [from, to) of period epoch and waits for
// them; it fails when the logger is gone or does not hold them.
func (c *dumpClient) Fetch(logger int, epoch uint64, from, to int) ([]byte, error) {
	return c.fetch(logger, epoch, from, to, nil)
}

// FetchSome asks logger for entries need (sorted, within [from, to)) of
// period epoch and waits for them (scheduler.DumpPicker): the logger
// sends those alone.
func (c *dumpClient) FetchSome(logger int, epoch uint64, from, to int, need []int) ([]byte, error) {
	for k, i := range need {
		if i < from || i >= to || (k > 0 && i <= need[k-1]) {
			return nil, fmt.Errorf("launcher: entry %d to fetch of [%d, %d): the entries must increase within the range", i, from, to)
		}
	}
	if len(need) == 0 {
		return nil, fmt.Errorf("launcher: no entry to fetch of [%d, %d)", from, to)
	}
	return c.fetch(logger, epoch, from, to, encodeNeed(from, need))
}

func (c *dumpClient) fetch(logger int, epoch uint64, from, to int, body []byte) ([]byte, error) {
	if logger < 0 || logger >= len(c.links) {
		return nil, fmt.Errorf("launcher: no logger %d", logger)
	}
	k := c.links[logger]
	reply := make(chan fetchReply, 1)
	k.mu.Lock()
	if k.gone != nil {
		err := k.gone
		k.mu.Unlock()
		return nil, err
	}
	k.fetches = append(k.fetches, reply)
	// The logger hears of the dumps handed over before it answers.
	k.queue = append(k.queue, k.untold...)
	clear(k.untold)
	k.untold, k.untoldBytes = k.untold[:0], 0
	k.queue = append(k.queue, dumpOut{DumpBatch: logging.DumpBatch{Logger: logger, Epoch: epoch, From: from, To: to, Payload: body}, fetch: true})
	k.cond.Signal()
	k.mu.Unlock()
	k.start.Do(func() {
		c.wg.Add(1)
		go c.run(k)
	})
	select {
	case r := <-reply:
		if r.from != from || r.to != to || len(r.payload) == 0 {
			return nil, fmt.Errorf("launcher: logger %d does not hold entries [%d, %d) of period %d", logger, from, to, epoch)
		}
		return r.payload, nil
	case <-k.lost:
		k.mu.Lock()
		err := k.gone
		k.mu.Unlock()
		return nil, err
	}
}

// lose marks k gone with err (the first error wins) and tells the PE.
func (c *dumpClient) lose(k *dumpLink, err error) {
	k.mu.Lock()
	first := k.gone == nil
	if first {
		k.gone = err
		k.queue = nil
		k.fetches = nil
		close(k.lost)
		k.cond.Broadcast()
	}
	conn := k.conn
	k.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	if first && c.ctx.Err() == nil {
		c.log.Warn("lost a logger", "logger", k.logger, "err", err)
		c.post(scheduler.LoggerLost{Logger: k.logger, Why: err})
	}
}

// run dials k's logger and writes its queue until an error or close.
func (c *dumpClient) run(k *dumpLink) {
	defer c.wg.Done()
	nc, err := c.dial(k)
	if err != nil {
		c.lose(k, err)
		return
	}
	k.mu.Lock()
	if k.gone != nil {
		k.mu.Unlock()
		nc.Close()
		return
	}
	var ring *dumpRing
	if uc, ok := nc.(*net.UnixConn); ok {
		// Room in the socket for what may be on its way (the PE
		// writes its dumps as far as the socket takes them): with the
		// default, about 200 KiB, a PE's dumps taken together went
		// out in pieces, and the logger woke for each.
		uc.SetWriteBuffer(dumpSocketBuffer)
		// The entries go through shared memory (before anything
		// else is written on the connection: k.raw is not set yet).
		var err error
		if ring, err = offerDumpRing(uc, c.shared); err != nil {
			c.log.Debug("dumps through the socket", "logger", k.logger, "why", err)
		}
	}
	k.conn = nc
	k.ring = ring
	k.placed = ring != nil && c.shared != nil
	k.ringAcks.Store(ring != nil)
	if k.raw = rawConnOf(nc); k.raw != nil {
		k.pollable.Store(true) // after k.raw: TakeDumpAcks reads it then
	}
	k.mu.Unlock()
	c.wg.Add(1)
	go c.readAcks(k, nc)
	// The dumps go out with their headers in vectored writes, straight
	// from their buffers (not copied into a buffered writer first).
	var heads []byte
	var bufs net.Buffers
	var bw *bufio.Writer // under TLS
	for {
		k.mu.Lock()
		k.writing = false
		for len(k.queue) == 0 && k.gone == nil {
			k.cond.Wait()
		}
		if k.gone != nil {
			k.mu.Unlock()
			return
		}
		batch := k.queue
		k.queue = nil
		k.writing = true
		k.mu.Unlock()
		heads = slices.Grow(heads[:0], dumpRingHeaderSize*len(batch))[:dumpRingHeaderSize*len(batch)]
		bufs = bufs[:0]
		for i := range batch {
			b := &batch[i]
			h := b.header(heads[i*dumpRingHeaderSize : (i+1)*dumpRingHeaderSize])
			// A dump the PE began to write goes on where it stopped.
			if b.sent < len(h) {
				bufs = append(bufs, h[b.sent:])
			}
			if p := b.Payload[max(b.sent-len(h), 0):]; len(p) > 0 {
				bufs = append(bufs, p)
			}
		}
		if err := writeBuffers(nc, bufs, &bw); err != nil { // consumes a copy of bufs
			c.lose(k, fmt.Errorf("launcher: dump to logger %d: %w", k.logger, err))
			return
		}
		clear(bufs)
		// Written: the PE fills the buffers again.
		for _, b := range batch {
			if !b.fetch && cap(b.Payload) > 0 {
				c.post(scheduler.DumpSent{Payload: b.Payload})
			}
		}
	}
}

// readAcks keeps k's acknowledgements for the PE and hands the answers
// to fetches to their callers, until the connection ends. On a raw
// connection it reads the socket as the PE's polls do, under k.rdMu, and
// waits in the netpoller when it is empty.
func (c *dumpClient) readAcks(k *dumpLink, nc net.Conn) {
	defer c.wg.Done()
	if raw := rawConnOf(nc); raw != nil {
		var err error
		rerr := raw.Read(func(fd uintptr) bool {
			k.rdMu.Lock()
			err = c.readRaw(k, fd, true)
			k.rdMu.Unlock()
			if err == nil && k.ringAcks.Load() {
				// About to wait: the logger's next acknowledgement
				// comes on the socket too (asked before the page is
				// read, so that none is missed).
				k.ring.askWake()
				c.ringAck(k, true)
			}
			return err != nil // else wait until the socket is readable
		})
		if err == nil {
			err = rerr
		}
		c.lose(k, fmt.Errorf("launcher: logger %d's dump connection ended: %w", k.logger, err))
		return
	}
	r := bufio.NewReader(nc)
	var a [dumpHeaderSize]byte
	for {
		if _, err := io.ReadFull(r, a[:1]); err != nil {
			c.lose(k, fmt.Errorf("launcher: logger %d's dump connection ended: %w", k.logger, err))
			return
		}
		size := dumpAckSize
		if a[0] == dumpKindData {
			size = dumpHeaderSize
		}
		if _, err := io.ReadFull(r, a[1:size]); err != nil {
			c.lose(k, fmt.Errorf("launcher: logger %d's dump connection ended: %w", k.logger, err))
			return
		}
		var payload []byte
		if a[0] == dumpKindData {
			n := binary.LittleEndian.Uint32(a[17:])
			if n > maxDump {
				c.lose(k, fmt.Errorf("launcher: logger %d sent %d bytes of entries", k.logger, n))
				return
			}
			payload = make([]byte, n)
			if _, err := io.ReadFull(r, payload); err != nil {
				c.lose(k, fmt.Errorf("launcher: logger %d's dump connection ended: %w", k.logger, err))
				return
			}
		}
		if err := c.frame(k, a[:size], payload, true); err != nil {
			c.lose(k, err)
			return
		}
	}
}

// readRaw reads what k's socket (fd) holds without waiting and takes
// the whole frames in it; notify: post DumpAcksPending for an
// acknowledgement (not for the PE's own polls). It returns io.EOF when
// the logger closed the connection, the first other error of a read or
// a frame. k.rdMu is held.
func (c *dumpClient) readRaw(k *dumpLink, fd uintptr, notify bool) error {
	for {
		n, err := k.inbox.fill(fd, 4<<10)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // empty: wait
		}
		for {
			avail := k.inbox.pending()
			if len(avail) == 0 {
				break
			}
			size := dumpAckSize
			if avail[0] == dumpKindData {
				size = dumpHeaderSize
			}
			if len(avail) < size {
				break
			}
			var payload []byte
			if avail[0] == dumpKindData {
				n := binary.LittleEndian.Uint32(avail[17:])
				if n > maxDump {
					return fmt.Errorf("launcher: logger %d sent %d bytes of entries", k.logger, n)
				}
				if len(avail) < size+int(n) {
					k.inbox.await(size + int(n))
					break
				}
				payload = append([]byte(nil), avail[size:size+int(n)]...)
				size += int(n)
			}
			k.inbox.take(size)
			if err := c.frame(k, avail[:min(size, dumpHeaderSize)], payload, notify); err != nil {
				return err
			}
		}
	}
}

// frame takes one frame from k's logger: h, its header (an
// acknowledgement's or, with the entries in payload, a fetch's answer's).
func (c *dumpClient) frame(k *dumpLink, h []byte, payload []byte, notify bool) error {
	switch h[0] {
	case dumpKindAck:
		if k.ringAcks.Load() {
			// A wake-up: the acknowledgement is the ring's.
			c.ringAck(k, notify)
			return nil
		}
		a := scheduler.DumpAcked{Logger: k.logger, Epoch: binary.LittleEndian.Uint64(h[1:]), To: int(binary.LittleEndian.Uint32(h[9:]))}
		k.mu.Lock()
		first := c.ackedLocked(k, a)
		k.mu.Unlock()
		if first && notify {
			c.post(scheduler.DumpAcksPending{})
		}
	case dumpKindData:
		k.mu.Lock()
		if len(k.fetches) == 0 {
			k.mu.Unlock()
			return fmt.Errorf("launcher: logger %d sent entries nobody asked for", k.logger)
		}
		reply := k.fetches[0]
		k.fetches = k.fetches[1:]
		k.mu.Unlock()
		reply <- fetchReply{from: int(binary.LittleEndian.Uint32(h[9:])), to: int(binary.LittleEndian.Uint32(h[13:])), payload: payload}
	default:
		return fmt.Errorf("launcher: logger %d sent a malformed acknowledgement (kind %d)", k.logger, h[0])
	}
	return nil
}

// ackedLocked keeps a, k's logger's acknowledgement, for the PE and
// reports whether it is the first kept since the PE last took them. k.mu
// is held.
func (c *dumpClient) ackedLocked(k *dumpLink, a scheduler.DumpAcked) (first bool) {
	if a.Epoch == k.lastEpoch && a.To >= k.lastTo {
		k.unacked.Store(false)
	}
	if a.Epoch > k.sockEpoch || (a.Epoch == k.sockEpoch && a.To >= k.sockTo) {
		k.sockUnacked = false
	}
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	if kept := c.acks[k.logger]; kept.To > 0 && (kept.Epoch > a.Epoch || (kept.Epoch == a.Epoch && kept.To >= a.To)) {
		// The logger's, behind the PE's own for the dumps it handed
		// over.
		return false
	}
	c.acks[k.logger] = a
	return !c.pending.Swap(true)
}

// ringAck takes the acknowledgement in k's ring if it is new; notify:
// post DumpAcksPending (as frame).
func (c *dumpClient) ringAck(k *dumpLink, notify bool) {
	k.mu.Lock()
	seq, epoch, to, ok := k.ring.ack()
	if !ok || seq == k.ringAckSeq {
		k.mu.Unlock()
		return
	}
	k.ringAckSeq = seq
	first := c.ackedLocked(k, scheduler.DumpAcked{Logger: k.logger, Epoch: epoch, To: to})
	k.mu.Unlock()
	if first && notify {
		c.post(scheduler.DumpAcksPending{})
	}
}

// TakeDumpAcks appends the acknowledgements received since the last
// call to into (scheduler.DumpAckSource), those of the loggers that owe
// this PE one read first: in the ring's first page on the logger's
// host, else on the socket.
func (c *dumpClient) TakeDumpAcks(into []scheduler.DumpAcked) []scheduler.DumpAcked {
	for _, k := range c.links {
		if !k.unacked.Load() {
			continue
		}
		if k.ringAcks.Load() {
			c.ringAck(k, false)
		} else if k.pollable.Load() {
			c.poll(k)
		}
	}
	if !c.pending.Load() {
		return into
	}
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	for l, a := range c.acks {
		if a.To > 0 {
			into = append(into, a)
			c.acks[l] = scheduler.DumpAcked{}
		}
	}
	c.pending.Store(false)
	return into
}

// poll reads k's socket on the PE goroutine when no one else does.
func (c *dumpClient) poll(k *dumpLink) {
	if !k.rdMu.TryLock() {
		return // the reader goroutine is at it
	}
	var err error
	cerr := k.raw.Control(func(fd uintptr) { err = c.readRaw(k, fd, false) })
	k.rdMu.Unlock()
	if err == nil {
		err = cerr
	}
	if err != nil {
		c.lose(k, fmt.Errorf("launcher: logger %d's dump connection ended: %w", k.logger, err))
	}
}

// dial opens and authenticates the connection to k's logger.
func (c *dumpClient) dial(k *dumpLink) (net.Conn, error) {
	return dialLoggerConn(c.ctx, dumpStream, k.addr, c.rank, k.logger, c.secret, c.tls)
}

// close stops every connection and goroutine.
func (c *dumpClient) close() {
	c.cancel()
	for _, k := range c.links {
		k.mu.Lock()
		if k.gone == nil {
			k.gone = errors.New("launcher: closed")
			close(k.lost)
		}
		k.cond.Broadcast()
		conn := k.conn
		k.mu.Unlock()
		// Closed outside k.mu: Close waits for the reads and writes
		// under way, which may be waiting for k.mu.
		if conn != nil {
			conn.Close()
		}
	}
	c.wg.Wait()
	c.shared.logStats(c.log)
	// The rings stay mapped (1 MiB each, as long as the process): the
	// PE goroutine may still be encoding a dump into one, which
	// unmapping would fault.
}
