package transport_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/transporttest"
)

func TestMain(m *testing.M) {
	os.Exit(transporttest.Main(m, func(cfg transport.Config) (transport.Endpoint, error) { return transport.NewTCP(cfg) }))
}

// TestTCPEndpoint runs the endpoint suite on the TCP endpoint, each PE a
// child process.
func TestTCPEndpoint(t *testing.T) { transporttest.Run(t) }

// tcpJob is a job of TCP endpoints in this process, each with a Recorder.
type tcpJob struct {
	eps  []*transport.TCP
	recs []*transporttest.Recorder
	log  *transporttest.TestLog
}

// newTCPJob starts n endpoints; addrs, when not nil, rewrites the address
// list each PE is given (to put a proxy between PEs).
func newTCPJob(t *testing.T, n int, secret func(rank int) string, addrs func(rank int, real []string) []string) *tcpJob {
	t.Helper()
	return newTCPJobWith(t, n, func(r int, cfg *transport.Config) {
		if secret != nil {
			cfg.Secret = []byte(secret(r))
		}
	}, addrs)
}

// newTCPJobWith is newTCPJob with each PE's config, secret "job-secret",
// changed by configure (if not nil).
func newTCPJobWith(t *testing.T, n int, configure func(rank int, cfg *transport.Config), addrs func(rank int, real []string) []string) *tcpJob {
	t.Helper()
	logger, tl := transporttest.NewTestLog(t)
	j := &tcpJob{log: tl}
	var real []string
	for r := range n {
		cfg := transport.Config{Rank: r, Size: n, Secret: []byte("job-secret"), Logger: logger, ResendAfter: 200 * time.Millisecond}
		if configure != nil {
			configure(r, &cfg)
		}
		ep, err := transport.NewTCP(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		j.eps = append(j.eps, ep)
		j.recs = append(j.recs, transporttest.NewRecorder(r, n, ep))
		real = append(real, ep.Addr())
	}
	for r, ep := range j.eps {
		peers := real
		if addrs != nil {
			peers = addrs(r, real)
		}
		if err := ep.Start(peers, j.recs[r]); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// send makes from send sizes to to, planned at the receiver.
func (j *tcpJob) send(from, to int, sizes []int) {
	j.recs[to].Plan(from, sizes)
	j.eps[from].Post(transporttest.SendCommand(to, sizes))
}

func (j *tcpJob) waitReceived(t *testing.T, to, from, n int) {
	t.Helper()
	transporttest.WaitProgressing(t, "payloads",
		func() bool { return j.recs[to].Count(from) >= n || len(j.recs[to].Errors()) > 0 },
		func() int { return j.recs[to].Count(from) })
	for _, err := range j.recs[to].Errors() {
		t.Error(err)
	}
	if got := j.recs[to].Count(from); got != n {
		t.Fatalf("PE %d received %d payloads from %d, want %d", to, got, from, n)
	}
}

func TestTCPConfigAndPostOrder(t *testing.T) {
	if _, err := transport.NewTCP(transport.Config{Rank: 2, Size: 2, Secret: []byte("s")}); !errors.Is(err, transport.ErrConfig) {
		t.Errorf("rank 2 of 2: err = %v, want ErrConfig", err)
	}
	if _, err := transport.NewTCP(transport.Config{Rank: 0, Size: 1}); !errors.Is(err, transport.ErrConfig) {
		t.Errorf("empty secret: err = %v, want ErrConfig", err)
	}
	ep, err := transport.NewTCP(transport.Config{Rank: 0, Size: 2, Secret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	_, port, _ := net.SplitHostPort(ep.Addr())
	portNumber, _ := strconv.Atoi(port)
	if _, err := transport.NewTCP(transport.Config{Rank: 0, Size: 2, Secret: []byte("s"), Port: portNumber}); !errors.Is(err, transport.ErrListen) {
		t.Errorf("port in use: err = %v, want ErrListen", err)
	}
	rec := transporttest.NewRecorder(0, 2, ep)
	for _, peers := range [][]string{{ep.Addr()}, {"127.0.0.1:1", "127.0.0.1:2"}} {
		if err := ep.Start(peers, rec); !errors.Is(err, transport.ErrConfig) {
			t.Errorf("Start(%q): err = %v, want ErrConfig", peers, err)
		}
	}
	if err := ep.Start([]string{ep.Addr(), "127.0.0.1:1"}, rec); err != nil {
		t.Fatal(err)
	}
	if err := ep.Start([]string{ep.Addr(), "127.0.0.1:1"}, rec); !errors.Is(err, transport.ErrStarted) {
		t.Errorf("second Start: err = %v, want ErrStarted", err)
	}
	transporttest.PostOrder(t, ep, rec)
}

// handshakeMAC is the handshake proof, written here from the wire format
// in tcp.go's comment.
func handshakeMAC(secret []byte, role string, dialerNonce, acceptorNonce []byte, dialer, acceptor int) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("gochare-tcp " + role))
	mac.Write(dialerNonce)
	mac.Write(acceptorNonce)
	var ranks [8]byte
	binary.LittleEndian.PutUint32(ranks[0:], uint32(dialer))
	binary.LittleEndian.PutUint32(ranks[4:], uint32(acceptor))
	mac.Write(ranks[:])
	return mac.Sum(nil)
}

// rawDial connects to addr as PE dialer of the job with secret and runs
// the handshake; it returns the connection and whether it was accepted.
func rawDial(t *testing.T, addr string, dialer, acceptor int, secret string) (net.Conn, bool) {
	t.Helper()
	return rawDialSecret(t, addr, dialer, acceptor, []byte(secret), secret == "job-secret")
}

// rawDialSecret is rawDial with the secret as bytes; checkProof checks
// the acceptor's proof of it. An addr that starts with @ is a Unix
// socket in the abstract namespace.
func rawDialSecret(t *testing.T, addr string, dialer, acceptor int, secret []byte, checkProof bool) (net.Conn, bool) {
	t.Helper()
	network := "tcp"
	if strings.HasPrefix(addr, "@") { // an endpoint's Unix socket
		network = "unix"
	}
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(time.Minute))
	hello := make([]byte, 28)
	copy(hello, "GCT1")
	binary.LittleEndian.PutUint32(hello[4:], uint32(dialer))
	binary.LittleEndian.PutUint32(hello[8:], uint32(acceptor))
	copy(hello[12:], "0123456789abcdef")
	if _, err := nc.Write(hello); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 48)
	if _, err := io.ReadFull(nc, reply); err != nil {
		return nc, false
	}
	if !hmac.Equal(reply[16:], handshakeMAC(secret, "acceptor", hello[12:], reply[:16], dialer, acceptor)) && checkProof {
		t.Fatalf("the endpoint's proof does not check")
	}
	nc.Write(handshakeMAC(secret, "dialer", hello[12:], reply[:16], dialer, acceptor))
	var ok [1]byte
	if _, err := io.ReadFull(nc, ok[:]); err != nil || ok[0] != 1 {
		return nc, false
	}
	nc.SetDeadline(time.Time{})
	return nc, true
}

// frameBytes encodes a frame as the TCP endpoint does.
func frameBytes(from uint32, seq, ack uint64, head, data []byte) []byte {
	b := make([]byte, 36, 36+len(head)+len(data))
	binary.LittleEndian.PutUint32(b[0:], from)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(head)))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(data)))
	binary.LittleEndian.PutUint64(b[12:], seq)
	binary.LittleEndian.PutUint64(b[20:], ack)
	return append(append(b, head...), data...)
}

