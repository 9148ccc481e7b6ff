package transport

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"
)

// simNet runs several cores in one goroutine over a simulated network that
// loses, duplicates and reorders frames, driven by one seeded source.
type simNet struct {
	t       testing.TB
	rng     *rand.Rand
	cores   []*core
	stats   []*counters
	flight  []simFrame
	sent    [][]int // sent[from][to]: payloads sent
	got     [][]int // got[to][from]: payloads delivered
	loss    float64
	dup     float64
	reorder float64
	// noLostPeers keeps step from reporting lost connections.
	noLostPeers bool
}

type simFrame struct {
	to int
	f  frame
}

func newSimNet(t testing.TB, seed uint64, n int, cc coreConfig) *simNet {
	s := &simNet{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for r := range n {
		cc := cc
		cc.rank, cc.size = r, n
		st := &counters{}
		c := newCore(cc, st, slog.New(slog.DiscardHandler))
		c.transmit = func(to int, f frame) { s.flight = append(s.flight, simFrame{to, f}) }
		c.deliver = func(from int, payload []byte) {
			i := s.got[r][from]
			size := len(payload)
			if err := checkPayload(from, i, size, payload); err != nil {
				s.t.Fatalf("PE %d: %v", r, err)
			}
			if i >= s.sent[from][r] {
				s.t.Fatalf("PE %d: payload %d from %d was never sent", r, i, from)
			}
			s.got[r][from]++
		}
		s.cores = append(s.cores, c)
		s.stats = append(s.stats, st)
		s.sent = append(s.sent, make([]int, n))
		s.got = append(s.got, make([]int, n))
	}
	return s
}

// step performs one random action.
func (s *simNet) step() {
	n := len(s.cores)
	switch x := s.rng.IntN(100); {
	case x < 15: // a PE sends
		from, to := s.rng.IntN(n), s.rng.IntN(n)
		size := []int{0, 1, 50, 300, 1000, 2500}[s.rng.IntN(6)]
		p := makePayload(from, s.sent[from][to], size)
		if s.rng.IntN(2) == 0 {
			s.cores[from].send(to, p)
		} else {
			// In two parts: the head is copied before sendParts returns,
			// so writing it afterwards changes nothing.
			k := s.rng.IntN(len(p) + 1)
			head := append([]byte(nil), p[:k]...)
			s.cores[from].sendParts(to, head, p[k:])
			for i := range head {
				head[i] = 0xAA
			}
		}
		s.sent[from][to]++
	case x < 20:
		s.cores[s.rng.IntN(n)].tick()
	case x < 25:
		s.cores[s.rng.IntN(n)].flush()
	case x < 26 && !s.noLostPeers:
		s.cores[s.rng.IntN(n)].peerLost(s.rng.IntN(n))
	default:
		s.deliverOne()
	}
	s.checkInvariants()
}

func (s *simNet) deliverOne() {
	if len(s.flight) == 0 {
		return
	}
	i := 0
	if s.rng.Float64() < s.reorder {
		i = s.rng.IntN(len(s.flight))
	}
	m := s.flight[i]
	if s.rng.Float64() >= s.dup {
		s.flight = append(s.flight[:i], s.flight[i+1:]...)
	}
	if s.rng.Float64() < s.loss {
		return
	}
	if err := s.cores[m.to].receive(m.f); err != nil {
		s.t.Fatalf("PE %d: %v", m.to, err)
	}
}

func (s *simNet) checkInvariants() {
	for r, c := range s.cores {
		backlog := 0
		for to := range c.out {
			o := &c.out[to]
			if o.inFlight > c.window && len(o.unacked) > 1 {
				s.t.Fatalf("PE %d -> %d: %d bytes in flight, window %d", r, to, o.inFlight, c.window)
			}
			for _, f := range o.unacked {
				backlog += f.payloadBytes
			}
			for _, f := range o.queued {
				backlog += f.payloadBytes
			}
			backlog += o.openPayload
		}
		if got := s.stats[r].backlog.Load(); got != int64(backlog) {
			s.t.Fatalf("PE %d: backlog counter %d, queues hold %d", r, got, backlog)
		}
	}
}

// settle runs without loss until everything is delivered and acknowledged.
func (s *simNet) settle() {
	s.loss, s.dup = 0, 0
	for i := 0; ; i++ {
		if i > 1_000_000 {
			s.t.Fatalf("no quiescence: %d frames in flight", len(s.flight))
		}
		if len(s.flight) > 0 {
			s.deliverOne()
			continue
		}
		done := true
		for _, c := range s.cores {
			for peer := range c.in {
				o := &c.out[peer]
				if c.in[peer].owed || len(o.unacked) > 0 || len(o.queued) > 0 || len(o.open) > 0 {
					done = false
				}
			}
		}
		if done {
			break
		}
		for _, c := range s.cores {
			c.tick()
		}
	}
	for from := range s.sent {
		for to, n := range s.sent[from] {
			if s.got[to][from] != n {
				s.t.Fatalf("%d -> %d: %d payloads delivered of %d", from, to, s.got[to][from], n)
			}
		}
	}
}

func TestCoreSimulated(t *testing.T) {
	cc := coreConfig{maxFrame: 1000, window: 4000, maxPayload: 1 << 20, resendTicks: 3, ackFrames: 4, ackBytes: 2000}
	for seed := range uint64(100) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newSimNet(t, seed, 3, cc)
			s.loss, s.dup, s.reorder = 0.1, 0.05, 0.2
			for range 3000 {
				s.step()
			}
			s.settle()
		})
	}
}

