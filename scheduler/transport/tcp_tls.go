package transport

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
)

// TLS on the TCP endpoint (Config.TLS).
//
// tls.Conn encrypts on Write and writes each record to the connection
// under it at once, blocking as long as the socket does. The loop must
// never block on a peer, yet a frame should go out on the loop's goroutine
// (not wait for the writer goroutine to be woken), as it does without TLS.
// So the connection under tls.Conn is a sealedConn: during the handshake
// it writes through to the socket; after it, a Write only appends the
// records to a buffer. Whoever writes frames (the loop when the writer is
// idle, else the writer, never both) writes them through tls.Conn, which
// seals them into that buffer, takes the buffer and writes it to the
// socket: the loop with one non-blocking writev (what the socket does not
// take goes to the writer as ciphertext), the writer blocking. Frames are
// released once sealed: nothing refers to them after tls.Conn's Write.

// sealedConn is the connection under a tls.Conn of the endpoint.
type sealedConn struct {
	net.Conn // the socket
	mu       struct {
		sync.Mutex
		gather bool
		buf    []byte
	}
}

// Write writes p to the socket during the handshake, and after it appends
// p (a sealed record) to the buffer. The read side of tls.Conn may write
// too (an alert): the lock orders it with the rest.
func (s *sealedConn) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.mu.gather {
		s.mu.buf = append(s.mu.buf, p...)
		s.mu.Unlock()
		return len(p), nil
	}
	s.mu.Unlock()
	return s.Conn.Write(p)
}

// startGathering ends the write-through of the handshake.
func (s *sealedConn) startGathering() {
	s.mu.Lock()
	s.mu.gather = true
	s.mu.Unlock()
}

// take returns what was sealed since the last take and keeps spare (if
// not too large) for what comes next.
func (s *sealedConn) take(spare []byte) []byte {
	if cap(spare) > maxSpareSealed {
		spare = nil
	}
	s.mu.Lock()
	b := s.mu.buf
	s.mu.buf = spare[:0]
	s.mu.Unlock()
	return b
}

// buffered is how many sealed bytes wait to be taken.
func (s *sealedConn) buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.buf)
}

const (
	// tlsPlainBuffer gathers a write's frames before tls.Conn seals them
	// (each of its Writes makes at least one record): four records of
	// the most plaintext one holds.
	tlsPlainBuffer = 64 << 10
	// sealedFlush is how much the writer lets the sealed buffer hold
	// before it writes it out, in a write of many frames.
	sealedFlush = 256 << 10
	// maxSpareSealed bounds the sealed buffer kept between writes.
	maxSpareSealed = 2 << 20
)

// tlsClient and tlsServer wrap a socket for the handshake of each side.
func tlsClient(nc net.Conn, cfg *tls.Config) *tls.Conn {
	return tls.Client(&sealedConn{Conn: nc}, cfg)
}

func tlsServer(nc net.Conn, cfg *tls.Config) *tls.Conn {
	return tls.Server(&sealedConn{Conn: nc}, cfg)
}

// tlsState is a TLS connection's part of a tcpConn.
type tlsState struct {
	conn   *tls.Conn
	sealed *sealedConn
	// plain gathers frames for conn; used by whoever writes (loop or
	// writer, never both at once), empty between writes.
	plain *bufio.Writer
	spare []byte // the loop's last sealed buffer, written out
	// writerSpare is the writer's.
	writerSpare []byte
}

// newTLSState sets up a connection whose handshake is done.
func newTLSState(tc *tls.Conn) *tlsState {
	s := tc.NetConn().(*sealedConn)
	s.startGathering()
	return &tlsState{conn: tc, sealed: s, plain: bufio.NewWriterSize(tc, tlsPlainBuffer)}
}

// seal writes bufs through the TLS connection into the sealed buffer;
// with drain, it calls drain, which writes the sealed bytes out, whenever
// they exceed sealedFlush.
func (t *tlsState) seal(bufs net.Buffers, drain func() error) error {
	for _, b := range bufs {
		if _, err := t.plain.Write(b); err != nil {
			return err
		}
		if drain != nil && t.sealed.buffered() >= sealedFlush {
			if err := drain(); err != nil {
				return err
			}
		}
	}
	return t.plain.Flush()
}
