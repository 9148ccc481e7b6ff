package transport_test

import (
	"crypto/tls"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/gochare/gochare/internal/jobtls"
	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/transporttest"
)

// tlsJob is the configure of newTCPJobWith for a job run with TLS: every
// PE with the job's PE credentials, as jobtls.Load gives them.
func tlsJob(t *testing.T) (*jobtls.Job, func(int, *transport.Config)) {
	t.Helper()
	job, err := jobtls.New()
	if err != nil {
		t.Fatal(err)
	}
	return job, func(_ int, cfg *transport.Config) {
		cfg.Secret = job.PE().Secret()
		cfg.TLS = job.PE().PeerConfig()
	}
}

// With TLS, payloads of every size cross both ways, through connections
// cut mid-stream and dialed again (each a new TLS session).
func TestTCPTLSJob(t *testing.T) {
	_, configure := tlsJob(t)
	var px *proxy
	j := newTCPJobWith(t, 3, configure, func(r int, real []string) []string {
		if r == 0 {
			px = newProxy(t, real[1])
			return []string{real[0], px.ln.Addr().String(), real[2]}
		}
		return real
	})
	rng := rand.New(rand.NewPCG(3, 4))
	choices := []int{0, 1, 100, 5000, 20000, 300000, 1<<20 + 5}
	total := 0
	for range 8 {
		sizes := make([]int, 10)
		for i := range sizes {
			sizes[i] = choices[rng.IntN(len(choices))]
		}
		j.send(0, 1, sizes)
		j.send(1, 0, sizes)
		j.send(2, 0, sizes)
		total += len(sizes)
		transporttest.WaitFor(t, "progress", func() bool { return j.recs[1].Count(0) > total-len(sizes) || len(j.recs[1].Errors()) > 0 })
		px.cut()
	}
	j.waitReceived(t, 1, 0, total)
	j.waitReceived(t, 0, 1, total)
	j.waitReceived(t, 0, 2, total)
	for r, ep := range j.eps {
		if n := ep.Stats().Refused; n != 0 {
			t.Errorf("PE %d refused %d connections of its own job", r, n)
		}
	}
}

// With TLS, a stranger is refused before the handshake of the transport:
// one speaking plain TCP (even with the job secret), one with a
// certificate of another CA, one with no certificate. Each is logged
// with its address and counted; the job goes on.
func TestTCPTLSRefusesStrangers(t *testing.T) {
	job, configure := tlsJob(t)
	j := newTCPJobWith(t, 3, configure, nil)
	ep := j.eps[2]
	j.send(0, 2, []int{10})
	j.waitReceived(t, 2, 0, 1)
	before := ep.Stats().Refused

	// Plain TCP, with the secret the job's handshake would want.
	if nc, ok := rawDialSecret(t, ep.Addr(), 0, 2, job.PE().Secret(), false); ok || !closedByPeer(nc) {
		t.Error("a dialer without TLS was accepted")
	}
	// TLS with a certificate made by another CA: the stranger trusts
	// the job's CA (it may have read ca.crt), the job does not trust it.
	other, err := jobtls.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := other.PE().PeerConfig()
	cfg.RootCAs = job.PE().PeerConfig().RootCAs
	if tlsStranger(t, ep.Addr(), cfg) {
		t.Error("a dialer with a certificate of another CA was accepted")
	}
	// TLS with no certificate.
	if tlsStranger(t, ep.Addr(), &tls.Config{RootCAs: cfg.RootCAs, ServerName: jobtls.PEName, MinVersion: tls.VersionTLS13}) {
		t.Error("a dialer without a certificate was accepted")
	}
	transporttest.WaitFor(t, "refusals counted", func() bool { return ep.Stats().Refused-before == 3 })
	for _, reason := range []string{"first record does not look like a TLS handshake", "certificate signed by unknown authority", "didn't provide a certificate"} {
		if j.log.Find("refused connection", "addr=127.0.0.1:", "TLS", reason) == "" {
			t.Errorf("no log line with the address for %q", reason)
		}
	}
	j.send(0, 2, []int{10, 100000})
	j.send(1, 2, []int{20})
	j.waitReceived(t, 2, 0, 3)
	j.waitReceived(t, 2, 1, 1)
}

