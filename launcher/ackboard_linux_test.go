package launcher

import (
	"crypto/rand"
	"net"
	"sync"
	"testing"

	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
)

// A PE's view of a logger's board, handed over a Unix socket, takes
// each creator's acknowledgements as the logger publishes them, never a
// torn one (an epoch with another epoch's up-to), and ends with the
// latest of each.
func TestAckBoard(t *testing.T) {
	const creators = 5
	board, err := newAckBoard(creators)
	require.NoError(t, err)
	a, b, err := unixPair()
	require.NoError(t, err)
	defer a.Close()
	defer b.Close()
	require.NoError(t, board.offer(a))
	view, err := takeAckBoard(b)
	require.NoError(t, err)
	require.NotNil(t, view)
	require.Empty(t, view.take(3, nil), "nothing published yet")

	// The logger's writes are serialized by its lock.
	var mu sync.Mutex
	const rounds = 20000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range uint64(rounds) {
			epoch := 1 + i/1000
			mu.Lock()
			board.publish(logging.EventLogAck{Logger: 3, Epoch: epoch, Creator: logging.PEID(i % creators), UpTo: epoch*1_000_000 + i})
			mu.Unlock()
		}
	}()
	latest := map[logging.PEID]logging.EventLogAck{}
	check := func(acks []logging.EventLogAck) {
		for _, ack := range acks {
			require.Equal(t, 3, ack.Logger)
			require.Equal(t, ack.Epoch, ack.UpTo/1_000_000, "a torn read: %+v", ack)
			if cur, ok := latest[ack.Creator]; ok {
				require.Greater(t, ack.UpTo, cur.UpTo, "taken again or out of order")
			}
			latest[ack.Creator] = ack
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		check(view.take(3, nil))
	}
	check(view.take(3, nil))
	for c := range uint64(creators) {
		last := uint64(rounds) - creators + c
		epoch := 1 + last/1000
		require.Equal(t, logging.EventLogAck{Logger: 3, Epoch: epoch, Creator: logging.PEID(c), UpTo: epoch*1_000_000 + last}, latest[logging.PEID(c)])
	}
	require.Empty(t, view.take(3, nil), "taken once")

	// A logger without a board says so: the PE reads reply frames.
	require.NoError(t, (*ackBoard)(nil).offer(a))
	none, err := takeAckBoard(b)
	require.NoError(t, err)
	require.Nil(t, none)
}

// unixPair returns the two ends of a Unix stream connection.
func unixPair() (*net.UnixConn, *net.UnixConn, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@gochare-ackboard-test-" + rand.Text(), Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	a, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		return nil, nil, err
	}
	b, ok := <-accepted
	if !ok {
		a.Close()
		return nil, nil, net.ErrClosed
	}
	return b, a, nil
}
