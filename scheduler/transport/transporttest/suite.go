package transporttest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gochare/gochare/scheduler/transport"
)

// Run runs the endpoint suite, each test a job of PEs in child processes
// built by the Factory given to Main: exactly-once in-order delivery of
// mixed sizes, flow control, resends after dropped frames and broken
// connections, delayed acknowledgements, the death of a peer.
func Run(t *testing.T) {
	t.Run("OrderedExactlyOnce", testOrderedExactlyOnce)
	t.Run("FlowControlBoundsInFlight", testFlowControlBoundsInFlight)
	t.Run("ResendAfterDroppedFrames", testResendAfterDroppedFrames)
	t.Run("ResendAfterLostStream", testResendAfterLostStream)
	t.Run("DelayedAcks", testDelayedAcks)
	t.Run("PeerDeath", testPeerDeath)
}

// mixedSizes returns n payload sizes from empty to several frames.
func mixedSizes(rng *rand.Rand, n int) []int {
	choices := []int{0, 1, 64, 1000, 4 << 10, 32 << 10, 200 << 10, 256 << 10, 256<<10 + 1, 700 << 10}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = choices[rng.IntN(len(choices))]
	}
	return sizes
}

func testOrderedExactlyOnce(t *testing.T) {
	c := newCluster(t, 3, peerOptions{}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for from := range 3 {
		for to := range 3 {
			sizes := mixedSizes(rng, 60)
			if from != to && (from+1)%3 == to {
				sizes[30] = 8 << 20 // chunked into 32 frames
			}
			// Two commands per channel: order must hold across them.
			c.send(from, to, sizes[:30])
			c.send(from, to, sizes[30:])
		}
	}
	c.waitDelivered()
	for r := range 3 {
		st := c.report(r).Stats
		t.Logf("PE %d: %+v", r, st)
		if st.PayloadsSent != 180 || st.PayloadsDelivered != 180 {
			t.Errorf("PE %d sent %d and delivered %d payloads, want 180 and 180", r, st.PayloadsSent, st.PayloadsDelivered)
		}
		if st.Malformed != 0 || st.Refused != 0 {
			t.Errorf("PE %d: %d malformed frames, %d refused connections", r, st.Malformed, st.Refused)
		}
	}
}

func testFlowControlBoundsInFlight(t *testing.T) {
	const frame, window = 64 << 10, 256 << 10
	c := newCluster(t, 2, peerOptions{MaxFrame: frame, Window: window}, func(o *peerOptions) { o.Gate = o.Rank == 1 })
	sizes := make([]int, 40)
	total := 0
	for i := range sizes {
		sizes[i] = frame
		total += frame
	}
	c.send(0, 1, sizes)
	select {
	case <-c.peers[1].entered:
	case <-time.After(20 * time.Second):
		t.Fatal("receiver never got a payload")
	}
	// The receiver holds its first payload: nothing is acknowledged, the
	// sender keeps at most a window in flight and queues the rest.
	var rep peerReport
	waitFor(t, "all payloads accepted by Send", func() bool {
		rep = c.report(0)
		return rep.Stats.PayloadsSent == 40
	})
	// The frames before the one completing the held payload may be acked.
	if rep.Backlog < total-window || rep.Backlog > total {
		t.Errorf("backlog with a stalled receiver = %d, want %d minus at most a window", rep.Backlog, total)
	}
	st := rep.Stats
	if st.PeakInFlight > window {
		t.Errorf("peak in flight %d above window %d", st.PeakInFlight, window)
	}
	if sent := st.FramesSent - st.Resends; sent > window/frame+2 {
		t.Errorf("%d distinct frames sent to a stalled receiver, window allows %d", sent, window/frame)
	}
	c.peers[1].send("RELEASE")
	c.waitDelivered()
	if st := c.report(0).Stats; st.PeakInFlight > window {
		t.Errorf("peak in flight %d above window %d", st.PeakInFlight, window)
	}
}

func testResendAfterDroppedFrames(t *testing.T) {
	c := newCluster(t, 2, peerOptions{DropEvery: 7, ResendAfterMs: 50, MaxFrame: transport.DefaultMaxFrame, Window: 1 << 20}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	c.send(0, 1, mixedSizes(rng, 100))
	c.send(1, 0, mixedSizes(rng, 100))
	c.waitDelivered()
	for r := range 2 {
		st := c.report(r).Stats
		t.Logf("PE %d: %+v", r, st)
		if st.Resends == 0 {
			t.Errorf("PE %d resent nothing though frames were dropped", r)
		}
	}
}

func testResendAfterLostStream(t *testing.T) {
	c := newCluster(t, 2, peerOptions{MaxFrame: transport.DefaultMaxFrame, Window: 1 << 20}, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10 {
		c.send(0, 1, mixedSizes(rng, 20))
		c.command(0, "LOSE", 1, nil)
	}
	c.waitDelivered()
	st := c.report(0).Stats
	t.Logf("PE 0: %+v", st)
	if st.GoBacks == 0 {
		t.Errorf("no go-back after lost streams")
	}
}

func testDelayedAcks(t *testing.T) {
	c := newCluster(t, 2, peerOptions{}, func(o *peerOptions) { o.ManualTicks = o.Rank == 0 })
	const n = 640
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 100
	}
	c.send(1, 0, sizes[:1])
	var rep peerReport
	waitFor(t, "first payload", func() bool { return c.report(0).Received[1] == 1 })
	if rep = c.report(1); rep.Backlog != 100 {
		t.Fatalf("sender backlog before any tick at the receiver = %d, want 100 (the ack waits for a tick)", rep.Backlog)
	}
	c.peers[0].send("TICK")
	waitFor(t, "ack after a tick", func() bool { return c.report(1).Backlog == 0 })

	c.send(1, 0, sizes[1:])
	waitFor(t, "stream", func() bool { return c.report(0).Received[1] == n })
	c.peers[0].send("TICK")
	c.waitDelivered()
	if acks := c.report(0).Stats.AcksSent; acks > n/32+4 {
		t.Errorf("%d standalone acks for %d one-way frames: want at most one per 32", acks, n)
	}
}

// TestPeerDeath kills a PE that holds unacknowledged frames: the sender
// keeps running and keeps its backlog, and exits promptly when told to.
func testPeerDeath(t *testing.T) {
	c := newCluster(t, 3, peerOptions{ResendAfterMs: 50}, func(o *peerOptions) { o.Gate = o.Rank == 1 })
	c.send(0, 1, []int{1000, 1000, 1000})
	select {
	case <-c.peers[1].entered:
	case <-time.After(20 * time.Second):
		t.Fatal("receiver never got a payload")
	}
	c.peers[1].kill()
	// PE 0 and PE 2 still talk.
	c.send(0, 2, []int{10, 20000})
	c.send(2, 0, []int{30})
	waitFor(t, "traffic between survivors", func() bool {
		r0, r2 := c.report(0), c.report(2)
		if r2.Received[0] == 2 && r0.Received[2] == 1 {
			return true
		}
		t.Logf("PE 0: %+v\nPE 2: %+v", r0, r2)
		return false
	})
	waitFor(t, "resends to the dead PE", func() bool { return c.report(0).Stats.GoBacks > 0 })
	if rep := c.report(0); rep.Backlog == 0 || len(rep.Errors) > 0 {
		t.Errorf("PE 0 after the death of PE 1: backlog %d, errors %v", rep.Backlog, rep.Errors)
	}
	start := time.Now()
	c.peers[0].stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("PE 0 took %v to exit after a peer died", d)
	}
}