// closedByPeer reports whether the endpoint closed nc.
func closedByPeer(nc net.Conn) bool {
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := io.ReadAll(nc)
	return err == nil || !errors.Is(err, os.ErrDeadlineExceeded)
}

// Strangers, wrong secrets and wrong ranks are refused before any frame,
// logged with their address and counted; a PE of the job is accepted.
func TestTCPRefusesStrangers(t *testing.T) {
	j := newTCPJob(t, 3, nil, nil)
	ep := j.eps[2]
	before := ep.Stats().Refused

	junk, err := net.Dial("tcp", ep.Addr())
	if err != nil {
		t.Fatal(err)
	}
	junk.Write([]byte("GET / HTTP/1.1\r\nHost: example.org\r\n\r\n"))
	if !closedByPeer(junk) {
		t.Error("a connection speaking HTTP was not closed")
	}
	if nc, ok := rawDial(t, ep.Addr(), 0, 2, "another job"); ok || !closedByPeer(nc) {
		t.Error("a dialer with the wrong secret was accepted")
	}
	if nc, ok := rawDial(t, ep.Addr(), 7, 2, "job-secret"); ok || !closedByPeer(nc) {
		t.Error("a dialer claiming rank 7 of 3 was accepted")
	}
	if nc, ok := rawDial(t, j.eps[0].Addr(), 1, 0, "job-secret"); ok || !closedByPeer(nc) {
		t.Error("a higher rank dialing a lower one was accepted")
	}
	transporttest.WaitFor(t, "refusals counted", func() bool {
		return ep.Stats().Refused-before == 3 && j.eps[0].Stats().Refused == 1
	})
	for _, reason := range []string{"not a gochare transport handshake", "does not know the job secret", "rank 7 dialing rank 2"} {
		if j.log.Find("refused connection", "addr=127.0.0.1:", reason) == "" {
			t.Errorf("no log line with the address for %q", reason)
		}
	}
	if _, ok := rawDial(t, ep.Addr(), 1, 2, "job-secret"); !ok {
		t.Error("a PE of the job with the secret was refused")
	}
	// The job still works.
	j.send(0, 2, []int{10, 100000})
	j.waitReceived(t, 2, 0, 2)
}

