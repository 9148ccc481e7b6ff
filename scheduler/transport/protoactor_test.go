package transport

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
)

// mixedSizes returns n payload sizes from empty to several frames.
func mixedSizes(rng *rand.Rand, n int) []int {
	choices := []int{0, 1, 64, 1000, 4 << 10, 32 << 10, 200 << 10, 256 << 10, 256<<10 + 1, 700 << 10}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = choices[rng.IntN(len(choices))]
	}
	return sizes
}

func TestOrderedExactlyOnce(t *testing.T) {
	c := newCluster(t, 3, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for from := range 3 {
		for to := range 3 {
			sizes := mixedSizes(rng, 60)
			if from == 0 && to == 1 {
				sizes[30] = 8 << 20 // chunked into 32 frames
			}
			// Two commands per channel: order must hold across them.
			c.send(from, to, sizes[:30])
			c.send(from, to, sizes[30:])
		}
	}
	c.waitDelivered(t)
	for r, ep := range c.eps {
		st := ep.Stats()
		t.Logf("PE %d: %+v", r, st)
		if st.PayloadsSent != 180 || st.PayloadsDelivered != 180 {
			t.Errorf("PE %d sent %d and delivered %d payloads, want 180 and 180", r, st.PayloadsSent, st.PayloadsDelivered)
		}
		if st.Malformed != 0 || st.Refused != 0 {
			t.Errorf("PE %d: %d malformed frames, %d refused connections", r, st.Malformed, st.Refused)
		}
	}
}

func TestFlowControlBoundsInFlight(t *testing.T) {
	const frame, window = 64 << 10, 256 << 10
	c := newCluster(t, 2, func(cfg *Config) {
		cfg.MaxFrame = frame
		cfg.Window = window
	})
	slow := c.recs[1]
	slow.gate, slow.entered = make(chan struct{}), make(chan struct{})
	sizes := make([]int, 40)
	total := 0
	for i := range sizes {
		sizes[i] = frame
		total += frame
	}
	c.send(0, 1, sizes)
	<-slow.entered
	// The receiver holds its first payload: nothing is acknowledged, the
	// sender keeps at most a window in flight and queues the rest.
	waitFor(t, "all payloads accepted by Send", func() bool { return c.eps[0].Stats().PayloadsSent == 40 })
	if got := c.eps[0].Backlog(); got != total {
		t.Errorf("backlog with a stalled receiver = %d, want %d", got, total)
	}
	st := c.eps[0].Stats()
	if st.PeakInFlight > window {
		t.Errorf("peak in flight %d above window %d", st.PeakInFlight, window)
	}
	if sent := st.FramesSent - st.Resends; sent > window/frame {
		t.Errorf("%d distinct frames sent to a stalled receiver, window allows %d", sent, window/frame)
	}
	close(slow.gate)
	c.waitDelivered(t)
	if st := c.eps[0].Stats(); st.PeakInFlight > window {
		t.Errorf("peak in flight %d above window %d", st.PeakInFlight, window)
	}
}

func TestResendAfterDroppedFrames(t *testing.T) {
	c := newCluster(t, 2, func(cfg *Config) {
		dropped := make(map[uint64]bool) // used by the endpoint goroutine only
		n := 0
		cfg.dropOutgoing = func(to int, f *Frame) bool {
			n++
			if n%7 == 0 && !dropped[f.Seq] {
				dropped[f.Seq] = true
				return true
			}
			return false
		}
		cfg.ResendAfter = 50 * time.Millisecond
	})
	rng := rand.New(rand.NewPCG(3, 4))
	c.send(0, 1, mixedSizes(rng, 100))
	c.send(1, 0, mixedSizes(rng, 100))
	c.waitDelivered(t)
	for r, ep := range c.eps {
		st := ep.Stats()
		t.Logf("PE %d: %+v", r, st)
		if st.Resends == 0 {
			t.Errorf("PE %d resent nothing though frames were dropped", r)
		}
	}
}

func TestResendAfterLostStream(t *testing.T) {
	c := newCluster(t, 2, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	const rounds = 20
	for range rounds {
		c.send(0, 1, mixedSizes(rng, 20))
		// Tear down PE 0's endpoint writer to PE 1, as protoactor does when
		// its gRPC stream fails: what it held is lost.
		c.eps[0].system.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: c.eps[1].Addr()})
	}
	c.waitDelivered(t)
	st := c.eps[0].Stats()
	t.Logf("PE 0: %+v", st)
	if st.GoBacks == 0 {
		t.Errorf("no go-back after lost streams")
	}
}

func TestPostOrder(t *testing.T) {
	c := newCluster(t, 1, nil)
	const goroutines, each = 4, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c.eps[0].Post([2]int{g, i})
			}
		}()
	}
	wg.Wait()
	rec := c.recs[0]
	waitFor(t, "all events", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.events) == goroutines*each
	})
	next := make([]int, goroutines)
	for _, ev := range rec.events {
		e := ev.([2]int)
		if e[1] != next[e[0]] {
			t.Fatalf("event %d of goroutine %d arrived when %d was expected", e[1], e[0], next[e[0]])
		}
		next[e[0]]++
	}
}

func TestDelayedAcks(t *testing.T) {
	ticks := make(chan time.Time)
	c := newCluster(t, 2, func(cfg *Config) {
		if cfg.Rank == 1 {
			cfg.Ticks = ticks
		}
	})
	const n = 640
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 100
	}
	c.send(0, 1, sizes[:1])
	waitFor(t, "first payload", func() bool { return c.recs[1].count(0) == 1 })
	if got := c.eps[0].Backlog(); got != 100 {
		t.Fatalf("backlog before any tick = %d, want 100 (the ack waits for a tick)", got)
	}
	ticks <- time.Time{}
	ticks <- time.Time{}
	waitFor(t, "ack after a tick", func() bool { return c.eps[0].Backlog() == 0 })

	c.send(0, 1, sizes[1:])
	waitFor(t, "stream", func() bool { return c.recs[1].count(0) == n })
	ticks <- time.Time{}
	ticks <- time.Time{}
	c.waitDelivered(t)
	if acks := c.eps[1].Stats().AcksSent; acks > n/32+4 {
		t.Errorf("%d standalone acks for %d one-way frames: want at most one per 32", acks, n)
	}
}

func TestStartErrors(t *testing.T) {
	logger, _ := newTestLog(t)
	ep, err := NewProtoActor(Config{Rank: 0, Size: 2, Secret: []byte("s"), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	rec := newRecorder(0, 2)
	for _, peers := range [][]string{{ep.Addr()}, {"127.0.0.1:1", "127.0.0.1:2"}} {
		if err := ep.Start(peers, rec); err == nil {
			t.Errorf("Start(%q) succeeded", peers)
		}
	}
	if _, err := NewProtoActor(Config{Rank: 2, Size: 2, Secret: []byte("s")}); err == nil {
		t.Errorf("rank 2 of 2 accepted")
	}
	if _, err := NewProtoActor(Config{Rank: 0, Size: 1}); err == nil {
		t.Errorf("empty secret accepted")
	}
	_ = fmt.Sprint()
}
