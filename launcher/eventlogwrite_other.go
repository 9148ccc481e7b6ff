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

// readNow is not called on this system (rawConnOf gives no socket).
func readNow(uintptr, []byte) (int, error) { return 0, io.EOF }

func writevNow(syscall.RawConn, []byte, []byte) int { return 0 }

// writeSome is not called on this system (rawConnOf gives no socket).
func writeSome(uintptr, []byte) (int, error) { return 0, nil }
