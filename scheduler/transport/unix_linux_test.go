package transport_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/transporttest"
)

// unixName is the Unix socket an endpoint listening on TCP address addr
// listens on too.
func unixName(addr string) string { return "@gochare-pe " + addr }

// sendMixed sends payloads of mixed sizes, up to several frames, between
// every pair of j's PEs both ways and waits for all of them.
func sendMixed(t *testing.T, j *tcpJob) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	choices := []int{0, 1, 64, 5000, 20000, 300000, 3 << 20}
	n := len(j.eps)
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			sizes := make([]int, 12)
			for i := range sizes {
				sizes[i] = choices[rng.IntN(len(choices))]
			}
			j.send(from, to, sizes)
		}
	}
	for from := range n {
		for to := range n {
			if from != to {
				j.waitReceived(t, to, from, 12)
			}
		}
	}
}

// waitConns waits until PE r counts unix connections over Unix sockets
// and tcp over TCP, and checks that it counts no more.
func waitConns(t *testing.T, j *tcpJob, r int, unix, tcp uint64) {
	t.Helper()
	transporttest.WaitFor(t, fmt.Sprintf("PE %d's connections", r), func() bool {
		st := j.eps[r].Stats()
		return st.UnixConns >= unix && st.TCPConns >= tcp
	})
	if st := j.eps[r].Stats(); st.UnixConns != unix || st.TCPConns != tcp {
		t.Errorf("PE %d: %d connections over Unix sockets and %d over TCP, want %d and %d", r, st.UnixConns, st.TCPConns, unix, tcp)
	}
}

// PEs on one host connect over their Unix sockets, and payloads of every
// size go through exactly once, in order.
func TestTCPSameHostConnectsOverUnix(t *testing.T) {
	j := newTCPJob(t, 3, nil, nil)
	sendMixed(t, j)
	for r := range 3 {
		waitConns(t, j, r, 2, 0)
	}
	if j.log.Find("transport: connected", `addr="unix socket, pid `) == "" {
		t.Error("no connection logged as a Unix socket with the peer's pid")
	}
}

// With TCPOnly the endpoints neither listen on a Unix socket nor dial
// one; with it on one PE only, that PE's connections are TCP and the
// others' between themselves Unix.
func TestTCPOnly(t *testing.T) {
	t.Run("all", func(t *testing.T) {
		j := newTCPJobWith(t, 3, func(r int, cfg *transport.Config) { cfg.TCPOnly = true }, nil)
		sendMixed(t, j)
		for r := range 3 {
			waitConns(t, j, r, 0, 2)
			_, err := net.Dial("unix", unixName(j.eps[r].Addr()))
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("PE %d: dialing its Unix socket: %v, want connection refused (no listener)", r, err)
			}
		}
	})
	t.Run("one", func(t *testing.T) {
		j := newTCPJobWith(t, 3, func(r int, cfg *transport.Config) { cfg.TCPOnly = r == 1 }, nil)
		sendMixed(t, j)
		waitConns(t, j, 0, 1, 1) // to 1 over TCP, to 2 over Unix
		waitConns(t, j, 1, 0, 2)
		waitConns(t, j, 2, 1, 1)
	})
}

