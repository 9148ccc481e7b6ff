//go:build !linux

package transport

import (
	"io"
	"net"
	"syscall"
)

// directWriter writes nothing on the loop's goroutine on this system:
// the connection's writer writes everything.
type directWriter struct{}

func (d *directWriter) write(_ syscall.RawConn, bufs net.Buffers) (net.Buffers, error) {
	return bufs, nil
}

// newRawReader returns nil on this system: the reader reads through
// net.Conn.
func newRawReader(syscall.RawConn, *spinner) io.Reader { return nil }
