//go:build unix

package launcher

import (
	"net"
	"syscall"
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
// the rest to a blocking write, which reports it.
func writeNow(raw syscall.RawConn, b []byte) int {
	n := 0
	raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true // never wait
	})
	return n
}
