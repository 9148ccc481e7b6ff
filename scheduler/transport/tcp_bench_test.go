package transport_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gochare/gochare/internal/jobtls"
	"github.com/gochare/gochare/scheduler/transport"
)

// benchPair is two TCP endpoints in this process over loopback sockets:
// rank 0 drives, rank 1 echoes. A payload's first byte says what the echo
// does: 'P' send it back, 'S' nothing, 'C' answer with the one byte 'A'.
type benchPair struct {
	eps  [2]*transport.TCP
	drv  *benchDriver
	done chan struct{}
}

type benchRun struct {
	ping    bool
	n, size int
}

type benchDriver struct {
	ep   *transport.TCP
	done chan struct{}
	// Owned by rank 0's endpoint goroutine.
	pingLeft                    int
	ping, plain, marked         []byte
	left, unanswered, every, cr int
}

func (d *benchDriver) Event(ev any) {
	r := ev.(benchRun)
	if r.ping {
		d.pingLeft = r.n
		d.ping = make([]byte, r.size)
		d.ping[0] = 'P'
		d.ep.Send(1, d.ping)
	} else {
		d.plain, d.marked = make([]byte, r.size), make([]byte, r.size)
		d.plain[0], d.marked[0] = 'S', 'C'
		d.every = max(1, (1<<20)/r.size)
		d.left, d.unanswered, d.cr = r.n, 0, 0
		d.pump()
	}
	d.ep.Flush()
}

// pump sends while fewer than 4 credits' worth of payloads are unanswered.
func (d *benchDriver) pump() {
	for d.left > 0 && d.unanswered < 4*d.every {
		d.left--
		d.unanswered++
		if d.left%d.every == 0 {
			d.cr++
			d.ep.Send(1, d.marked)
		} else {
			d.ep.Send(1, d.plain)
		}
	}
}

func (d *benchDriver) Receive(from int, payload []byte) {
	if payload[0] == 'A' {
		d.unanswered -= d.every
		d.cr--
		if d.left == 0 && d.cr == 0 {
			d.done <- struct{}{}
			return
		}
		d.pump()
		d.ep.Flush()
		return
	}
	d.pingLeft--
	if d.pingLeft == 0 {
		d.done <- struct{}{}
		return
	}
	d.ep.Send(1, d.ping)
	d.ep.Flush()
}

type benchEcho struct{ ep *transport.TCP }

var credit = []byte{'A'}

func (e *benchEcho) Event(any) {}
func (e *benchEcho) Receive(from int, payload []byte) {
	switch payload[0] {
	case 'P':
		e.ep.Send(from, payload)
	case 'C':
		e.ep.Send(from, credit)
	}
	e.ep.Flush()
}

// benchNets are the sockets the benchmarks run over: the Unix socket
// same-host endpoints use by default, and TCP on the loopback
// (Config.TCPOnly).
var benchNets = []struct {
	name    string
	tcpOnly bool
}{{"unix", false}, {"tcp", true}}

func newBenchPair(b *testing.B, withTLS, tcpOnly bool) *benchPair {
	b.Helper()
	p := &benchPair{done: make(chan struct{}, 1)}
	var creds *jobtls.PE
	if withTLS {
		job, err := jobtls.New()
		if err != nil {
			b.Fatal(err)
		}
		creds = job.PE()
	}
	for r := range 2 {
		cfg := transport.Config{Rank: r, Size: 2, Secret: []byte("bench"), Logger: slog.New(slog.DiscardHandler), TCPOnly: tcpOnly}
		if creds != nil {
			cfg.Secret, cfg.TLS = creds.Secret(), creds.PeerConfig()
		}
		ep, err := transport.NewTCP(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ep.Close() })
		p.eps[r] = ep
	}
	addrs := []string{p.eps[0].Addr(), p.eps[1].Addr()}
	p.drv = &benchDriver{ep: p.eps[0], done: p.done}
	if err := p.eps[0].Start(addrs, p.drv); err != nil {
		b.Fatal(err)
	}
	if err := p.eps[1].Start(addrs, &benchEcho{ep: p.eps[1]}); err != nil {
		b.Fatal(err)
	}
	return p
}

func (p *benchPair) run(b *testing.B, r benchRun) time.Duration {
	b.Helper()
	start := time.Now()
	p.eps[0].Post(r)
	select {
	case <-p.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("run %+v timed out", r)
	}
	return time.Since(start)
}

var benchSizes = []int{64, 32 << 10, 512 << 10}

func sizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkTCPRoundTrip is a ping-pong between two TCP endpoints over
// loopback: one op is one round trip, its allocations those of both
// endpoints (two sends, two receives).
func BenchmarkTCPRoundTrip(b *testing.B) { benchRoundTrip(b, false) }

// BenchmarkTCPRoundTripTLS is BenchmarkTCPRoundTrip over mutual TLS
// (Config.TLS, as a job run with --tls).
func BenchmarkTCPRoundTripTLS(b *testing.B) { benchRoundTrip(b, true) }

func benchRoundTrip(b *testing.B, withTLS bool) {
	for _, size := range benchSizes {
		for _, net := range benchNets {
			b.Run(sizeName(size)+"/net="+net.name, func(b *testing.B) {
				p := newBenchPair(b, withTLS, net.tcpOnly)
				p.run(b, benchRun{ping: true, n: 100, size: size}) // warm up
				b.ReportAllocs()
				b.ResetTimer()
				el := p.run(b, benchRun{ping: true, n: b.N, size: size})
				b.ReportMetric(float64(el)/float64(time.Microsecond)/float64(b.N), "µs/rtt")
			})
		}
	}
}

// BenchmarkTCPOneWay streams payloads from one TCP endpoint to the other;
// the receiver answers one credit per MiB and the sender keeps at most
// 4 MiB unanswered. One op is one payload.
func BenchmarkTCPOneWay(b *testing.B) { benchOneWay(b, false) }

// BenchmarkTCPOneWayTLS is BenchmarkTCPOneWay over mutual TLS.
func BenchmarkTCPOneWayTLS(b *testing.B) { benchOneWay(b, true) }

func benchOneWay(b *testing.B, withTLS bool) {
	for _, size := range benchSizes {
		for _, net := range benchNets {
			b.Run(sizeName(size)+"/net="+net.name, func(b *testing.B) {
				p := newBenchPair(b, withTLS, net.tcpOnly)
				p.run(b, benchRun{n: 100, size: size}) // warm up
				b.ReportAllocs()
				b.SetBytes(int64(size))
				b.ResetTimer()
				el := p.run(b, benchRun{n: b.N, size: size})
				b.ReportMetric(float64(b.N)/el.Seconds(), "msg/s")
			})
		}
	}
}
