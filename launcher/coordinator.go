package launcher

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// ErrPEFailed reports that a PE of the job died; the job was stopped.
var ErrPEFailed = errors.New("launcher: a PE failed")

// coordinatorConfig describes the job a coordinator runs.
type coordinatorConfig struct {
	App              string
	Args             []string
	Size             int
	Secret           []byte
	JobID            uint64
	HeartbeatTimeout time.Duration
	QuiescenceEvery  time.Duration
	Protocol         logging.Kind
	// Output receives the job's output lines; Log the launcher's reports.
	Output io.Writer
	Log    *slog.Logger
	// Spawned tells, per rank, whether the launcher started that PE (its
	// exit is then reported through processExited).
	Spawned []bool
}

// coordinator admits the PEs of one job, wires them together, runs
// quiescence detection, relays output and exit, and detects failures.
type coordinator struct {
	cfg    coordinatorConfig
	ln     net.Listener
	events chan any
	peers  []*peer
}

type peer struct {
	rank     int
	conn     *conn
	hello    *controlpb.Hello
	ready    bool
	lastSeen time.Time
	gone     bool
}

type (
	evJoined struct {
		conn  *conn
		hello *controlpb.Hello
	}
	evMessage struct {
		rank int
		msg  *controlpb.ToCoordinator
	}
	evLost struct {
		rank int
		err  error
	}
	// processExited is sent by the spawner when a PE process ends.
	processExited struct {
		rank  int
		pid   int
		state *os.ProcessState
		err   error
	}
	evTick struct{}
)

func newCoordinator(cfg coordinatorConfig, ln net.Listener) *coordinator {
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 5 * time.Second
	}
	if cfg.QuiescenceEvery <= 0 {
		cfg.QuiescenceEvery = 10 * time.Millisecond
	}
	if cfg.Spawned == nil {
		cfg.Spawned = make([]bool, cfg.Size)
	}
	return &coordinator{cfg: cfg, ln: ln, events: make(chan any, 256), peers: make([]*peer, cfg.Size)}
}

func (c *coordinator) post(ctx context.Context, ev any) {
	select {
	case c.events <- ev:
	case <-ctx.Done():
	}
}

func (c *coordinator) acceptLoop(ctx context.Context) {
	for {
		raw, err := c.ln.Accept()
		if err != nil {
			return
		}
		go c.admit(ctx, raw)
	}
}

// admit authenticates a new connection and hands it to the main loop.
func (c *coordinator) admit(ctx context.Context, raw net.Conn) {
	cn := newConn(raw)
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("launcher: no randomness: %v", err))
	}
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	refuse := func(why string) {
		c.cfg.Log.Warn("refused connection", "peer", raw.RemoteAddr().String(), "reason", why)
		cn.close()
	}
	if err := cn.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Challenge{Challenge: &controlpb.Challenge{Nonce: nonce}}}); err != nil {
		refuse(err.Error())
		return
	}
	var m controlpb.ToCoordinator
	if err := cn.recv(&m); err != nil {
		refuse("no hello: " + err.Error())
		return
	}
	hello := m.GetHello()
	if hello == nil {
		refuse("first message is not a hello")
		return
	}
	if !hmac.Equal(hello.Mac, helloMAC(c.cfg.Secret, nonce)) {
		refuse("wrong job secret")
		return
	}
	if hello.Rank < 0 || int(hello.Rank) >= c.cfg.Size || (hello.Size != 0 && int(hello.Size) != c.cfg.Size) {
		refuse(fmt.Sprintf("rank %d of %d, job has %d PEs", hello.Rank, hello.Size, c.cfg.Size))
		return
	}
	raw.SetDeadline(time.Time{})
	c.post(ctx, evJoined{conn: cn, hello: hello})
}

func (c *coordinator) readLoop(ctx context.Context, rank int, cn *conn) {
	for {
		m := new(controlpb.ToCoordinator)
		if err := cn.recv(m); err != nil {
			c.post(ctx, evLost{rank: rank, err: err})
			return
		}
		c.post(ctx, evMessage{rank: rank, msg: m})
	}
}

func (c *coordinator) sendAll(m *controlpb.ToPE) {
	for _, p := range c.peers {
		if p != nil && !p.gone {
			p.conn.send(m)
		}
	}
}