// An endpoint of another job (another secret) is refused both ways.
func TestTCPWrongSecretBetweenEndpoints(t *testing.T) {
	j := newTCPJob(t, 2, func(r int) string { return []string{"mine", "theirs"}[r] }, nil)
	transporttest.WaitFor(t, "refusals on both sides", func() bool {
		return j.eps[0].Stats().Refused > 0 && j.eps[1].Stats().Refused > 0
	})
	j.send(0, 1, []int{10})
	j.eps[0].Post("flushed")
	transporttest.WaitFor(t, "the sender's loop", func() bool {
		ev := j.recs[0].Events()
		return len(ev) > 0 && ev[len(ev)-1] == "flushed"
	})
	if n := j.recs[1].Count(0); n != 0 {
		t.Errorf("%d payloads crossed between jobs", n)
	}
	if j.log.Find("cannot connect", "does not know the job secret") == "" {
		t.Error("the dialer did not log that its peer does not know the secret")
	}
}

// Malformed frames from an authenticated connection are logged, counted,
// and cost the connection; the endpoint keeps running.
//
// The real PE 0 reaches PE 1 through a proxy that turns it away until the
// malformed cases are done: otherwise its redial, set off when a raw
// connection claiming rank 0 replaces its own, could replace the raw
// connection before the bad frame is read.
func TestTCPMalformedFrames(t *testing.T) {
	var px *proxy
	j := newTCPJob(t, 2, nil, func(r int, real []string) []string {
		if r == 0 {
			px = newProxy(t, real[1])
			px.refusing.Store(true)
			return []string{real[0], px.ln.Addr().String()}
		}
		return real
	})
	ep := j.eps[1]
	for i, bad := range [][]byte{
		frameBytes(0, 1, 0, nil, make([]byte, transport.DefaultTCPMaxFrame+1))[:36], // too long
		frameBytes(5, 1, 0, nil, []byte{1, 'x'}),                                    // rank outside the job
		frameBytes(1, 1, 0, nil, []byte{1, 'x'}),                                    // not the connection's rank
		frameBytes(0, 1, 99, nil, []byte{1, 'x'}),                                   // ack for frames never sent
		frameBytes(0, 1, 0, nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),        // bad record header
		frameBytes(0, 0, 0, nil, []byte{1, 'x'}),                                    // ack frame with data
	} {
		before := ep.Stats().Malformed
		nc, ok := rawDial(t, ep.Addr(), 0, 1, "job-secret")
		if !ok {
			t.Fatalf("case %d: handshake refused", i)
		}
		nc.Write(bad)
		if !closedByPeer(nc) {
			t.Errorf("case %d: connection kept after a malformed frame", i)
		}
		transporttest.WaitFor(t, "malformed counted", func() bool { return ep.Stats().Malformed > before })
	}
	if j.log.Find("malformed frame", "addr=127.0.0.1:", "rank 5") == "" {
		t.Error("no log line for the frame from rank 5")
	}
	// PE 0 reconnects (it dials PE 1) and traffic flows both ways.
	px.refusing.Store(false)
	j.send(0, 1, []int{10, 300000})
	j.send(1, 0, []int{20})
	j.waitReceived(t, 1, 0, 2)
	j.waitReceived(t, 0, 1, 1)
}

