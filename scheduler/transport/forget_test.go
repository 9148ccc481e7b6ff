package transport

import (
	"log/slog"
	"testing"
)

// After forget, frames from the failed peer are dropped without error and
// nothing is sent to it any more, while the other peers go on.
func TestForgottenPeerIsIgnored(t *testing.T) {
	st := &counters{}
	c := newCore(coreConfig{rank: 0, size: 3, maxFrame: 1000, window: 4000, maxPayload: 1 << 20, resendTicks: 3, ackFrames: 4, ackBytes: 2000},
		st, slog.New(slog.DiscardHandler))
	var transmitted []int
	c.transmit = func(to int, f frame) { transmitted = append(transmitted, to) }
	delivered := map[int]int{}
	c.deliver = func(from int, payload []byte) { delivered[from]++ }
	mk := func(from, seq uint64) frame {
		return frame{From: uint32(from), Seq: seq, Data: []byte("\x03abc")}
	}
	for _, from := range []uint64{1, 2} {
		if err := c.receive(mk(from, 1)); err != nil {
			t.Fatalf("frame from %d: %v", from, err)
		}
	}
	c.forget(1)
	for _, from := range []uint64{1, 2} {
		if err := c.receive(mk(from, 2)); err != nil {
			t.Fatalf("frame from %d: %v", from, err)
		}
	}
	if delivered[1] != 1 || delivered[2] != 2 {
		t.Fatalf("delivered %v, want 1 payload from the forgotten peer 1 (before forget) and 2 from peer 2", delivered)
	}
	transmitted = nil
	c.send(1, []byte("to the dead"))
	c.send(2, []byte("to the living"))
	c.flush()
	for range 10 {
		c.tick()
	}
	for _, to := range transmitted {
		if to == 1 {
			t.Fatalf("frames sent to the forgotten peer: %v", transmitted)
		}
	}
	if len(transmitted) == 0 {
		t.Fatal("nothing sent to the live peer")
	}
}