// run drives the job to its end and returns its exit status.
func (c *coordinator) run(ctx context.Context) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.acceptLoop(ctx)
	defer c.ln.Close()
	defer func() {
		for _, p := range c.peers {
			if p != nil {
				p.conn.close()
			}
		}
	}()

	ticker := time.NewTicker(c.cfg.QuiescenceEvery)
	defer ticker.Stop()
	joined, ready := 0, 0
	running := false
	qd := scheduler.NewQuiescenceDetector(c.cfg.Size)
	roundOpen := false
	var askers []int
	// A PE whose connection broke may be a spawned process about to be
	// reported by the spawner with how it died; give it a moment.
	lostAt := map[int]time.Time{}
	lostErr := map[int]error{}

	fail := func(rank int, how string) (int, error) {
		p := c.peers[rank]
		where := ""
		if p != nil && p.hello != nil {
			where = fmt.Sprintf(" (pid %d on %s)", p.hello.Pid, p.hello.Host)
		}
		err := fmt.Errorf("%w: PE %d%s %s", ErrPEFailed, rank, where, how)
		c.cfg.Log.Error("PE failed; stopping the job (no recovery configured)", "pe", rank, "detail", fmt.Sprintf("PE %d%s %s", rank, where, how))
		c.sendAll(&controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: 1}}})
		return 1, err
	}

	for {
		select {
		case <-ctx.Done():
			c.sendAll(&controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: 1}}})
			return 1, ctx.Err()
		case <-ticker.C:
			now := time.Now()
			for rank, at := range lostAt {
				if now.Sub(at) > 300*time.Millisecond {
					return fail(rank, fmt.Sprintf("lost its connection to the launcher: %v", lostErr[rank]))
				}
			}
			if running {
				for _, p := range c.peers {
					if !c.cfg.Spawned[p.rank] && now.Sub(p.lastSeen) > c.cfg.HeartbeatTimeout {
						return fail(p.rank, fmt.Sprintf("missed heartbeats for %v", now.Sub(p.lastSeen).Round(time.Millisecond)))
					}
				}
				if !roundOpen {
					roundOpen = true
					round := qd.StartRound()
					c.sendAll(&controlpb.ToPE{Msg: &controlpb.ToPE_Probe{Probe: &controlpb.Probe{Round: round}}})
				}
			}
		case ev := <-c.events:
			switch ev := ev.(type) {
			case evJoined:
				r := int(ev.hello.Rank)
				if c.peers[r] != nil {
					c.cfg.Log.Warn("refused connection", "peer", ev.conn.raw.RemoteAddr().String(), "reason", fmt.Sprintf("rank %d already joined", r))
					ev.conn.close()
					continue
				}
				c.peers[r] = &peer{rank: r, conn: ev.conn, hello: ev.hello, lastSeen: time.Now()}
				go c.readLoop(ctx, r, ev.conn)
				joined++
				if joined == c.cfg.Size {
					addrs := make([]string, c.cfg.Size)
					for i, p := range c.peers {
						addrs[i] = p.hello.TransportAddr
					}
					for i, p := range c.peers {
						p.conn.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Setup{Setup: &controlpb.Setup{
							Rank: int32(i), Size: int32(c.cfg.Size), JobId: c.cfg.JobID,
							App: c.cfg.App, Args: c.cfg.Args, TransportAddrs: addrs, Protocol: protocolName(c.cfg.Protocol),
						}}})
					}
				}
			case evMessage:
				p := c.peers[ev.rank]
				p.lastSeen = time.Now()
				switch m := ev.msg.Msg.(type) {
				case *controlpb.ToCoordinator_Ready:
					if !p.ready {
						p.ready = true
						ready++
					}
					if ready == c.cfg.Size {
						running = true
						c.cfg.Log.Info("all PEs ready; job begins", "pes", c.cfg.Size)
						c.sendAll(&controlpb.ToPE{Msg: &controlpb.ToPE_Begin{Begin: &controlpb.Begin{}}})
					}
				case *controlpb.ToCoordinator_Output:
					fmt.Fprintln(c.cfg.Output, m.Output.Line)
				case *controlpb.ToCoordinator_Exit:
					status := int(m.Exit.Status)
					c.sendAll(&controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: int32(status)}}})
					return status, nil
				case *controlpb.ToCoordinator_Idle:
					complete, quiescent := qd.Reply(ev.rank, m.Idle.Round, m.Idle.Sent, m.Idle.Received)
					if !complete {
						continue
					}
					roundOpen = false
					if !quiescent {
						continue
					}
					if len(askers) == 0 {
						c.sendAll(&controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: 1}}})
						return 1, scheduler.ErrQuiescentWithoutExit
					}
					for _, r := range askers {
						c.peers[r].conn.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Quiescence{Quiescence: &controlpb.QuiescenceDetected{}}})
					}
					askers = nil
					qd.Reset()
				case *controlpb.ToCoordinator_Quiescence:
					if !slices.Contains(askers, ev.rank) {
						askers = append(askers, ev.rank)
					}
				case *controlpb.ToCoordinator_Heartbeat:
				case *controlpb.ToCoordinator_Failed:
					return fail(ev.rank, "reported an error: "+m.Failed.Error)
				default:
					c.cfg.Log.Warn("unexpected control message", "pe", ev.rank, "type", fmt.Sprintf("%T", m))
				}
			case evLost:
				p := c.peers[ev.rank]
				p.gone = true
				if c.cfg.Spawned[ev.rank] {
					lostAt[ev.rank] = time.Now()
					lostErr[ev.rank] = ev.err
					continue
				}
				return fail(ev.rank, fmt.Sprintf("lost its connection to the launcher: %v", ev.err))
			case processExited:
				return fail(ev.rank, describeExit(ev))
			}
		}
	}
}

func describeExit(ev processExited) string {
	if ev.err != nil && ev.state == nil {
		return fmt.Sprintf("(pid %d) could not be waited for: %v", ev.pid, ev.err)
	}
	return fmt.Sprintf("(pid %d) %s", ev.pid, exitHow(ev.state))
}
