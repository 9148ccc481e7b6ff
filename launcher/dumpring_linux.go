package launcher

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dumpRing is memory a PE shares with a logger on its host for its dumps
// (a sealed memfd the PE makes and hands over on the Unix socket, in a
// frame of kind dumpKindRingOffer): the PE copies a dump's entries into
// it and sends only the header (kind dumpKindRing, with the ring's
// position after the entries), and the logger copies them out into its
// store and marks them consumed. Through the socket the same bytes cost
// a copy into the kernel on the PE and one out of it in the logger, each
// with its socket buffers (LeanMD at a tenth of its peak: about 40 ms of
// CPU a run on each side for 90 MB).
//
// The first page holds the count of bytes the logger has consumed
// (written by the logger, read by the PE, atomically) and the logger's
// acknowledgements (publishAck, ack, askWake below); the entries go in
// the rest, one after the other, each contiguous (a dump that does not
// fit before the end starts again at the beginning, the end skipped).
// Positions count from the ring's start and only grow. A dump the ring
// has no room for goes through the socket as before.
type dumpRing struct {
	mem  []byte
	data []byte
	// head is the PE's position after the last dump it placed.
	head uint64
}

const (
	// dumpRingSize is the size of a PE's ring (mapped by both): the
	// logger copies each dump out as soon as it reads its header, so
	// the ring holds little more than the dumps on their way.
	dumpRingSize = dumpRingData + 1<<20
	dumpRingData = 4096
	// maxDumpRing bounds the ring a logger accepts.
	maxDumpRing = 64 << 20
)

// The words of the ring's first page (offsets in bytes).
const (
	ringConsumed = 0
	// The latest acknowledgement, under a sequence count (a seqlock
	// with one writer, the logger): odd while the logger writes it,
	// zero before the first.
	ringAckSeq   = 8
	ringAckEpoch = 16
	ringAckTo    = 24
	// ringWake is set by a PE that waits for an acknowledgement and
	// cleared by the logger, which then writes one on the socket too.
	ringWake = 32
	// ringAckTries bounds a PE's reads of an acknowledgement the logger
	// is writing (a logger that died meanwhile leaves it half written;
	// the socket's end tells the PE).
	ringAckTries = 64
)

func (r *dumpRing) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }

func (r *dumpRing) consumed() *uint64 { return r.word(ringConsumed) }

// view returns the len bytes before position end in the ring, where a
// placed dump lies, without consuming them (logger: consume once its
// payloads are copied out of the shared log too).
func (r *dumpRing) view(n int, end uint64) ([]byte, error) {
	d := uint64(len(r.data))
	if n <= 0 || end < uint64(n) || (end-uint64(n))%d+uint64(n) > d {
		return nil, fmt.Errorf("%d bytes before ring position %d: not in a ring of %d", n, end, d)
	}
	p := (end - uint64(n)) % d
	return r.data[p : p+uint64(n) : p+uint64(n)], nil
}

// consume marks the ring consumed up to position end (logger).
func (r *dumpRing) consume(end uint64) {
	if end > atomic.LoadUint64(r.consumed()) {
		atomic.StoreUint64(r.consumed(), end)
	}
}

// publishAck makes the acknowledgement (epoch, to) the latest in the
// ring's first page (logger) and reports whether the PE asked to be
// woken (askWake): the logger then writes an acknowledgement on the
// socket too, which the PE's reader goroutine, parked in the netpoller,
// waits for. A PE that works between slices reads the page instead
// (ack: an atomic load, where a read of the socket was a system call),
// and the logger writes to the socket only for a PE that waits.
//
// The PE stores its wake flag before it reads the acknowledgement, the
// logger stores the acknowledgement before it takes the flag (both
// sequentially consistent): either the PE sees the acknowledgement or
// the logger sees the flag.
func (r *dumpRing) publishAck(epoch uint64, to int) (wake bool) {
	seq := atomic.LoadUint64(r.word(ringAckSeq))
	atomic.StoreUint64(r.word(ringAckSeq), seq+1)
	atomic.StoreUint64(r.word(ringAckEpoch), epoch)
	atomic.StoreUint64(r.word(ringAckTo), uint64(to))
	atomic.StoreUint64(r.word(ringAckSeq), seq+2)
	return atomic.SwapUint64(r.word(ringWake), 0) != 0
}

// ack returns the latest acknowledgement the logger published and its
// sequence count (PE); false if there is none, or none could be read
// whole.
func (r *dumpRing) ack() (seq, epoch uint64, to int, ok bool) {
	if r == nil {
		return 0, 0, 0, false
	}
	for range ringAckTries {
		seq = atomic.LoadUint64(r.word(ringAckSeq))
		if seq == 0 {
			return 0, 0, 0, false
		}
		if seq%2 != 0 {
			continue
		}
		epoch = atomic.LoadUint64(r.word(ringAckEpoch))
		to64 := atomic.LoadUint64(r.word(ringAckTo))
		if atomic.LoadUint64(r.word(ringAckSeq)) == seq {
			if to64 > 1<<31 {
				return 0, 0, 0, false // not a logger's
			}
			return seq, epoch, int(to64), true
		}
	}
	return 0, 0, 0, false
}

// askWake asks the logger to write its next acknowledgement on the
// socket too (PE, before it waits there).
func (r *dumpRing) askWake() { atomic.StoreUint64(r.word(ringWake), 1) }

