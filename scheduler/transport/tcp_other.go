//go:build !linux

package transport

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// localPEAddr is "" on this system: PEs on one host connect over TCP.
func localPEAddr(string) string { return "" }

var errNoUnixPeer = errors.New("transport: no Unix socket peers on this system")

func unixPeer(net.Conn) (pid, uid int, err error) { return 0, 0, errNoUnixPeer }

// UnixPeerUser fails on this system, which has no Unix socket between PEs.
func UnixPeerUser(net.Conn) error { return errNoUnixPeer }

// directWriter writes nothing on the loop's goroutine on this system:
// the connection's writer writes everything.
type directWriter struct{}

func (d *directWriter) write(_ syscall.RawConn, bufs net.Buffers) (net.Buffers, error) {
	return bufs, nil
}

// newRawReader returns nil on this system: the reader reads through
// net.Conn.
func newRawReader(syscall.RawConn, *spinner) io.Reader { return nil }