// FuzzTCPFrames feeds arbitrary bytes after a valid handshake: the
// endpoint must neither panic nor deliver anything it was not sent whole.
func FuzzTCPFrames(f *testing.F) {
	f.Add(frameBytes(0, 1, 0, nil, []byte("\x03abc")))
	f.Add(frameBytes(0, 1, 0, []byte("\x02"), []byte("ab")))
	f.Add(append(frameBytes(0, 1, 0, nil, []byte("\x05ab")), frameBytes(0, 2, 0, nil, []byte("cde"))...))
	f.Add(frameBytes(0, 0, 1, nil, nil))
	f.Fuzz(func(t *testing.T, input []byte) {
		j := newTCPJob(t, 2, nil, func(r int, real []string) []string {
			if r == 0 { // PE 0 dials nowhere: the test is PE 0
				return []string{real[0], "127.0.0.1:1"}
			}
			return real
		})
		ep := j.eps[1]
		nc, ok := rawDial(t, ep.Addr(), 0, 1, "job-secret")
		if !ok {
			t.Fatal("handshake refused")
		}
		nc.Write(input)
		nc.Close()
		ep.Post("done")
		transporttest.WaitFor(t, "the endpoint's loop", func() bool {
			ev := j.recs[1].Events()
			return len(ev) > 0 && ev[len(ev)-1] == "done"
		})
	})
}

// proxy forwards connections to target; cut closes every connection so
// far, as a network failure would. While refusing, it closes every
// connection it accepts.
type proxy struct {
	ln       net.Listener
	target   string
	refusing atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
	cuts     int
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			if p.refusing.Load() {
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.cuts++
}

// Connections cut mid-stream, from outside the endpoints, are dialed
// again and the core resends: every payload arrives once, in order.
func TestTCPConnectionCutMidStream(t *testing.T) {
	var px *proxy
	j := newTCPJob(t, 2, nil, func(r int, real []string) []string {
		if r == 0 {
			px = newProxy(t, real[1])
			return []string{real[0], px.ln.Addr().String()}
		}
		return real
	})
	rng := rand.New(rand.NewPCG(7, 8))
	choices := []int{0, 1, 100, 5000, 20000, 300000, 1 << 20}
	total := 0
	for range 20 {
		sizes := make([]int, 15)
		for i := range sizes {
			sizes[i] = choices[rng.IntN(len(choices))]
		}
		j.send(0, 1, sizes)
		j.send(1, 0, sizes)
		total += len(sizes)
		// Cut once some of it is through.
		transporttest.WaitFor(t, "progress", func() bool { return j.recs[1].Count(0) > total-len(sizes) || len(j.recs[1].Errors()) > 0 })
		px.cut()
	}
	j.waitReceived(t, 1, 0, total)
	j.waitReceived(t, 0, 1, total)
	transporttest.WaitFor(t, "backlogs drained", func() bool { return j.eps[0].Backlog() == 0 && j.eps[1].Backlog() == 0 })
	st := j.eps[0].Stats()
	t.Logf("PE 0 after %d cuts: %+v", px.cuts, st)
	if st.GoBacks == 0 {
		t.Error("no go-back after cut connections")
	}
}

// A peer closed for good: the others keep its frames unacknowledged and
// keep working; once forgotten, its backlog is dropped and nothing more
// is tried.
func TestTCPPeerClosedForGood(t *testing.T) {
	j := newTCPJob(t, 3, nil, nil)
	j.send(0, 2, []int{10})
	j.waitReceived(t, 2, 0, 1)
	j.eps[2].Close()
	j.eps[0].Post(transporttest.SendCommand(2, []int{1000, 2000}))
	j.send(0, 1, []int{30, 40})
	j.send(1, 0, []int{50})
	j.waitReceived(t, 1, 0, 2)
	j.waitReceived(t, 0, 1, 1)
	transporttest.WaitFor(t, "resends to the closed PE", func() bool { return j.eps[0].Stats().GoBacks > 0 })
	// What PE 1 received gets acknowledged; what PE 2 did not, not.
	transporttest.WaitFor(t, "backlog of the closed PE's payloads only", func() bool { return j.eps[0].Backlog() == 3000 })
	j.eps[0].Post(func() { j.eps[0].Forget(2) }) // as the scheduler does, from its handler
	transporttest.WaitFor(t, "backlog dropped", func() bool { return j.eps[0].Backlog() == 0 })
	start := time.Now()
	j.eps[0].Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closing took %v after a peer left", d)
	}
}