// offerDumpRing makes a PE's ring and hands it to the logger on uc
// (before anything else is written on it), with the log memory shared
// if any (its size in the offer's epoch field, its descriptor after the
// ring's).
func offerDumpRing(uc *net.UnixConn, shared *sharedLog) (*dumpRing, error) {
	fd, err := unix.MemfdCreate("gochare-dumps", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, dumpRingSize); err != nil {
		return nil, err
	}
	// Sealed, so that the logger can trust its size: a file that
	// shrank under its mapping would fault the logger.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return nil, err
	}
	// Populated at once (both sides): faulted in page by page, the
	// ring's 257 pages cost each process as many page faults, about
	// 2,000 a LeanMD run with four PEs.
	mem, err := unix.Mmap(fd, 0, dumpRingSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	var h [dumpHeaderSize]byte
	h[0] = dumpKindRingOffer
	binary.LittleEndian.PutUint32(h[17:], dumpRingSize)
	fds := []int{fd}
	if shared != nil {
		binary.LittleEndian.PutUint64(h[1:], uint64(len(shared.mem)))
		fds = append(fds, shared.fd)
	}
	if _, _, err := uc.WriteMsgUnix(h[:], unix.UnixRights(fds...), nil); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return &dumpRing{mem: mem, data: mem[dumpRingData:]}, nil
}

// alloc places n bytes in the ring: where, and the position after them;
// false when the ring has not that much free (or r is nil).
func (r *dumpRing) alloc(n int) ([]byte, uint64, bool) {
	if r == nil {
		return nil, 0, false
	}
	d := uint64(len(r.data))
	if n <= 0 || uint64(n) >= d {
		return nil, 0, false
	}
	head := r.head
	p := head % d
	if p+uint64(n) > d {
		head += d - p
		p = 0
	}
	if head+uint64(n)-atomic.LoadUint64(r.consumed()) > d {
		return nil, 0, false
	}
	r.head = head + uint64(n)
	return r.data[p : p+uint64(n)], r.head, true
}

// position returns the position after b, which alloc placed (possibly
// longer, b's start its start) and no logger consumed yet; false if b
// is not in the ring (or r is nil). Such a place starts less than the ring's size
// before the head (what is placed and not consumed fits in the ring, and
// nothing fills all of it), so its offset tells its position.
func (r *dumpRing) position(b []byte) (uint64, bool) {
	if r == nil || len(b) == 0 || len(r.data) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(r.data)))
	d := uint64(len(r.data))
	if off >= uintptr(d) || uint64(off)+uint64(len(b)) > d {
		return 0, false
	}
	back := (r.head - uint64(off)) % d
	if back == 0 {
		back = d
	}
	return r.head - back + uint64(len(b)), true
}

// take copies the len(dst) bytes before position end out of the ring
// into dst, and marks them consumed (logger; the PE places its dumps in
// the order it sends them, so the position only grows).
func (r *dumpRing) take(dst []byte, end uint64) error {
	d, n := uint64(len(r.data)), uint64(len(dst))
	if n == 0 || end < n || (end-n)%d+n > d {
		return fmt.Errorf("%d bytes before ring position %d: not in a ring of %d", n, end, d)
	}
	p := (end - n) % d
	copy(dst, r.data[p:p+n])
	if end > atomic.LoadUint64(r.consumed()) {
		atomic.StoreUint64(r.consumed(), end)
	}
	return nil
}

func (r *dumpRing) unmap() {
	if r != nil && r.mem != nil {
		unix.Munmap(r.mem)
		r.mem, r.data = nil, nil
	}
}

// acceptDumpRing maps the ring a PE offered (size bytes, its descriptor
// the one rd received with the offer), after checking that the file is
// sealed at that size.
func acceptDumpRing(rd *rightsReader, size int) (*dumpRing, error) {
	mem, err := rd.mapSealed("a ring", size, dumpRingData+1, maxDumpRing, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	return &dumpRing{mem: mem, data: mem[dumpRingData:]}, nil
}

// mapSealed maps the next descriptor rd received, memory a PE offered
// (what, for the errors), after checking that its size is within
// [least, most] and that the file is sealed at the size announced: the
// PE can neither shrink it under the mapping (a fault) nor grow it.
func (rd *rightsReader) mapSealed(what string, size, least, most, prot, flags int) ([]byte, error) {
	if len(rd.fds) == 0 {
		return nil, fmt.Errorf("%s offered without its descriptor", what)
	}
	fd := rd.fds[0]
	rd.fds = rd.fds[1:]
	defer unix.Close(fd)
	if size < least || size > most {
		return nil, fmt.Errorf("%s of %d bytes", what, size)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&(unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL) != unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL {
		return nil, fmt.Errorf("%s not sealed (seals %#x, %v)", what, seals, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != int64(size) {
		return nil, fmt.Errorf("%s of %d bytes announced as %d (%v)", what, st.Size, size, err)
	}
	return unix.Mmap(fd, 0, size, prot, flags)
}

// rightsReader reads a Unix connection and keeps the descriptors
// that come with its bytes (a dump ring offered by a PE, the event
// logger's acknowledgement board).
type rightsReader struct {
	uc  *net.UnixConn
	oob []byte
	fds []int
}

func newRightsReader(uc *net.UnixConn) *rightsReader {
	return &rightsReader{uc: uc, oob: make([]byte, unix.CmsgSpace(4*4))}
}

func (r *rightsReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := r.uc.ReadMsgUnix(p, r.oob)
	n, oobn = max(n, 0), max(oobn, 0) // -1 with an error
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(r.oob[:oobn])
		for i := range msgs {
			if perr != nil {
				break
			}
			fds, ferr := unix.ParseUnixRights(&msgs[i])
			if ferr == nil {
				r.fds = append(r.fds, fds...)
			}
		}
	}
	return n, err
}

// close closes the descriptors received and not taken.
func (r *rightsReader) close() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
}
