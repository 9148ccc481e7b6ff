package launcher

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawConnOf returns the socket of a plain TCP or Unix connection, nil for
// any other (TLS).
func rawConnOf(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNow writes as much of b as the socket takes without waiting (the
// socket is non-blocking) and returns how much that was; an error leaves
// the rest to a blocking write, which reports it. A write that cannot
// block is made with RawSyscall, as the transport's (scheduler/transport,
// tcp_linux.go): without the runtime's bookkeeping for a call that may
// block.
func writeNow(raw syscall.RawConn, b []byte) int {
	n := 0
	raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			if errno == syscall.EINTR {
				continue
			}
			if errno != 0 || m == 0 {
				break
			}
			n += int(m)
		}
		return true // never wait
	})
	return n
}

// rawReader reads a plain socket as net.Conn.Read does, with the read
// made by RawSyscall (as the transport's rawReader, without its spin):
// a read of a non-blocking socket does not block, and skips the
// runtime's bookkeeping for one that may (which wakes the runtime's
// monitor thread on an idle process, as a logger mostly is). An empty
// socket waits in the netpoller.
type rawReader struct {
	raw   syscall.RawConn
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// readerOf returns a rawReader of nc's socket, or nc itself when it has
// none (TLS).
func readerOf(nc net.Conn) io.Reader {
	raw := rawConnOf(nc)
	if raw == nil {
		return nc
	}
	r := &rawReader{raw: raw}
	r.fn = func(fd uintptr) bool {
		for {
			n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.p[0])), uintptr(len(r.p)))
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until the socket is readable
			}
			r.n, r.errno = int(n), errno
			return true
		}
	}
	return r
}

// Read reads into p what the socket has, waiting for at least one byte;
// io.EOF once the peer has closed its side.
func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.raw.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.errno != 0:
		return 0, r.errno
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}