func TestCoreNoLossNoResend(t *testing.T) {
	cc := coreConfig{maxFrame: 1000, window: 4000, maxPayload: 1 << 20, resendTicks: 1000, ackFrames: 4, ackBytes: 2000}
	s := newSimNet(t, 7, 2, cc)
	s.noLostPeers = true
	for range 5000 {
		s.step()
	}
	s.settle()
	for r, st := range s.stats {
		if st.duplicates.Load() != 0 || st.outOfOrder.Load() != 0 {
			t.Errorf("PE %d dropped frames on a perfect network: %+v", r, st.snapshot())
		}
	}
}

// FuzzDecodeFrame feeds arbitrary bytes, cut into records, to frame
// decoding, validation and reassembly: nothing may panic, and nothing
// above the payload limit may be delivered.
func FuzzDecodeFrame(f *testing.F) {
	seeds := []*Frame{
		{From: 1, Seq: 1, Data: []byte("\x03abc\x00\x02de")},
		{From: 1, Seq: 1, Data: []byte("\x06abc")},
		{From: 1, Seq: 2, Data: []byte("def\x01")},
		{From: 1, Seq: 3, Data: []byte("\xff\xff\xff\xff\x0f")},
		{From: 1, Seq: 4, Head: []byte("\x01x\x05"), Data: []byte("hello\x02")},
		{From: 2, Ack: 5, ResendFrom: 6},
		{From: 7, Seq: 1},
	}
	var all []byte
	for _, fr := range seeds {
		b, err := proto.Marshal(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{byte(len(b))}, b...))
		all = append(append(all, byte(len(b))), b...)
	}
	f.Add(all)
	const maxPayload = 1 << 12
	f.Fuzz(func(t *testing.T, input []byte) {
		st := &counters{}
		c := newCore(coreConfig{rank: 0, size: 3, maxFrame: 64, window: 256, maxPayload: maxPayload, resendTicks: 2, ackFrames: 2, ackBytes: 128},
			st, slog.New(slog.DiscardHandler))
		c.transmit = func(int, frame) {}
		c.deliver = func(from int, payload []byte) {
			if len(payload) > maxPayload {
				t.Fatalf("delivered %d bytes, limit %d", len(payload), maxPayload)
			}
		}
		c.send(1, make([]byte, 300)) // so that acks have something to acknowledge
		for len(input) > 0 {
			n := min(int(input[0]), len(input)-1)
			record := input[1 : 1+n]
			input = input[1+n:]
			var fr Frame
			if proto.Unmarshal(record, &fr) != nil {
				continue
			}
			c.receive(frame{From: fr.From, Seq: fr.Seq, Ack: fr.Ack, ResendFrom: fr.ResendFrom, Head: fr.Head, Data: fr.Data})
			if len(record)%5 == 0 {
				c.tick()
			}
		}
	})
}