// A stranger connecting to an endpoint's Unix socket is refused as on
// TCP: one speaking another protocol, one without the secret, one
// claiming a rank outside the job; logged as a Unix socket with its
// process, and counted. A PE of the job is accepted there.
func TestTCPUnixRefusesStrangers(t *testing.T) {
	j := newTCPJob(t, 3, nil, nil)
	ep := j.eps[2]
	name := unixName(ep.Addr())
	waitConns(t, j, 2, 2, 0)
	before := ep.Stats().Refused

	junk, err := net.Dial("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	junk.Write([]byte("GET / HTTP/1.1\r\nHost: example.org\r\n\r\n"))
	if !closedByPeer(junk) {
		t.Error("a connection speaking HTTP was not closed")
	}
	if nc, ok := rawDial(t, name, 0, 2, "another job"); ok || !closedByPeer(nc) {
		t.Error("a dialer with the wrong secret was accepted")
	}
	if nc, ok := rawDial(t, name, 7, 2, "job-secret"); ok || !closedByPeer(nc) {
		t.Error("a dialer claiming rank 7 of 3 was accepted")
	}
	transporttest.WaitFor(t, "refusals counted", func() bool { return ep.Stats().Refused-before == 3 })
	pid := fmt.Sprintf(`addr="unix socket, pid %d `, os.Getpid())
	for _, reason := range []string{"not a gochare transport handshake", "does not know the job secret", "rank 7 dialing rank 2"} {
		if j.log.Find("refused connection", pid, reason) == "" {
			t.Errorf("no log line with the process for %q", reason)
		}
	}
	if _, ok := rawDial(t, name, 1, 2, "job-secret"); !ok {
		t.Error("a PE of the job with the secret was refused")
	}
	j.send(0, 2, []int{10, 100000})
	j.waitReceived(t, 2, 0, 2)
}

// freeTCPAddr returns a loopback address no one listens on now.
func freeTCPAddr(t *testing.T) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr)
}

// A process that took a PE's Unix socket name first (the abstract
// namespace is anyone's on the host) gets nothing from the job: the PE
// listens on TCP only and says so, and its peers, refused at the name,
// connect over TCP.
func TestTCPUnixSocketTakenByAnother(t *testing.T) {
	addr := freeTCPAddr(t)
	squat, err := net.Listen("unix", unixName(addr.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	got := make(chan int, 8)
	go func() {
		for {
			nc, err := squat.Accept()
			if err != nil {
				return
			}
			// What a stranger would do: hang up (or answer nonsense).
			go func() {
				b, _ := io.ReadAll(io.LimitReader(nc, 28))
				got <- len(b)
				nc.Close()
			}()
		}
	}()
	j := newTCPJobWith(t, 2, func(r int, cfg *transport.Config) {
		if r == 1 {
			cfg.Port = addr.Port
		}
	}, nil)
	j.send(0, 1, []int{10, 300000})
	j.send(1, 0, []int{20})
	j.waitReceived(t, 1, 0, 2)
	j.waitReceived(t, 0, 1, 1)
	waitConns(t, j, 0, 0, 1)
	waitConns(t, j, 1, 0, 1)
	if j.log.Find("cannot listen on the Unix socket", "rank=1") == "" {
		t.Error("PE 1 did not say it could not listen on its Unix socket")
	}
	if j.log.Find("no PE at the Unix socket of a peer", "rank=0", "peer=1") == "" {
		t.Error("PE 0 did not say why it connects to PE 1 over TCP")
	}
	if n := <-got; n != 28 {
		t.Errorf("the squatter read %d bytes, want the 28 of a hello", n)
	}
}

func init() { transporttest.Squat() }

// A PE does not talk to a process of another user at its peer's Unix
// socket name, not even the hello (such a process could relay the
// handshake to the real PE and read the frames): it hangs up and
// connects over TCP. Run as root (it starts a process as nobody).
func TestTCPUnixSocketOfAnotherUser(t *testing.T) {
	addr := freeTCPAddr(t)
	squatter := transporttest.StartSquatter(t, unixName(addr.String()))
	j := newTCPJobWith(t, 2, func(r int, cfg *transport.Config) {
		if r == 1 {
			cfg.Port = addr.Port
		}
	}, nil)
	j.send(0, 1, []int{10})
	j.waitReceived(t, 1, 0, 1)
	waitConns(t, j, 0, 0, 1)
	if j.log.Find("no PE at the Unix socket of a peer", "runs as user 65534") == "" {
		t.Error("PE 0 did not say it found another user's process at PE 1's Unix socket")
	}
	if n := squatter.Read(t); n != 0 {
		t.Errorf("the squatter got %d bytes from the PE", n)
	}
}
