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
		n, _ = writeSome(fd, b)
		return true // never wait
	})
	return n
}

// readNow reads into p what socket fd holds without waiting: 0 and no
// error when it holds nothing, io.EOF once the peer has closed its side.
func readNow(fd uintptr, p []byte) (int, error) {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return int(n), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, nil
		}
		return 0, errno
	}
}

// writevNow writes as much of a and then b as the socket takes without
// waiting, in one vectored write, and returns how much that was (as
// writeNow).
func writevNow(raw syscall.RawConn, a, b []byte) int {
	n := 0
	raw.Write(func(fd uintptr) bool {
		bufs := [2][]byte{a, b}
		n = writevAll(fd, bufs[:])
		return true // never wait
	})
	return n
}

// writevAll writes as much of bufs, in order, to socket fd as it takes
// without waiting, in vectored writes of up to 64 buffers, and returns
// how much that was.
func writevAll(fd uintptr, bufs [][]byte) int {
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	n := 0
	var iov [64]syscall.Iovec
	for n < total {
		// The iovecs of what is left, from byte n on.
		k, skip := 0, n
		for _, b := range bufs {
			if skip >= len(b) {
				skip -= len(b)
				continue
			}
			if k == len(iov) {
				break
			}
			iov[k] = syscall.Iovec{Base: &b[skip]}
			iov[k].SetLen(len(b) - skip)
			skip = 0
			k++
		}
		m, _, errno := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || m == 0 {
			break
		}
		n += int(m)
	}
	return n
}

// writeSome writes as much of b to socket fd as it takes without
// waiting: how much, and the error of a write that failed otherwise.
func writeSome(fd uintptr, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
		switch errno {
		case 0:
			if m == 0 {
				return n, nil
			}
			n += int(m)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return n, nil
		default:
			return n, errno
		}
	}
	return n, nil
}