// tlsStranger connects to addr with cfg and tries the transport's
// handshake over TLS as PE 0; it reports whether the endpoint accepted.
func tlsStranger(t *testing.T, addr string, cfg *tls.Config) bool {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(time.Minute))
	tc := tls.Client(raw, cfg)
	if err := tc.Handshake(); err != nil {
		return false // TLS 1.3: the server's verdict on the client comes later, but may come first
	}
	hello := make([]byte, 28)
	copy(hello, "GCT1")
	hello[8] = 2
	if _, err := tc.Write(hello); err != nil {
		return false
	}
	reply := make([]byte, 48)
	_, err = tc.Read(reply)
	return err == nil
}

// An endpoint of another job (another CA) is refused both ways, and
// nothing crosses.
func TestTCPTLSAnotherJob(t *testing.T) {
	_, mine := tlsJob(t)
	_, theirs := tlsJob(t)
	j := newTCPJobWith(t, 2, func(r int, cfg *transport.Config) {
		if r == 0 {
			mine(r, cfg)
		} else {
			theirs(r, cfg)
		}
		cfg.Secret = []byte("the same secret") // only TLS tells the jobs apart
	}, nil)
	transporttest.WaitFor(t, "refusal by the acceptor", func() bool { return j.eps[1].Stats().Refused > 0 })
	j.send(0, 1, []int{10})
	j.eps[0].Post("flushed")
	transporttest.WaitFor(t, "the sender's loop", func() bool {
		ev := j.recs[0].Events()
		return len(ev) > 0 && ev[len(ev)-1] == "flushed"
	})
	if n := j.recs[1].Count(0); n != 0 {
		t.Errorf("%d payloads crossed between jobs", n)
	}
	transporttest.WaitFor(t, "the dialer's log line", func() bool {
		return j.log.Find("cannot connect", "TLS", "certificate signed by unknown authority") != ""
	})
}

// With TLS, on connections that do not break, nothing is lost and so
// nothing is sent twice, also when a socket does not take a write at once
// (the loop leaves the rest of its sealed records to the writer).
func TestTCPTLSNothingLostWithoutFailures(t *testing.T) {
	_, configure := tlsJob(t)
	j := newTCPJobWith(t, 2, func(r int, cfg *transport.Config) {
		configure(r, cfg)
		cfg.ResendAfter = time.Minute // a lost frame would be resent after a gap report only
	}, nil)
	// Frames sent before a connection is up go out again once it is:
	// first connect both ways.
	j.send(0, 1, []int{1})
	j.send(1, 0, []int{1})
	j.waitReceived(t, 1, 0, 1)
	j.waitReceived(t, 0, 1, 1)
	before := []transport.Stats{j.eps[0].Stats(), j.eps[1].Stats()}
	sizes := make([]int, 0, 120)
	for i := range 120 {
		sizes = append(sizes, []int{1 << 20, 100, 40000}[i%3])
	}
	j.send(0, 1, sizes)
	j.send(1, 0, sizes)
	j.waitReceived(t, 1, 0, 1+len(sizes))
	j.waitReceived(t, 0, 1, 1+len(sizes))
	for r, ep := range j.eps {
		st, b := ep.Stats(), before[r]
		if st.GoBacks != b.GoBacks || st.Resends != b.Resends || st.OutOfOrder != b.OutOfOrder {
			t.Errorf("PE %d: %d go-backs, %d resends, %d out of order on connections that never broke",
				r, st.GoBacks-b.GoBacks, st.Resends-b.Resends, st.OutOfOrder-b.OutOfOrder)
		}
	}
}
