package launcher

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
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
	r   *bufio.Reader
	mu  struct {
		sync.Mutex
		w *bufio.Writer
	}
}

func newConn(raw net.Conn) *conn {
	c := &conn{raw: raw, r: bufio.NewReaderSize(raw, 64<<10)}
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

func (c *conn) close() error { return c.raw.Close() }

// helloMAC proves knowledge of the job secret for a challenge nonce.
func helloMAC(secret, nonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("gochare-hello"))
	m.Write(nonce)
	return m.Sum(nil)
}
