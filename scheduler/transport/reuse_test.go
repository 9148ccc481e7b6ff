package transport

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// reuseCores is two cores wired to each other by hand: frames from 0 to 1
// are kept in sent until passed on.
func reuseCores(t *testing.T) (a, b *core, sent *[]frame, got *[][]byte) {
	cc := coreConfig{size: 2, maxFrame: 1 << 20, window: 8 << 20, maxPayload: 8 << 20, resendTicks: 1000, ackFrames: 1000, ackBytes: 1 << 30}
	a = newCore(cc, &counters{}, slog.New(slog.DiscardHandler))
	cc.rank = 1
	b = newCore(cc, &counters{}, slog.New(slog.DiscardHandler))
	sent, got = new([]frame), new([][]byte)
	a.transmit = func(_ int, f frame) { *sent = append(*sent, f) }
	a.deliver = func(int, []byte) {}
	a.reusable = func() bool { return true }
	b.transmit = func(_ int, f frame) { require.NoError(t, a.receive(f)) }
	b.deliver = func(_ int, p []byte) { *got = append(*got, p) }
	return a, b, sent, got
}

// A frame's memory, once acknowledged, serves the next frame of its size,
// even when smaller frames were acknowledged after it: a stream of equal
// batches with small ones between them is sent from the same memory.
func TestCoreReusesLargeFramesPastSmallOnes(t *testing.T) {
	a, b, sent, _ := reuseCores(t)
	exchange := func(size int) *byte {
		*sent = (*sent)[:0]
		a.sendParts(1, bytes.Repeat([]byte{byte(size)}, size), nil)
		a.flush()
		require.Len(t, *sent, 1)
		first := &(*sent)[0].Data[0]
		for _, f := range *sent {
			require.NoError(t, b.receive(f))
		}
		b.flushAllAcks() // acknowledges, and a takes the frame back
		return first
	}
	big := exchange(200 << 10)
	for range 6 {
		exchange(100) // small frames, more than maxSpare of them
	}
	require.Same(t, big, exchange(200<<10), "the large frame's memory is reused")
}

// A payload that is all its frame holds is reported as such while it is
// delivered (takeAlone), once; one that shares its frame is not.
func TestCoreTakeAlone(t *testing.T) {
	a, b, sent, _ := reuseCores(t)
	var alone [][]byte
	b.deliver = func(_ int, p []byte) { alone = append(alone, b.takeAlone(p), b.takeAlone(p)) }
	a.sendParts(1, bytes.Repeat([]byte{1}, 5000), nil)
	a.flush()
	a.sendParts(1, bytes.Repeat([]byte{2}, 300), nil)
	a.sendParts(1, bytes.Repeat([]byte{3}, 300), nil)
	a.flush()
	require.Len(t, *sent, 2)
	for _, f := range *sent {
		require.NoError(t, b.receive(f))
	}
	require.Len(t, alone, 6)
	n, h := binary.Uvarint((*sent)[0].Data)
	require.EqualValues(t, 5000, n)
	require.Same(t, &(*sent)[0].Data[0], &alone[0][0], "the first frame's data")
	require.Len(t, alone[0], 5000+h)
	require.Nil(t, alone[1], "taken once")
	for _, a := range alone[2:] {
		require.Nil(t, a, "two payloads share the second frame")
	}
}

// recycleHandler checks each payload it receives, then gives its memory
// back (TCP.Recycle) from Receive, and reports where it was.
type recycleHandler struct {
	ep   *TCP
	size int
	n    int
	at   chan *byte
	err  chan error
}

func (h *recycleHandler) Receive(from int, payload []byte) {
	if err := CheckTestPayload(from, h.n, h.size, payload); err != nil {
		h.err <- err
		return
	}
	h.n++
	h.ep.Recycle(payload)
	h.at <- &payload[0]
}
func (h *recycleHandler) Event(ev any) { ev.(func())() }

// A big frame that holds one payload, given back by the handler while it
// receives it, is the memory the next frame of its size is read into: a
// stream of equal payloads (a stencil's batches) arrives in the same
// buffer, intact each time.
func TestTCPRecycledFrameIsReadIntoAgain(t *testing.T) {
	const size = 200 << 10
	var eps [2]*TCP
	var addrs []string
	for r := range eps {
		ep, err := NewTCP(Config{Rank: r, Size: 2, Secret: []byte("s")})
		require.NoError(t, err)
		t.Cleanup(func() { ep.Close() })
		eps[r] = ep
		addrs = append(addrs, ep.Addr())
	}
	h := &recycleHandler{ep: eps[1], size: size, at: make(chan *byte, 1), err: make(chan error, 1)}
	require.NoError(t, eps[0].Start(addrs, &recycleHandler{ep: eps[0], at: make(chan *byte, 1), err: make(chan error, 1)}))
	require.NoError(t, eps[1].Start(addrs, h))
	var at []*byte
	for i := range 8 {
		p := MakeTestPayload(0, i, size)
		eps[0].Post(func() {
			eps[0].Send(1, p)
			eps[0].Flush()
		})
		select {
		case a := <-h.at:
			at = append(at, a)
		case err := <-h.err:
			t.Fatal(err)
		case <-time.After(time.Minute):
			t.Fatalf("payload %d: nothing arrived", i)
		}
	}
	for i := 2; i < len(at); i++ {
		require.Same(t, at[1], at[i], "payload %d read into the recycled buffer", i)
	}
}

// A payload that fits in a frame is never split across two, whatever
// the open frame holds: it starts a new one instead (its receiver then
// needs no copy to join it).
func TestCoreDoesNotSplitAPayloadThatFitsAFrame(t *testing.T) {
	a, b, sent, got := reuseCores(t)
	sizes := []int{700 << 10, 700 << 10, 100, 1<<20 - 10, 300 << 10, 40 << 10, 900 << 10}
	for i, size := range sizes {
		a.sendParts(1, MakeTestPayload(0, i, size), nil)
	}
	a.flush()
	for _, f := range *sent {
		require.NoError(t, b.receive(f))
	}
	require.Len(t, *got, len(sizes))
	for i, p := range *got {
		require.NoError(t, CheckTestPayload(0, i, sizes[i], p))
		in := false
		for _, f := range *sent {
			lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(f.Data))), uintptr(unsafe.Pointer(unsafe.SliceData(f.Data)))+uintptr(len(f.Data))
			at := uintptr(unsafe.Pointer(&p[0]))
			in = in || (at >= lo && at+uintptr(len(p)) <= hi)
		}
		require.True(t, in, "payload %d (%d bytes) lies in one frame", i, sizes[i])
	}
}
