//go:build !linux

package launcher

import (
	"io"
	"net"
	"syscall"
)

// rawConnOf returns nil on this system: the link's writer writes
// everything.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

func writeNow(syscall.RawConn, []byte) int { return 0 }

// readerOf returns nc on this system.
func readerOf(nc net.Conn) io.Reader { return nc }
