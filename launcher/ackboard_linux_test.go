package launcher

import (
	"errors"
	"log/slog"
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
	pe, logger := unixPair(t)
	require.NoError(t, board.offer(logger))
	view, err := takeAckBoard(pe)
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
	require.NoError(t, (*ackBoard)(nil).offer(logger))
	none, err := takeAckBoard(pe)
	require.NoError(t, err)
	require.Nil(t, none)
}

// A logger that stops between the handshake and its board frame: the
// PE's stream waits for the frame, and the logger's loss (declared by
// the launcher) and the PE's close end the wait.
func TestAckBoardNeverSent(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer tcp.Close()
	local, err := net.Listen("unix", localLoggerAddr(tcp.Addr().String()))
	require.NoError(t, err)
	defer local.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := local.Accept()
		if err != nil {
			return
		}
		c, _, _, err := acceptLoggerConn(nc, nil, secret, 0, 2, eventLogStream)
		if err != nil {
			nc.Close()
			return
		}
		accepted <- c // and never a board frame
	}()
	var got posted
	c := newEventLogClient(1, []string{tcp.Addr().String()}, secret, nil, got.post, slog.New(slog.DiscardHandler))
	fake := <-accepted
	defer fake.Close()
	c.Log(logging.EventLogBatch{Logger: 0, Epoch: 1, Creator: 1, Determinants: []logging.Determinant{{Receiver: 3, RSN: 1, Creator: 1, Seq: 1}}})
	k := c.links[0]
	waitFor(t, "the stream open, waiting for the board", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.conn != nil
	})
	c.loseLogger(0, errors.New("declared dead"))
	waitFor(t, "the loss of the logger", func() bool { return len(lostOf(&got)) > 0 })
	closed := make(chan struct{})
	go func() {
		c.close()
		close(closed)
	}()
	<-closed
	require.Nil(t, c.links[0].board.Load())
}
