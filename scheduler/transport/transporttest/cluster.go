package transporttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gochare/gochare/scheduler/transport"
)

// Tests run each PE in a child process (this test binary, see Main), as
// a job does: protoactor's remote.Start writes gRPC's global logger, which
// races with the gRPC goroutines of any other remote of the same process.
// So a test process starts at most one protoactor endpoint itself.

const peerEnv = "GOCHARE_TRANSPORT_TEST_PEER"

// Factory builds the endpoint under test.
type Factory func(transport.Config) (transport.Endpoint, error)

// Main is the TestMain of a package that runs the suite: in a child PE
// started by a test it runs that PE with newEndpoint, otherwise the tests.
// It returns the exit status.
func Main(m *testing.M, newEndpoint Factory) int {
	if spec := os.Getenv(peerEnv); spec != "" {
		return runTestPeer(spec, newEndpoint)
	}
	return m.Run()
}

// PeerOptions configures every PE of a test cluster.
type PeerOptions = peerOptions

type peerOptions struct {
	Rank, Size    int
	Secret        string
	MaxFrame      int
	Window        int
	ResendAfterMs int
	// DropEvery, when not 0, makes a PE drop every DropEvery-th data frame
	// it transmits, once per sequence number.
	DropEvery int
	// Gate makes the PE's handler block on its first payload until the
	// test releases it.
	Gate bool
	// ManualTicks makes the PE tick only on the TICK command.
	ManualTicks bool
	// ProtoActorLog sets Config.ProtoActorLog.
	ProtoActorLog bool
}

func (o peerOptions) config(logger *slog.Logger) transport.Config {
	cfg := transport.Config{
		Rank: o.Rank, Size: o.Size, Host: "127.0.0.1",
		Secret:   []byte(o.Secret),
		MaxFrame: o.MaxFrame, Window: o.Window,
		ResendAfter: time.Duration(o.ResendAfterMs) * time.Millisecond,
		Logger:      logger, ProtoActorLog: o.ProtoActorLog,
	}
	if len(cfg.Secret) == 0 {
		cfg.Secret = []byte("test-secret")
	}
	if o.DropEvery > 0 {
		dropped := make(map[uint64]bool) // used by the endpoint goroutine only
		n := 0
		cfg.DropOutgoing = func(to int, seq uint64) bool {
			n++
			if n%o.DropEvery == 0 && !dropped[seq] {
				dropped[seq] = true
				return true
			}
			return false
		}
	}
	return cfg
}

