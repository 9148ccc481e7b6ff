package launcher

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// maxControlMessage bounds one control message (an output line, the setup).
const maxControlMessage = 16 << 20

// conn is a control connection: size-delimited protobuf messages over TCP,
// written under a lock so several goroutines may send.
type conn struct {
	raw net.Conn
	// sock is the socket under raw (raw itself without TLS): close closes
	// it, so that closing never waits to send TLS's close_notify to a
	// peer that does not read.
	sock net.Conn
	r    *bufio.Reader
	mu   struct {
		sync.Mutex
		w *bufio.Writer
	}
}

func newConn(raw net.Conn) *conn {
	c := &conn{raw: raw, sock: raw, r: bufio.NewReaderSize(raw, 64<<10)}
	if tc, ok := raw.(*tls.Conn); ok {
		c.sock = tc.NetConn()
	}
	c.mu.w = bufio.NewWriterSize(raw, 64<<10)
	return c
}

func (c *conn) send(m proto.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := protodelim.MarshalTo(c.mu.w, m); err != nil {
		return fmt.Errorf("launcher: send %T: %w", m, err)
	}
	return c.mu.w.Flush()
}

func (c *conn) recv(m proto.Message) error {
	err := protodelim.UnmarshalOptions{MaxSize: maxControlMessage}.UnmarshalFrom(c.r, m)
	if err == io.ErrUnexpectedEOF {
		return io.EOF
	}
	return err
}

func (c *conn) close() error { return c.sock.Close() }

// helloMAC proves knowledge of the job secret for a challenge nonce.
func helloMAC(secret, nonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("gochare-hello"))
	m.Write(nonce)
	return m.Sum(nil)
}
