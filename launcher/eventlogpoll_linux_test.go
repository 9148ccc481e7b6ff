package launcher

import (
	"io"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// A PE reads its logger's socket itself (readRaw, as its polls between
// handlers do): frames cut anywhere across reads are taken whole, once,
// in order; a frame larger than the buffer grows it; a frame of
// acknowledgements ends the wait for a reply; the PE's own poll posts no
// EventLogAcksPending; the logger's close is io.EOF.
func TestEventLogReadRaw(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
	require.NoError(t, err)
	peEnd, loggerEnd := fds[0], fds[1]
	defer syscall.Close(peEnd)

	var got posted
	c := &eventLogClient{rank: 2, post: got.post, acks: map[elAckKey]logging.EventLogAck{}}
	k := &elLink{logger: 1, fetches: 1}
	k.awaiting.Store(true)

	var w elWriter
	at := w.begin(elKindAcks)
	w.u32(2)
	for _, a := range []logging.EventLogAck{{Epoch: 3, Creator: 0, UpTo: 10}, {Epoch: 3, Creator: 2, UpTo: 7}} {
		w.u64(a.Epoch)
		w.u32(uint32(a.Creator))
		w.u64(a.UpTo)
	}
	w.end(at)
	acks := len(w.b)
	// An answer of 40,000 records: larger than the 16 KiB buffer.
	dets := make([]logging.Determinant, 1000)
	for i := range dets {
		dets[i] = logging.Determinant{Receiver: 5, RSN: uint64(i + 1), Creator: 0, Seq: uint64(i + 1)}
	}
	at = w.begin(elKindAnswer)
	w.u32(9)
	w.u32(1)
	w.u64(5)
	w.records(dets, nil)
	w.end(at)
	stream := w.b
	require.Greater(t, len(stream)-acks, 16<<10)

	send := func(b []byte) {
		for len(b) > 0 {
			n, err := syscall.Write(loggerEnd, b)
			require.NoError(t, err)
			b = b[n:]
		}
	}
	read := func() {
		t.Helper()
		require.NoError(t, c.readRaw(k, uintptr(peEnd), false))
	}
	read() // nothing yet
	send(stream[:3])
	read()
	require.Empty(t, c.TakeAcks(nil), "half a header")
	send(stream[3 : acks-1])
	read()
	require.Empty(t, c.TakeAcks(nil), "a frame less a byte")
	require.True(t, k.awaiting.Load())
	send(stream[acks-1 : acks+100])
	read()
	require.ElementsMatch(t, []logging.EventLogAck{{Logger: 1, Epoch: 3, Creator: 0, UpTo: 10}, {Logger: 1, Epoch: 3, Creator: 2, UpTo: 7}}, c.TakeAcks(nil))
	require.False(t, k.awaiting.Load(), "the reply came")
	require.Empty(t, got.all(), "the PE took them itself: no event")
	send(stream[acks+100 : len(stream)-1])
	read()
	require.Empty(t, got.all(), "the answer less a byte")
	send(stream[len(stream)-1:])
	read()
	evs := got.all()
	require.Len(t, evs, 1)
	ans := evs[0].(scheduler.EventLogAnswer)
	require.Len(t, ans.Envelopes, 1)
	require.Equal(t, uint32(9), ans.Envelopes[0].Epoch)
	require.Equal(t, dets, ans.Envelopes[0].Determinants)

	require.NoError(t, syscall.Close(loggerEnd))
	require.ErrorIs(t, c.readRaw(k, uintptr(peEnd), false), io.EOF)
}