// runTestPeer is the main of a child PE: it prints its address, reads the
// peers' addresses and then commands on stdin, and answers on stdout.
func runTestPeer(spec string, newEndpoint Factory) int {
	var o peerOptions
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		fmt.Fprintln(os.Stderr, "bad peer spec:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := o.config(logger)
	ticks := make(chan time.Time)
	if o.ManualTicks {
		cfg.Ticks = ticks
	}
	ep, err := newEndpoint(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	rec := newRecorder(o.Rank, o.Size)
	rec.ep = ep
	var peers []string
	if o.Gate {
		rec.gate, rec.entered = make(chan struct{}), make(chan struct{})
		go func() {
			<-rec.entered
			say("ENTERED")
		}()
	}
	say("ADDR %s", ep.Addr())
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	for in.Scan() {
		op, arg, _ := strings.Cut(in.Text(), " ")
		var cmd struct {
			Peer  int
			Sizes []int
		}
		if op == "SEND" || op == "PLAN" || op == "LOSE" {
			if err := json.Unmarshal([]byte(arg), &cmd); err != nil {
				fmt.Fprintln(os.Stderr, "bad command:", err)
				return 2
			}
		}
		switch op {
		case "PEERS":
			peers = strings.Fields(arg)
			if err := ep.Start(peers, rec); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		case "SEND":
			ep.Post(sendCmd{to: cmd.Peer, sizes: cmd.Sizes})
		case "PLAN":
			rec.plan(cmd.Peer, cmd.Sizes)
		case "REPORT":
			js, _ := json.Marshal(rec.report())
			say("REPORT %s", js)
		case "RELEASE":
			close(rec.gate)
		case "TICK":
			ticks <- time.Time{}
		case "LOSE":
			// Break the connection to the peer, as a network failure
			// would: what it held is lost.
			ep.(connectionDropper).DropConnection(cmd.Peer)
		case "EXIT":
			ep.Close()
			return 0
		}
	}
	ep.Close()
	return 0
}

// peerProc is a child PE seen from the test.
type peerProc struct {
	t       testing.TB
	rank    int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	addr    chan string
	reports chan string
	entered chan struct{}
	readers sync.WaitGroup
	killed  bool
	stopped sync.Once
}

// kill ends the child PE with SIGKILL, as a failure would.
func (p *peerProc) kill() {
	p.killed = true
	p.cmd.Process.Kill()
}

func startPeer(t testing.TB, o peerOptions, tl *TestLog) *peerProc {
	t.Helper()
	spec, _ := json.Marshal(o)
	p := &peerProc{
		t: t, rank: o.Rank,
		cmd:  exec.Command(os.Args[0], "-test.run=^$"),
		addr: make(chan string, 1), reports: make(chan string, 1), entered: make(chan struct{}),
	}
	p.cmd.Env = append(os.Environ(), peerEnv+"="+string(spec))
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.readers.Add(2)
	go func() {
		defer p.readers.Done()
		lines := bufio.NewScanner(stderr)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			fmt.Fprintf(tl, "PE %d: %s\n", o.Rank, lines.Text())
		}
	}()
	go func() {
		defer p.readers.Done()
		lines := bufio.NewScanner(stdout)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			kind, rest, _ := strings.Cut(lines.Text(), " ")
			switch kind {
			case "ADDR":
				p.addr <- rest
			case "REPORT":
				p.reports <- rest
			case "ENTERED":
				close(p.entered)
			default:
				fmt.Fprintf(tl, "PE %d stdout: %s\n", o.Rank, lines.Text())
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *peerProc) send(line string) {
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Errorf("PE %d: command %.40q: %v", p.rank, line, err)
	}
}

func (p *peerProc) stop() { p.stopped.Do(p.stopOnce) }

func (p *peerProc) stopOnce() {
	if !p.killed {
		p.send("EXIT")
	}
	p.stdin.Close()
	done := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.t.Errorf("PE %d did not exit; killing it", p.rank)
		p.cmd.Process.Kill()
		<-done
	}
	if err := p.cmd.Wait(); err != nil && !p.killed {
		p.t.Errorf("PE %d: %v (a race report exits with status 66)", p.rank, err)
	}
}

func (p *peerProc) report() peerReport {
	p.send("REPORT")
	select {
	case js := <-p.reports:
		var rep peerReport
		if err := json.Unmarshal([]byte(js), &rep); err != nil {
			p.t.Fatalf("PE %d: report %q: %v", p.rank, js, err)
		}
		return rep
	case <-time.After(20 * time.Second):
		p.t.Fatalf("PE %d: no report", p.rank)
		return peerReport{}
	}
}

// cluster is a job of n PEs, each a child process.
type cluster struct {
	t       testing.TB
	peers   []*peerProc // by rank
	log     *TestLog
	planned [][]int // planned[to][from]: payloads planned
}

// newCluster starts n PEs with options o; tune, when not nil, adjusts the
// options of each rank.
func newCluster(t testing.TB, n int, o peerOptions, tune func(*peerOptions)) *cluster {
	t.Helper()
	_, tl := newTestLog(t)
	c := &cluster{t: t, log: tl, planned: make([][]int, n)}
	for r := range n {
		c.planned[r] = make([]int, n)
	}
	for r := range n {
		po := o
		po.Rank, po.Size = r, n
		if tune != nil {
			tune(&po)
		}
		c.peers = append(c.peers, startPeer(t, po, tl))
	}
	var addrs []string
	for _, p := range c.peers {
		select {
		case a := <-p.addr:
			addrs = append(addrs, a)
		case <-time.After(20 * time.Second):
			t.Fatalf("PE %d did not start", p.rank)
		}
	}
	for _, p := range c.peers {
		p.send("PEERS " + strings.Join(addrs, " "))
	}
	return c
}

func (c *cluster) command(rank int, op string, peer int, sizes []int) {
	js, _ := json.Marshal(struct {
		Peer  int
		Sizes []int
	}{peer, sizes})
	c.peers[rank].send(op + " " + string(js))
}

func (c *cluster) send(from, to int, sizes []int) {
	c.planned[to][from] += len(sizes)
	c.command(to, "PLAN", from, sizes)
	c.report(to) // the receiver has the plan before the first payload can come
	c.command(from, "SEND", to, sizes)
}

func (c *cluster) report(rank int) peerReport { return c.peers[rank].report() }

// waitDelivered waits until every planned payload arrived and every
// backlog is acknowledged, and fails on any error a PE saw.
func (c *cluster) waitDelivered() {
	c.t.Helper()
	for rank := range c.planned {
		var rep peerReport
		waitFor(c.t, fmt.Sprintf("PE %d to receive %v and drain its backlog", rank, c.planned[rank]), func() bool {
			rep = c.report(rank)
			if len(rep.Errors) > 0 {
				return true
			}
			for from, n := range c.planned[rank] {
				if rep.Received[from] < n {
					return false
				}
			}
			return rep.Backlog == 0
		})
		for _, e := range rep.Errors {
			c.t.Error(e)
		}
		for from, n := range c.planned[rank] {
			if rep.Received[from] != n {
				c.t.Errorf("PE %d received %d payloads from %d, want %d", rank, rep.Received[from], from, n)
			}
		}
	}
	if c.t.Failed() {
		c.t.FailNow()
	}
}

// connectionDropper is an endpoint that can break its connection to a peer
// on purpose (ProtoActor, TCP).
type connectionDropper interface{ DropConnection(peer int) }

// StartPeer starts one child PE with options o, logging to tl; Addr
// returns its address once it listens.
func StartPeer(t testing.TB, o PeerOptions, tl *TestLog) *PeerProc { return startPeer(t, o, tl) }

// PeerProc is a child PE.
type PeerProc = peerProc

// Addr waits for the PE's address.
func (p *peerProc) Addr(t testing.TB) string {
	select {
	case a := <-p.addr:
		return a
	case <-time.After(20 * time.Second):
		t.Fatal("PE did not start")
		return ""
	}
}

// Stop ends the PE and waits until its output is read.
func (p *peerProc) Stop() { p.stop() }
