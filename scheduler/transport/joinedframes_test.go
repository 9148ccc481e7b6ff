package transport

import (
	"runtime/debug"
	"testing"
	"time"
)

type chanHandler struct{ got chan []byte }

func (h *chanHandler) Receive(from int, payload []byte) { h.got <- payload }
func (h *chanHandler) Event(ev any)                     { ev.(func())() }

// The buffers of big frames whose bytes were all joined into a payload
// (a checkpoint's buddy copy spans dozens) go back to the reader's pool
// as soon as the frame is handled, without a garbage collection: the
// next such payload is read into memory already used. A big frame
// delivered in place (a payload that fits it) stays the handler's.
func TestTCPJoinedFramesBuffersComeBackAtOnce(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no finalizer brings any back
	var eps [2]*TCP
	hs := [2]*chanHandler{{got: make(chan []byte, 1)}, {got: make(chan []byte, 1)}}
	var addrs []string
	for r := range eps {
		ep, err := NewTCP(Config{Rank: r, Size: 2, Secret: []byte("s")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		eps[r] = ep
		addrs = append(addrs, ep.Addr())
	}
	for r := range eps {
		if err := eps[r].Start(addrs, hs[r]); err != nil {
			t.Fatal(err)
		}
	}
	send := func(i, size int) []byte {
		t.Helper()
		want := makePayload(0, i, size)
		eps[0].Post(func() {
			eps[0].Send(1, want)
			eps[0].Flush()
		})
		select {
		case got := <-hs[1].got:
			if err := checkPayload(0, i, size, got); err != nil {
				t.Fatal(err)
			}
			return got
		case <-time.After(time.Minute):
			t.Fatalf("payload %d: nothing arrived", i)
		}
		return nil
	}
	const big = 3 << 20 // several frames of DefaultMaxFrame
	send(0, big)
	// Each frame's buffer came back when the frame was handled, and the
	// next frame was read into it: the last one is left in the pool.
	if n, bytes := eps[1].recv.pooled(); n == 0 || bytes < DefaultMaxFrame {
		t.Fatalf("after a %d-byte payload joined from frames, the pool holds %d buffers, %d bytes; want a frame's buffer back", big, n, bytes)
	}
	// A payload that fits a frame is delivered from the frame's buffer,
	// which stays out of the pool while the handler holds it.
	kept := send(1, 200<<10)
	for i := 2; i < 6; i++ {
		send(i, big)
	}
	if n, _ := eps[1].recv.pooled(); n == 0 {
		t.Fatal("no frame buffer in the pool after more payloads joined from frames")
	}
	if err := checkPayload(0, 1, 200<<10, kept); err != nil {
		t.Fatalf("a payload delivered in place changed while later frames were read: %v", err)
	}
}