// partsHandler sends, on each posted func, what the func sends, and
// passes the payloads it receives on.
type partsHandler struct{ got chan []byte }

func (h *partsHandler) Receive(from int, payload []byte) { h.got <- payload }
func (h *partsHandler) Event(ev any)                     { ev.(func())() }

// A payload sent in two parts arrives as one, whatever the sizes of the
// parts (the head copied into frames, the body sent from its own memory,
// beyond a frame in pieces); the sender may write the head at once.
func TestTCPSendParts(t *testing.T) {
	var eps [2]*transport.TCP
	var hs [2]*partsHandler
	var addrs []string
	for r := range eps {
		ep, err := transport.NewTCP(transport.Config{Rank: r, Size: 2, Secret: []byte("s")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		eps[r], hs[r] = ep, &partsHandler{got: make(chan []byte, 16)}
		addrs = append(addrs, ep.Addr())
	}
	for r, ep := range eps {
		if err := ep.Start(addrs, hs[r]); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct{ head, body int }{{40, 512 << 10}, {100 << 10, 300 << 10}, {0, 3 << 20}, {10, 20}, {20 << 10, 0}, {5, 1<<20 - 100}} {
		want := make([]byte, c.head+c.body)
		for j := range want {
			want[j] = byte(j*13 + i)
		}
		head := append([]byte(nil), want[:c.head]...)
		eps[0].Post(func() {
			eps[0].SendParts(1, head, want[c.head:])
			for j := range head {
				head[j] = 0
			}
			eps[0].Flush()
		})
		select {
		case got := <-hs[1].got:
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d (%d+%d bytes): got %d bytes, not the payload", i, c.head, c.body, len(got))
			}
		case <-time.After(time.Minute):
			t.Fatalf("case %d: nothing arrived", i)
		}
	}
}

// keepHandler keeps every payload it receives and reports it.
type keepHandler struct{ got chan []byte }

func (h *keepHandler) Receive(from int, payload []byte) { h.got <- payload }
func (h *keepHandler) Event(ev any)                     { ev.(func())() }

// The readers' buffers are recycled once nothing refers to them (see
// recvPool): payloads the handler keeps stay intact while the receiver
// reads many more, big and small, with collections between them, and
// payloads it dropped leave their buffers for new frames.
func TestTCPKeptPayloadsSurviveRecycling(t *testing.T) {
	var eps [2]*transport.TCP
	h := &keepHandler{got: make(chan []byte, 1)}
	var addrs []string
	for r := range eps {
		ep, err := transport.NewTCP(transport.Config{Rank: r, Size: 2, Secret: []byte("s")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		eps[r] = ep
		addrs = append(addrs, ep.Addr())
	}
	if err := eps[0].Start(addrs, &partsHandler{got: make(chan []byte, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := eps[1].Start(addrs, h); err != nil {
		t.Fatal(err)
	}
	sizes := []int{512 << 10, 100, 40 << 10, 512 << 10, 3000, 200 << 10}
	var kept [][]byte
	var keptIdx []int
	for i := range 120 {
		size := sizes[i%len(sizes)]
		want := transport.MakeTestPayload(0, i, size)
		eps[0].Post(func() {
			eps[0].Send(1, want)
			eps[0].Flush()
		})
		var got []byte
		select {
		case got = <-h.got:
		case <-time.After(time.Minute):
			t.Fatalf("payload %d: nothing arrived", i)
		}
		if err := transport.CheckTestPayload(0, i, size, got); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			kept, keptIdx = append(kept, got), append(keptIdx, i)
		}
		if i%10 == 0 {
			runtime.GC()
		}
	}
	for k, p := range kept {
		i := keptIdx[k]
		if err := transport.CheckTestPayload(0, i, sizes[i%len(sizes)], p); err != nil {
			t.Errorf("kept payload changed after later frames: %v", err)
		}
	}
}
