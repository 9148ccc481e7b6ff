package launcher

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/scheduler/transport/transporttest"
)

func init() { transporttest.Squat() }

// A PE sends nothing to a process of another user that took its logger's
// Unix socket name first (it could relay the handshake to the logger and
// read the stream): it reaches the logger over TCP.
func TestLoggerConnSkipsAnotherUsersSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	squatter := transporttest.StartSquatter(t, localLoggerAddr(ln.Addr().String()))
	secret := []byte("0123456789abcdef0123456789abcdef")
	accepted := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			accepted <- err
			return
		}
		c, pe, _, err := acceptLoggerConn(nc, nil, secret, 0, 3, eventLogStream)
		if err == nil {
			c.Close()
			if pe != 2 {
				err = fmt.Errorf("the logger took the stream for PE %d's, want PE 2's", pe)
			}
		}
		accepted <- err
	}()
	nc, err := dialLoggerConn(context.Background(), eventLogStream, ln.Addr().String(), 2, 0, secret, nil)
	require.NoError(t, err)
	defer nc.Close()
	require.IsType(t, (*net.TCPConn)(nil), nc, "the stream goes over TCP")
	require.NoError(t, <-accepted)
	require.Zero(t, squatter.Read(t), "the squatter read nothing")
}
