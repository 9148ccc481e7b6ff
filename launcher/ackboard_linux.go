package launcher

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newAckBoard makes a board for creators creators in a memory file
// (memfd) the logger maps writable and hands to the PEs of its host.
func newAckBoard(creators int) (*ackBoard, error) {
	fd, err := unix.MemfdCreate("gochare-event-log-acks", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("launcher: acknowledgement board: %w", err)
	}
	size := ackBoardBytes(creators)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("launcher: acknowledgement board: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("launcher: acknowledgement board: %w", err)
	}
	b := &ackBoard{creators: creators, fd: fd, words: boardWords(mem, creators)}
	runtime.AddCleanup(b, func(r boardRelease) { unix.Munmap(r.mem); unix.Close(r.fd) }, boardRelease{mem: mem, fd: fd})
	return b, nil
}

type boardRelease struct {
	mem []byte
	fd  int
}

// boardWords are the words of a board's memory.
func boardWords(mem []byte, creators int) []atomic.Uint64 {
	return unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(&mem[0])), 1+2*creators)
}

// offer sends the board's memory file to the PE at the other end of uc,
// in the board frame (with no file when b is nil: the PE reads the
// replies then).
func (b *ackBoard) offer(uc *net.UnixConn) error {
	var w elWriter
	at := w.begin(elKindBoard)
	var oob []byte
	if b != nil {
		w.u32(uint32(b.creators))
		oob = unix.UnixRights(b.fd)
	} else {
		w.u32(0)
	}
	w.end(at)
	_, _, err := uc.WriteMsgUnix(w.b, oob, nil)
	return err
}

// takeAckBoard reads the board frame a logger sends first on a Unix
// connection, and maps the board it carries read-only (nil: none).
func takeAckBoard(uc *net.UnixConn) (*ackView, error) {
	rd := newRightsReader(uc)
	defer rd.close() // the board stays mapped
	var frame [elHeaderSize + 4]byte
	if _, err := io.ReadFull(rd, frame[:]); err != nil {
		return nil, err
	}
	fd := -1
	if len(rd.fds) > 0 {
		fd = rd.fds[0]
	}
	fr := elReader{b: frame[elHeaderSize:]}
	creators := int(fr.u32())
	if frame[0] != elKindBoard || uint32(creators) > 1<<24 {
		return nil, fmt.Errorf("%w: no board frame first", errEventLogFrame)
	}
	if creators == 0 || fd < 0 {
		return nil, nil
	}
	mem, err := unix.Mmap(fd, 0, ackBoardBytes(creators), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("launcher: acknowledgement board: %w", err)
	}
	v := &ackView{words: boardWords(mem, creators), last: make([]boardEntry, creators), scratch: make([]boardEntry, creators)}
	runtime.AddCleanup(v, func(mem []byte) { unix.Munmap(mem) }, mem)
	return v, nil
}
