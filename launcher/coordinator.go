package launcher

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	// Imported as coord: the launcher's tests name a running job "job".
	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// ErrPEFailed reports that a PE of the job died; the job was stopped.
var ErrPEFailed = errors.New("launcher: a PE failed")

// ErrHandlersDiffer reports a PE whose program declares other collections
// or handlers than the launcher's: their binaries were built from other
// sources, and could not exchange messages.
var ErrHandlersDiffer = errors.New("launcher: PEs declare different handlers")

// coordinatorConfig describes the job a coordinator runs.
type coordinatorConfig struct {
	App    string
	Args   []string
	Size   int
	Secret []byte
	// TLS, when not nil, is the configuration of the listener (--tls): a
	// connection that does not complete a mutual TLS handshake with a PE
	// certificate of the job is refused and logged.
	TLS              *tls.Config
	JobID            uint64
	HeartbeatTimeout time.Duration
	QuiescenceEvery  time.Duration
	// StallTimeout is how long the job may make no progress before it
	// stops with a diagnosis (coord.Coordinator.CheckStall).
	StallTimeout time.Duration
	// JoinTimeout bounds the time a spawned PE takes to join and be ready.
	JoinTimeout time.Duration
	Protocol    logging.Kind
	// Transport is the name of the PE-to-PE transport every PE must run
	// (--transport); a PE that runs another is refused at join.
	Transport string
	// HandlerDigest is the digest of the job's declarations in the
	// launcher (actor.Job.Digest); a PE whose own differs stops the job
	// before it begins ("": not checked).
	HandlerDigest string
	// Output receives the job's output lines; Log the launcher's reports.
	Output io.Writer
	Log    *slog.Logger
	// Spawned tells, per rank, whether the launcher started that PE (its
	// exit is then reported through processExited).
	Spawned []bool
	// Layout is the initial place of every task (scheduler.Layout).
	Layout          [][]int
	CheckpointEvery uint64
	// CheckAnnotations is --check-annotations (0: off): sent to the PEs.
	CheckAnnotations int
	// LogLimit is coord.Config.LogLimit (0: every sync point checkpoints),
	// LogPerCheckpoint and MTBF the same as coord.Config's.
	LogLimit         int
	LogPerCheckpoint int
	MTBF             time.Duration
	CheckpointDir    string
	Spread           int
	// Kills are the failures to inject (--kill).
	Kills []kill
	// Restart, if set, holds per PE the task records of a disk checkpoint
	// the job starts from; RestartEpoch is that checkpoint's epoch.
	Restart      [][]migrate.TaskRecord
	RestartEpoch uint64
	// Balancer is the load balancer run at sync points ("", greedy, refine).
	Balancer string
	// TraceFile, if set, is where the job's trace goes (see trace.go).
	TraceFile string
	// RecordDir, if set, is where the PEs record their tasks' runs
	// (--record, for gochare replay).
	RecordDir string
	trace     *tracer
	// Loggers is the number of logger processes (logger.go);
	// LoggerSpawned tells, per logger, whether the launcher started it.
	Loggers       int
	LoggerSpawned []bool
	// LogQuota, if above 0, bounds each PE's sender log (--log-quota):
	// the PEs dump to the loggers (dumpstream.go).
	LogQuota int
	// EventLogger makes the loggers event loggers (--event-logger,
	// eventlogstream.go).
	EventLogger bool
	// Failures is the protocol's f (--failures; 0: the default), given
	// to every PE in its Setup and to the job's coordinator.
	Failures int
}

// coordinator is the launcher's process side of one job: it admits the
// PEs and wires them together, relays output, detects failures, and
// drives the job's coordinator (coord.Coordinator, which decides),
// carrying out its commands (it is its coord.Driver).
type coordinator struct {
	cfg    coordinatorConfig
	ln     net.Listener
	events chan any
	peers  []*peer
	// printed writes each line of the job's output once (tasks that
	// re-execute print theirs again).
	printed coord.OutputFilter
	// failure is the error that ends the job, if a PE's failure does.
	failure error
	// stopping is set once the job exits normally: PEs ending then are no
	// failures.
	stopping bool
	stats    map[int]*controlpb.PEStats
	// judge tells when a PE's silence is too long.
	judge silenceJudge
	// killProcess sends a signal to a spawned PE (failure injection, and
	// to make sure a PE declared dead is).
	killProcess func(rank int, sig syscall.Signal) (pid int, err error)
	// restartPE starts a spawned PE again and currentPID is its process
	// now (a PE that failed before every PE joined, see maxRestarts).
	restartPE  func(rank int) (pid int, err error)
	currentPID func(rank int) int
	restarts   map[int]int

	// Before the job begins: joined, ready and restarted (from a disk
	// checkpoint) count PEs; setupSent says every PE joined and got its
	// setup; earlyDead are the PEs that failed after that but before the
	// job began (it begins without them once the others are ready);
	// startedAt is when the PEs were started, for the join timeout.
	joined, ready, restarted int
	setupSent                bool
	earlyDead                []int
	startedAt                time.Time
	// created is when the coordinator was made (sinceStart).
	created time.Time
	// lostAt and lostErr: the PEs whose connection broke, waiting for
	// the report of their process's end (exitReportGrace).
	lostAt  map[int]time.Time
	lostErr map[int]error

	// core is the job's coordinator, once every PE still alive is ready;
	// pending are its commands not yet carried out (see perform).
	core       *coord.Coordinator
	pending    []coord.Command
	performing bool
	// timeline follows the job's milestones for the log, the trace and
	// the recovery reports.
	timeline timeline

	// Loggers (logger.go): loggers by number (nil until joined);
	// deadLoggers those declared dead; loggerLostAt and loggerLostErr as
	// lostAt and lostErr; killLogger signals a spawned logger.
	loggers       []*peer
	deadLoggers   []int
	loggerLostAt  map[int]time.Time
	loggerLostErr map[int]error
	killLogger    func(l int, sig syscall.Signal) (pid int, err error)
}

// maxRestarts bounds how often a spawned PE that fails before every PE
// joined is started again (a PE that cannot start at all must end the
// job, not loop).
const maxRestarts = 3

type peer struct {
	rank int
	// logger: the peer is logger number rank, not a PE.
	logger bool
	conn   *conn
	out    *outbox
	hello  *controlpb.Hello
	ready  bool
	// doomed: a kill fired at it before the job began; its Ready, sent
	// before the kill took effect, does not count, so that the job
	// begins without it once its end is noticed.
	doomed bool
	// gone: declared dead, for good; ignored: its late messages were
	// logged once; exited: its process ended (spawned PEs).
	gone, ignored, exited bool
	// seen is when the last message from the PE was read (unix ns, set
	// by its reader); maxGap the longest silence between two, once
	// watched (heartbeats started).
	seen, maxGap atomic.Int64
	watched      atomic.Bool
}

func (p *peer) send(m *controlpb.ToPE) { p.out.send(m) }

type (
	evJoined struct {
		conn  *conn
		hello *controlpb.Hello
	}
	// evMessage and evLost come from the reader of peer's connection: a
	// PE started again before the job began is another peer.
	evMessage struct {
		rank int
		peer *peer
		msg  *controlpb.ToCoordinator
	}
	evLost struct {
		rank int
		peer *peer
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
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = coord.DefaultStallTimeout
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = 30 * time.Second
	}
	if cfg.Spawned == nil {
		cfg.Spawned = make([]bool, cfg.Size)
	}
	if cfg.LoggerSpawned == nil {
		cfg.LoggerSpawned = make([]bool, cfg.Loggers)
	}
	return &coordinator{loggers: make([]*peer, cfg.Loggers), loggerLostAt: map[int]time.Time{}, loggerLostErr: map[int]error{},
		cfg: cfg, ln: ln, restarts: map[int]int{}, events: make(chan any, 256), peers: make([]*peer, cfg.Size), stats: map[int]*controlpb.PEStats{},
		judge: silenceJudge{bound: cfg.HeartbeatTimeout}, lostAt: map[int]time.Time{}, lostErr: map[int]error{}, created: time.Now()}
}

// sinceStart is the job coordinator's clock (coord.Config.Now): the time
// since this coordinator was made, on the monotonic clock.
func (c *coordinator) sinceStart() time.Duration { return time.Since(c.created) }

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
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("launcher: no randomness: %v", err))
	}
	// A connection has until the join timeout to say hello: a PE just
	// started on a loaded machine (many PEs starting at once) may take
	// longer than a few seconds, and the join timeout bounds it anyway.
	raw.SetDeadline(time.Now().Add(max(10*time.Second, c.cfg.JoinTimeout)))
	refuse := func(why string) {
		c.cfg.Log.Warn("refused connection", "peer", raw.RemoteAddr().String(), "reason", why)
		raw.Close()
	}
	control := raw
	if c.cfg.TLS != nil {
		tc := tls.Server(raw, c.cfg.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			refuse("TLS: " + err.Error())
			return
		}
		control = tc
	}
	cn := newConn(control)
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
	// Authenticated: a PE refused from here on is told why.
	tell := func(why string) {
		cn.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Refused{Refused: &controlpb.Refused{Reason: why}}})
		refuse(why)
	}
	if hello.Logger {
		if hello.Rank < 0 || int(hello.Rank) >= c.cfg.Loggers || (hello.Size != 0 && int(hello.Size) != c.cfg.Size) {
			tell(fmt.Sprintf("logger %d of a job of %d PEs, the job has %d loggers and %d PEs (--loggers, --pes)", hello.Rank, hello.Size, c.cfg.Loggers, c.cfg.Size))
			return
		}
		raw.SetDeadline(time.Time{})
		c.post(ctx, evJoined{conn: cn, hello: hello})
		return
	}
	if hello.Rank < 0 || int(hello.Rank) >= c.cfg.Size || (hello.Size != 0 && int(hello.Size) != c.cfg.Size) {
		tell(fmt.Sprintf("rank %d of %d, job has %d PEs", hello.Rank, hello.Size, c.cfg.Size))
		return
	}
	if c.cfg.Transport != "" && hello.Transport != c.cfg.Transport {
		tell(fmt.Sprintf("PE %d runs the %q transport, the job runs %q (--transport)", hello.Rank, hello.Transport, c.cfg.Transport))
		return
	}
	raw.SetDeadline(time.Time{})
	c.post(ctx, evJoined{conn: cn, hello: hello})
}

// readLoop reads PE p's messages. Every message is a sign of life, noted
// here, so that a busy main loop cannot make a PE look silent; heartbeats
// go no further.
func (c *coordinator) readLoop(ctx context.Context, p *peer) {
	for {
		m := new(controlpb.ToCoordinator)
		if err := p.conn.recv(m); err != nil {
			c.post(ctx, evLost{rank: p.rank, peer: p, err: err})
			return
		}
		now := time.Now().UnixNano()
		if prev := p.seen.Swap(now); p.watched.Load() && now-prev > p.maxGap.Load() {
			p.maxGap.Store(now - prev)
		}
		if _, ok := m.Msg.(*controlpb.ToCoordinator_Heartbeat); ok {
			continue
		}
		c.post(ctx, evMessage{rank: p.rank, peer: p, msg: m})
	}
}

func (c *coordinator) sendAll(m *controlpb.ToPE) {
	for _, p := range c.peers {
		if p != nil && !p.gone {
			p.send(m)
		}
	}
}

// checkHeartbeats declares dead every PE silent for longer than the bound.
func (c *coordinator) checkHeartbeats(now time.Time, declare func(p *peer, silent time.Duration)) {
	if stalled := c.judge.tick(now); stalled > 0 {
		c.cfg.Log.Warn("the launcher was not running; heartbeat verdicts start again", "for_ms", stalled.Milliseconds())
	}
	for _, p := range c.peers {
		if p == nil || p.gone || !p.watched.Load() {
			continue
		}
		if last := time.Unix(0, p.seen.Load()); c.judge.dead(now, last) {
			declare(p, now.Sub(last))
		}
	}
}

// exitReportGrace is how long the launcher waits, after the control
// connection of a PE it started broke, for the spawner to report that
// PE's process ended. A broken connection is most often a process that
// died, and the exit report that follows within milliseconds says how
// (the signal or status), which the failure's log line should carry; a
// PE whose process does not end within the grace is declared dead on
// the broken connection alone. It only delays the verdict on a PE whose
// connection broke and whose process lives on (or whose exit report is
// late): silence is judged by the heartbeats. 1 s: under a load average
// of 17 on two cores the report of a SIGKILLed PE came more than 300 ms
// after its connection broke.
const exitReportGrace = time.Second

// run drives the job to its end and returns its exit status. It only
// dispatches: what PEs send goes to the job's coordinator (or, before
// the job begins, to admission), the coordinator's commands are carried
// out by the Driver methods below, and the tickers give it time.
func (c *coordinator) run(ctx context.Context) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The tracer is set once the coordinator is made.
	c.timeline = timeline{log: c.cfg.Log, trace: c.cfg.trace, pes: c.cfg.Size, protocol: c.cfg.Protocol, failures: c.cfg.Failures}
	go c.acceptLoop(ctx)
	defer c.ln.Close()
	defer c.reportUnfiredKills()
	defer func() {
		// The last messages (Stop) go out first, if the PE still reads.
		deadline := time.Now().Add(time.Second)
		c.stopLoggers()
		for _, p := range append(c.peers, c.loggers...) {
			if p != nil {
				p.out.close(deadline)
			}
		}
		c.reportHeartbeatGaps()
	}()

	ticker := time.NewTicker(c.cfg.QuiescenceEvery)
	defer ticker.Stop()
	stallWindow := c.cfg.StallTimeout / coord.StallChecks
	stallTicker := time.NewTicker(stallWindow)
	defer stallTicker.Stop()
	// A PE this launcher started must join and be ready within
	// JoinTimeout (heartbeats start only once it has joined): a PE
	// stopped or stuck before that would otherwise hold the job forever.
	c.startedAt = time.Now()
	for {
		if c.failure != nil && c.core == nil {
			c.sendAll(commandToPB(coord.Stop{Status: 1}))
			return 1, c.failure
		}
		if c.core != nil {
			if out, done := c.core.Done(); done {
				c.collectStats(ctx, c.core.Live())
				if c.failure != nil {
					return out.Status, c.failure
				}
				return out.Status, out.Err
			}
		}
		select {
		case <-ctx.Done():
			c.sendAll(commandToPB(coord.Stop{Status: 1}))
			return 1, ctx.Err()
		case <-stallTicker.C:
			if c.core != nil {
				c.perform(c.core.CheckStall(stallWindow, nil))
			}
		case <-ticker.C:
			c.tick(time.Now())
		case ev := <-c.events:
			switch ev := ev.(type) {
			case evJoined:
				if ev.hello.Logger {
					c.joinLogger(ctx, ev)
				} else {
					c.join(ctx, ev)
				}
			case evMessage:
				if ev.peer.logger {
					c.receiveLogger(ev)
				} else {
					c.receive(ev)
				}
			case evLost:
				if ev.peer.logger {
					c.lostLogger(ev)
				} else {
					c.lost(ev)
				}
			case processExited:
				c.exited(ev)
			case loggerExited:
				c.loggerEnded(ev)
			}
		}
	}
}

// tick is the launcher's periodic work: failure detection, a quiescence
// round, the join timeout before the job begins, time-based kills.
func (c *coordinator) tick(now time.Time) {
	for _, rank := range sortedRanks(c.lostAt) {
		if now.Sub(c.lostAt[rank]) > exitReportGrace {
			c.fail(rank, fmt.Sprintf("lost its connection to the launcher: %v", c.lostErr[rank]))
		}
	}
	c.checkHeartbeats(now, func(p *peer, silent time.Duration) {
		how := fmt.Sprintf("missed heartbeats: silent for %v (bound %v)", silent.Round(time.Millisecond), c.cfg.HeartbeatTimeout)
		if c.cfg.Spawned[p.rank] && c.killProcess != nil {
			how += "; killed with SIGKILL" // by fail, a stopped process too
		}
		c.fail(p.rank, how)
	})
	c.loggerTick(now)
	if c.core != nil {
		c.perform(c.core.Tick())
	} else if c.failure == nil && now.Sub(c.startedAt) > c.cfg.JoinTimeout {
		c.joinTimedOut(now)
	}
	c.killDue(now, c.timeline.began)
}

// joinTimedOut handles PEs that did not join and get ready within the
// join timeout: one stuck before every PE joined is killed and started
// again, as if it had died; later, the job cannot begin.
func (c *coordinator) joinTimedOut(now time.Time) {
	// The PEs that never joined hold the others back (they get their
	// setup once all have): name those first.
	late := -1
	for r, p := range c.peers {
		if c.cfg.Spawned[r] && p == nil {
			late = r
			break
		}
	}
	for r, p := range c.peers {
		if late < 0 && c.cfg.Spawned[r] && !p.ready {
			late = r
		}
	}
	switch {
	case late >= 0 && !c.setupSent && c.restartPE != nil && c.restarts[late] < maxRestarts:
		// Stuck before every PE joined (stopped, say): kill it and start
		// it again, as if it had died.
		if c.peers[late] == nil {
			c.killProcess(late, syscall.SIGKILL)
		}
		c.fail(late, fmt.Sprintf("did not join the job and get ready within %v of its start (--join-timeout); killed", c.cfg.JoinTimeout))
		c.startedAt = now
	case late >= 0:
		c.failure = fmt.Errorf("%w: PE %d did not join the job and get ready within %v of its start (--join-timeout); the job cannot begin without it", ErrPEFailed, late, c.cfg.JoinTimeout)
	}
}

// join admits an authenticated PE; once every PE has joined, each gets
// its setup.
func (c *coordinator) join(ctx context.Context, ev evJoined) {
	r := int(ev.hello.Rank)
	if p := c.peers[r]; p != nil {
		why := fmt.Sprintf("rank %d already joined", r)
		if p.gone {
			why = fmt.Sprintf("PE %d was declared dead: a failed PE never rejoins", r)
		}
		c.cfg.Log.Warn("refused connection", "peer", ev.conn.raw.RemoteAddr().String(), "reason", why)
		ev.conn.close()
		return
	}
	p := &peer{rank: r, conn: ev.conn, out: newOutbox(ev.conn), hello: ev.hello}
	c.peers[r] = p
	go c.readLoop(ctx, p)
	c.joined++
	c.maybeSetup()
}

// maybeSetup gives every PE its setup once every PE has joined and every
// logger has joined or was declared dead.
func (c *coordinator) maybeSetup() {
	if c.setupSent || c.failure != nil || c.joined < c.cfg.Size || !c.loggersSettled() {
		return
	}
	if err := unreachablePE(c.peers, c.cfg.Transport == "" || c.cfg.Transport == "tcp", localIP); err != nil {
		c.failure = err
		return
	}
	c.setupSent = true
	addrs := make([]string, c.cfg.Size)
	for i, p := range c.peers {
		addrs[i] = p.hello.TransportAddr
	}
	now := time.Now().UnixNano()
	for i, p := range c.peers {
		p.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Setup{Setup: &controlpb.Setup{
			Rank: int32(i), Size: int32(c.cfg.Size), JobId: c.cfg.JobID,
			App: c.cfg.App, Args: c.cfg.Args, TransportAddrs: addrs, Protocol: protocolName(c.cfg.Protocol),
			CheckpointEvery: c.cfg.CheckpointEvery, KillAtStep: killAtStep(c.cfg.Kills, i), MeasureLoad: c.cfg.Balancer != "",
			TraceFile: c.cfg.TraceFile, HeartbeatTimeoutMs: c.cfg.HeartbeatTimeout.Milliseconds(), RecordDir: c.cfg.RecordDir,
			CheckAnnotations: uint32(c.cfg.CheckAnnotations),
			LogQuota:         int64(c.cfg.LogQuota), LoggerAddrs: c.loggerAddrs(), EventLogger: c.cfg.EventLogger,
			Failures: uint32(c.cfg.Failures),
		}}})
		// From now on both sides send heartbeats, and silence counts.
		p.out.startHeartbeats(heartbeatInterval(c.cfg.HeartbeatTimeout))
		p.seen.Store(now)
		p.watched.Store(true)
	}
	c.fireWhere(c.timeline.began, func(k *kill) bool { return k.Trigger == atSetup })
}

// receive takes a message from a PE.
func (c *coordinator) receive(ev evMessage) {
	p := c.peers[ev.rank]
	if p == nil || p != ev.peer {
		return // of a process replaced before the job began
	}
	if p.gone {
		if !p.ignored {
			p.ignored = true
			c.cfg.Log.Warn("ignoring messages from a PE declared dead", "pe", ev.rank, "type", fmt.Sprintf("%T", ev.msg.Msg))
		}
		return
	}
	switch m := ev.msg.Msg.(type) {
	case *controlpb.ToCoordinator_Ready:
		if got := m.Ready.GetHandlerDigest(); c.cfg.HandlerDigest != "" && got != c.cfg.HandlerDigest {
			c.failure = fmt.Errorf("%w: PE %d (pid %d on %s) declares other collections or handlers than the launcher for %s %q "+
				"(declaration digest %s, the launcher's %s): every PE of a job must run the same program, built from the same sources",
				ErrHandlersDiffer, ev.rank, p.hello.GetPid(), p.hello.GetHost(), c.cfg.App, c.cfg.Args, got, c.cfg.HandlerDigest)
			return
		}
		if !p.ready && !p.doomed {
			p.ready = true
			c.ready++
		}
		if c.cfg.Restart != nil && c.ready == c.cfg.Size {
			c.sendRestart()
			return
		}
		if c.cfg.Restart == nil && c.core == nil && c.allReady() {
			c.launch()
		}
	case *controlpb.ToCoordinator_Restored:
		if c.core == nil && c.cfg.Restart != nil {
			c.restarted++
			if c.restarted == c.cfg.Size {
				c.cfg.Log.Info("restarted from disk checkpoint", "epoch", c.cfg.RestartEpoch)
				c.core = c.newCore()
				c.perform(c.core.Ready())
			}
			return
		}
		c.report(ev.rank, ev.msg)
	case *controlpb.ToCoordinator_Output:
		if c.printed.Admit(m.Output.Task, m.Output.Seq) {
			fmt.Fprintln(c.cfg.Output, m.Output.Line)
		}
	case *controlpb.ToCoordinator_KillDue:
		c.onKillDue(ev.rank, m.KillDue.Step, c.timeline.began)
	case *controlpb.ToCoordinator_Stats:
		c.stats[ev.rank] = m.Stats
	case *controlpb.ToCoordinator_Failed:
		if c.core == nil {
			c.failure = fmt.Errorf("%w: PE %d reported an error: %s", ErrPEFailed, ev.rank, m.Failed.Error)
			return
		}
		c.perform(c.core.OnError(ev.rank, errors.New(m.Failed.Error)))
	default:
		c.report(ev.rank, ev.msg)
	}
}

// report hands a PE's report to the job's coordinator.
func (c *coordinator) report(rank int, msg *controlpb.ToCoordinator) {
	if c.core == nil {
		c.cfg.Log.Warn("control message before the job began", "pe", rank, "type", fmt.Sprintf("%T", msg.Msg))
		return
	}
	c.perform(c.handleReport(rank, msg))
}

// lost takes the end of a PE's control connection. A PE the launcher
// started gets exitReportGrace for its exit report first.
func (c *coordinator) lost(ev evLost) {
	p := c.peers[ev.rank]
	if p == nil || p != ev.peer || p.gone {
		return
	}
	if c.cfg.Spawned[ev.rank] {
		c.lostAt[ev.rank] = time.Now()
		c.lostErr[ev.rank] = ev.err
		return
	}
	c.fail(ev.rank, fmt.Sprintf("lost its connection to the launcher: %v", ev.err))
}

// exited takes the spawner's report that a PE process ended.
func (c *coordinator) exited(ev processExited) {
	if c.currentPID != nil && ev.pid != c.currentPID(ev.rank) {
		return // a process replaced before the job began
	}
	if p := c.peers[ev.rank]; p != nil {
		p.exited = true
		if p.gone {
			c.cfg.Log.Info("PE declared dead has ended", "pe", ev.rank, "pid", ev.pid, "how", describeExit(ev))
			return
		}
	}
	if c.stopping {
		// The job's end is decided (a task called Exit): nothing is
		// recovered, but a PE killed now is said, not passed over.
		c.lateExit(ev)
		return
	}
	c.fail(ev.rank, describeExit(ev))
}

// lateExit logs a PE killed after the job's end was decided (nothing is
// recovered; the job ends as decided). A PE that ended by itself is not a
// failure.
func (c *coordinator) lateExit(ev processExited) {
	if ev.state == nil || !ev.state.Exited() {
		c.cfg.Log.Warn("PE failed after the job's exit was requested; the job ends as decided", "pe", ev.rank, "detail", describeExit(ev))
	}
}

// exitsAfterRun takes the reports of PE processes that ended after run
// returned (or that it left unread): a PE killed then, by anyone but the
// launcher's own stop, is logged as lateExit does.
func (c *coordinator) exitsAfterRun(ev processExited, killedByStop func(pid int) bool) {
	if killedByStop(ev.pid) {
		return
	}
	c.lateExit(ev)
}

// drainExits hands the process reports run left unread to exitsAfterRun.
func (c *coordinator) drainExits(killedByStop func(pid int) bool) {
	for {
		select {
		case ev := <-c.events:
			if pe, ok := ev.(processExited); ok {
				c.exitsAfterRun(pe, killedByStop)
			}
		default:
			return
		}
	}
}

// fail declares PE rank dead for good (how says why) and acts on it.
// Before every PE joined, a PE the launcher started is started again;
// after every PE got its setup but before the job began, the job begins
// without it; once the job runs, its coordinator recovers.
func (c *coordinator) fail(rank int, how string) {
	p := c.peers[rank]
	where := ""
	if p != nil && p.hello != nil {
		where = fmt.Sprintf(" (pid %d on %s)", p.hello.Pid, p.hello.Host)
	}
	detail := fmt.Sprintf("PE %d%s %s", rank, where, how)
	if p != nil && !p.gone {
		// Declared dead for good: its connection is cut, and a PE the
		// launcher started is killed if it still runs, so that it can
		// never come back.
		p.gone = true
		p.out.abort()
		if c.cfg.Spawned[rank] && !p.exited && c.killProcess != nil {
			if _, err := c.killProcess(rank, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				c.cfg.Log.Warn("could not kill a PE declared dead", "pe", rank, "err", err)
			}
		}
	}
	delete(c.lostAt, rank)
	if c.core == nil && !c.setupSent && c.cfg.Spawned[rank] && c.restartPE != nil && c.restarts[rank] < maxRestarts {
		// Before every PE joined nothing depends on it: start it again.
		c.restarts[rank]++
		if p != nil {
			c.joined--
			c.peers[rank] = nil
		}
		pid, err := c.restartPE(rank)
		if err != nil {
			c.failure = fmt.Errorf("%w: %s, and it could not be started again: %w", ErrPEFailed, detail, err)
			return
		}
		c.cfg.Log.Warn("PE failed before it joined the job; started again", "detail", detail, "pid", pid, "attempt", c.restarts[rank])
		return
	}
	if c.core == nil && c.setupSent && c.cfg.Restart == nil && !slices.Contains(c.earlyDead, rank) {
		// Before the job began, after every PE got its setup (the others
		// know of it): the job begins without it.
		c.cfg.Log.Error("PE failed before the job began; its tasks will be created on the other PEs", "detail", detail)
		c.earlyDead = append(c.earlyDead, rank)
		if c.allReady() {
			c.launch()
		}
		return
	}
	if c.core == nil || !c.core.Live()[rank] {
		if c.core == nil {
			c.failure = fmt.Errorf("%w: %s", ErrPEFailed, detail)
		}
		return
	}
	c.timeline.failed(time.Now(), rank, detail)
	c.perform(c.core.OnFailure(rank))
	if out, done := c.core.Done(); done && out.Err != nil {
		c.failure = fmt.Errorf("%w: %s: %w", ErrPEFailed, detail, out.Err)
	}
}

// allReady reports whether every PE still alive is ready, so that the job
// can begin (the early dead left out: their tasks are created on the
// others, see coord.Coordinator.OnFailure).
func (c *coordinator) allReady() bool {
	for r, p := range c.peers {
		if !p.ready && !slices.Contains(c.earlyDead, r) {
			return false
		}
	}
	if len(c.earlyDead) == c.cfg.Size {
		c.failure = fmt.Errorf("%w: every PE failed before the job began", ErrPEFailed)
		return false
	}
	return true
}

// launch creates the job's coordinator and starts the job: with the
// initial checkpoint, or, if PEs failed early, with their failures (their
// tasks are created on the others, and the initial checkpoint follows).
func (c *coordinator) launch() {
	c.core = c.newCore()
	if len(c.earlyDead) == 0 {
		c.perform(c.core.Ready())
		return
	}
	for _, r := range c.earlyDead {
		c.perform(c.core.OnFailure(r))
	}
}

// The launcher is the job coordinator's driver: it carries out its
// commands.
var _ coord.Driver = (*coordinator)(nil)

// perform carries out the job coordinator's commands in order, then logs
// its notes. The commands an effect's outcome brings (OnManifestWritten,
// OnDiskRecordsSent) come after those already queued.
func (c *coordinator) perform(cmds []coord.Command) {
	c.pending = append(c.pending, cmds...)
	if c.performing {
		return
	}
	c.performing = true
	for len(c.pending) > 0 {
		cmd := c.pending[0]
		c.pending = c.pending[1:]
		cmd.Dispatch(c)
	}
	c.performing = false
	for _, note := range c.core.Notes() {
		c.cfg.Log.Info(note)
	}
}

// Send delivers an event to the PEs it is for.
func (c *coordinator) Send(s coord.Send) {
	m := commandToPB(s.Event)
	if rank, one := s.To.PE(); one {
		if p := c.peers[rank]; p != nil && !p.gone {
			p.send(m)
		}
	} else {
		c.sendAll(m)
	}
	c.observe(time.Now(), s.Event)
	if c.timeline.trace != nil {
		c.timeline.trace.instant(fmt.Sprintf("send %T %+v", s.Event, s.Event), "control")
	}
}

// observe follows what the PEs are told: kills injected at a checkpoint
// or a recovery fire as it goes out, and the timeline notes the phases.
func (c *coordinator) observe(now time.Time, ev coord.Event) {
	switch ev := ev.(type) {
	case coord.TakeCheckpoint:
		c.timeline.checkpointTaken(now)
		c.fireWhere(c.timeline.began, func(k *kill) bool { return k.Trigger == atCheckpoint && k.N == ev.Epoch })
	case coord.Recover:
		c.fireWhere(c.timeline.began, func(k *kill) bool { return k.Trigger == atRecovery && k.N == ev.Generation })
	case coord.Rollback:
		c.fireWhere(c.timeline.began, func(k *kill) bool { return k.Trigger == atRecovery && k.N == ev.Generation })
	case coord.CommitCheckpoint:
		c.timeline.committed(now, ev.Epoch)
	case coord.Migrate:
		c.timeline.migrating(len(ev.Moves))
	case coord.WatchProgress:
		c.timeline.watching(now)
	}
}

// WriteManifest writes a disk checkpoint's manifest; the coordinator
// decides what a failure to write it means.
func (c *coordinator) WriteManifest(w coord.WriteManifest) {
	err := migrate.WriteManifest(w.Dir, w.Manifest)
	if err != nil {
		c.cfg.Log.Error("cannot write checkpoint manifest", "epoch", w.Manifest.Epoch, "err", err)
	}
	c.perform(c.core.OnManifestWritten(w.Manifest.Epoch, err))
}

// SendDiskRecords reads a disk checkpoint and gives every live PE the
// records of its tasks; the coordinator decides what a failure to read it
// means.
func (c *coordinator) SendDiskRecords(sd coord.SendDiskRecords) {
	c.cfg.Log.Warn("recovery from disk: every task goes back to a disk checkpoint", "epoch", sd.Epoch, "dir", sd.Dir)
	c.perform(c.core.OnDiskRecordsSent(sd, c.sendDiskRecords(sd)))
}

func (c *coordinator) Started(s coord.Started)   { c.timeline.started(time.Now(), s.Resumed) }
func (c *coordinator) Restored(r coord.Restored) { c.timeline.restored(time.Now(), r) }
func (c *coordinator) ProgressRegained(r coord.ProgressRegained) {
	c.timeline.regained(time.Now(), r)
}

func (c *coordinator) newCore() *coord.Coordinator {
	core := coord.NewCoordinator(coord.Config{
		Size: c.cfg.Size, Protocol: c.cfg.Protocol, Layout: c.cfg.Layout,
		CheckpointDir: c.cfg.CheckpointDir, Spread: c.cfg.Spread,
		Resumed:  c.cfg.Restart != nil && c.cfg.RestartEpoch > coord.InitialEpoch,
		Balancer: c.cfg.Balancer, LogLimit: c.cfg.LogLimit, SyncEvery: c.cfg.CheckpointEvery, Loggers: c.cfg.Loggers,
		Dumping: c.cfg.LogQuota > 0, EventLogger: c.cfg.EventLogger, Failures: c.cfg.Failures,
		LogPerCheckpoint: c.cfg.LogPerCheckpoint, MTBF: c.cfg.MTBF, Now: c.sinceStart,
	})
	for _, l := range c.deadLoggers {
		core.OnLoggerFailure(l)
	}
	return core
}

// sendRestart gives every PE its tasks' states from the disk checkpoint,
// in messages of a few MiB.
func (c *coordinator) sendRestart() {
	for r, recs := range c.cfg.Restart {
		inChunks(recs, func(part []migrate.TaskRecord, last bool) error {
			b, err := migrate.MarshalPECheckpoint(&migrate.PECheckpoint{Epoch: c.cfg.RestartEpoch, PE: r, NumPEs: c.cfg.Size, Tasks: part})
			if err != nil {
				panic(fmt.Sprintf("launcher: marshal restart records: %v", err))
			}
			c.peers[r].send(&controlpb.ToPE{Msg: &controlpb.ToPE_RestartRecords{RestartRecords: &controlpb.RestartRecords{Checkpoint: b, Last: last}}})
			return nil
		})
	}
}

// sendDiskRecords reads a disk checkpoint and gives each live PE the
// records of the tasks placed on it, in messages of a few MiB, the last
// one marked (also for a PE that gets no task).
func (c *coordinator) sendDiskRecords(sd coord.SendDiskRecords) error {
	byCollection, _, err := migrate.ReadEpoch(sd.Dir, sd.Epoch)
	if err != nil {
		return err
	}
	if len(byCollection) != len(sd.Hosts) {
		return fmt.Errorf("the checkpoint has %d collections, the job %d", len(byCollection), len(sd.Hosts))
	}
	perPE := make([][]migrate.TaskRecord, c.cfg.Size)
	for coll, hosts := range sd.Hosts {
		if len(byCollection[coll]) != len(hosts) {
			return fmt.Errorf("collection %d has %d tasks in the checkpoint, %d in the job", coll, len(byCollection[coll]), len(hosts))
		}
		for lin, pe := range hosts {
			perPE[pe] = append(perPE[pe], byCollection[coll][lin])
		}
	}
	for pe, recs := range perPE {
		p := c.peers[pe]
		if p == nil || p.gone {
			continue
		}
		send := func(part []migrate.TaskRecord, last bool) error {
			b, err := migrate.MarshalPECheckpoint(&migrate.PECheckpoint{Epoch: sd.Epoch, PE: pe, NumPEs: c.cfg.Size, Tasks: part})
			if err != nil {
				return err
			}
			p.send(&controlpb.ToPE{Msg: &controlpb.ToPE_RestartRecords{RestartRecords: &controlpb.RestartRecords{
				Checkpoint: b, Last: last, Generation: sd.Generation}}})
			return nil
		}
		if err := inChunks(recs, send); err != nil {
			c.cfg.Log.Warn("could not send disk records", "pe", pe, "err", err)
		}
	}
	return nil
}

// inChunks calls send with consecutive parts of recs of a few MiB each,
// the last one (possibly empty) with last set.
func inChunks(recs []migrate.TaskRecord, send func(part []migrate.TaskRecord, last bool) error) error {
	const chunk = 4 << 20
	start, size := 0, 0
	for i, rec := range recs {
		n := len(rec.Task) + len(rec.Runtime) + len(rec.Protocol)
		if size > 0 && size+n > chunk {
			if err := send(recs[start:i], false); err != nil {
				return err
			}
			start, size = i, 0
		}
		size += n
	}
	return send(recs[start:], true)
}

// collectStats waits for the counters the live PEs send when they stop
// (at most statsWait, for a PE that hangs), and logs them. A PE's wait
// ends with its counters or with the loss of its control connection:
// its reader posts every message of the connection before the loss, so
// a PE whose connection is lost without them will send none. (Its
// process's exit is no such sign: the spawner may post it before the
// reader has posted the counters the PE sent just before it exited,
// and the totals then silently left out PEs that had sent theirs.) The
// job's totals say from how many PEs they are (stats_from_pes), and a
// warning names the live PEs whose counters never came: a sum over some
// PEs is never passed off as the job's.
func (c *coordinator) collectStats(ctx context.Context, live []bool) {
	deadline := time.NewTimer(statsWait)
	defer deadline.Stop()
	expected, settled := map[int]bool{}, map[int]bool{}
	waiting := 0
	for r, ok := range live {
		if ok && c.peers[r] != nil && !c.peers[r].gone {
			expected[r] = true
			if _, in := c.stats[r]; in {
				settled[r] = true
			} else {
				waiting++
			}
		}
	}
	settle := func(r int) {
		if expected[r] && !settled[r] {
			settled[r] = true
			waiting--
		}
	}
	for waiting > 0 {
		select {
		case <-deadline.C:
			waiting = 0
		case <-ctx.Done():
			waiting = 0
		case ev := <-c.events:
			switch ev := ev.(type) {
			case evMessage:
				if st := ev.msg.GetStats(); st != nil && !ev.peer.logger {
					c.stats[ev.rank] = st
					settle(ev.rank)
				}
			case evLost:
				if !ev.peer.logger && ev.peer == c.peers[ev.rank] {
					settle(ev.rank)
				}
			case processExited:
				// One killed now is said, as exited says it once the
				// job's end is decided.
				if c.currentPID != nil && ev.pid != c.currentPID(ev.rank) {
					continue
				}
				p := c.peers[ev.rank]
				if p == nil || p.gone || p.exited {
					continue
				}
				p.exited = true
				c.lateExit(ev)
			}
		}
	}
	var total controlpb.PEStats
	var missing []int
	for r := 0; r < c.cfg.Size; r++ {
		st, ok := c.stats[r]
		if !ok {
			if expected[r] {
				missing = append(missing, r)
			}
			continue
		}
		c.cfg.Log.Info("PE stats", "pe", r, "handled", st.Delivered, "envelopes_sent", st.EnvelopesSent, "batches_sent", st.BatchesSent, "bytes_sent", st.BytesSent,
			"messages_logged", st.LoggedMessages, "log_bytes", st.LoggedBytes, "log_peak_bytes", st.LogPeakBytes, "determinants", st.Determinants,
			"piggybacked_bytes", st.PiggybackedBytes, "duplicates_dropped", st.Duplicates,
			"restored_tasks", st.Restored, "rolled_back_tasks", st.RolledBack, "bad_input_dropped", st.Dropped, "sync_points_passed_again", st.PassedAgain,
			"log_dumped_bytes", st.LogDumpedBytes, "log_blocked_ms", st.LogBlockedMs, "log_fetched_bytes", st.LogFetchedBytes,
			"event_log_records", st.EventLogRecords, "event_log_bytes", st.EventLogBytes, "gomaxprocs", st.Gomaxprocs)
		total.LogDumpedBytes += st.LogDumpedBytes
		total.EventLogRecords += st.EventLogRecords
		total.EventLogBytes += st.EventLogBytes
		total.LogBlockedMs += st.LogBlockedMs
		total.Delivered += st.Delivered
		total.Determinants += st.Determinants
		total.PiggybackedBytes += st.PiggybackedBytes
		total.LoggedBytes += st.LoggedBytes
		total.Restored += st.Restored
		total.RolledBack += st.RolledBack
		total.PassedAgain += st.PassedAgain
		total.LogPeakBytes = max(total.LogPeakBytes, st.LogPeakBytes)
	}
	if len(missing) > 0 {
		c.cfg.Log.Warn("PE stats missing: the job stats below leave out these PEs, which exited without them or did not send them in time", "pes", fmt.Sprint(missing), "wait", statsWait)
	}
	c.cfg.Log.Info("job stats", "ft", protocolName(c.cfg.Protocol), "stats_from_pes", len(c.stats), "handled", total.Delivered, "determinants", total.Determinants,
		"piggybacked_bytes", total.PiggybackedBytes, "log_bytes", total.LoggedBytes, "largest_log_peak_bytes", total.LogPeakBytes,
		"restored_tasks", total.Restored, "rolled_back_tasks", total.RolledBack, "sync_points_passed_again", total.PassedAgain,
		"log_dumped_bytes", total.LogDumpedBytes, "log_blocked_ms", total.LogBlockedMs,
		"event_log_records", total.EventLogRecords, "event_log_bytes", total.EventLogBytes)
	c.timeline.report()
}

// handleReport hands a PE's report to the job's coordinator.
func (c *coordinator) handleReport(rank int, msg *controlpb.ToCoordinator) []coord.Command {
	core := c.core
	if c.timeline.trace != nil {
		c.timeline.trace.instant(fmt.Sprintf("PE %d: %T %v", rank, msg.Msg, msg.Msg), "control")
	}
	switch m := msg.Msg.(type) {
	case *controlpb.ToCoordinator_Exit:
		c.stopping = true
		return core.OnExit(rank, int(m.Exit.Status))
	case *controlpb.ToCoordinator_Idle:
		i := m.Idle
		return core.OnIdle(rank, coord.IdleStatus{Round: i.Round, Sent: i.Sent, Received: i.Received, AtSync: int(i.AtSync), SyncTasks: int(i.SyncTasks), SyncStep: i.SyncStep, LowSyncStep: i.LowSyncStep, SyncStepsKnown: i.SyncStepsKnown, LogBytes: int(i.LogBytes)})
	case *controlpb.ToCoordinator_Quiescence:
		core.OnQuiescenceRequest(rank)
	case *controlpb.ToCoordinator_Staged:
		return core.OnStaged(rank, m.Staged.Epoch, int(m.Staged.Bytes))
	case *controlpb.ToCoordinator_BuddyStored:
		return core.OnBuddyStored(rank, m.BuddyStored.Epoch, int(m.BuddyStored.Ward), m.BuddyStored.Generation)
	case *controlpb.ToCoordinator_DiskWritten:
		d := m.DiskWritten
		var err error
		if d.Error != "" {
			err = errors.New(d.Error)
		}
		var sum [32]byte
		copy(sum[:], d.Sha256)
		return core.OnDiskWritten(rank, d.Epoch, migrate.FileEntry{Name: d.Name, PE: int(d.Pe), SHA256: sum, Size: d.Size}, err)
	case *controlpb.ToCoordinator_Restored:
		r := m.Restored
		return core.OnRestored(rank, r.Generation, coord.Progress{Step: r.Step, Offered: r.Offered})
	case *controlpb.ToCoordinator_Reached:
		return core.OnReached(rank, m.Reached.Generation, m.Reached.Step)
	case *controlpb.ToCoordinator_Loads:
		var loads []migrate.TaskLoad
		for _, l := range m.Loads.Loads {
			loads = append(loads, migrate.TaskLoad{Task: migrate.TaskRef{Collection: int(l.Collection), Lin: int(l.Lin)}, PE: rank, Load: l.Load})
		}
		return core.OnLoads(rank, loads)
	case *controlpb.ToCoordinator_Migrated:
		return core.OnMigrated(rank)
	case *controlpb.ToCoordinator_Committed:
		return core.OnCommitted(rank, m.Committed.Epoch)
	case *controlpb.ToCoordinator_Progress:
		core.OnProgress(rank, m.Progress.Delivered)
	case *controlpb.ToCoordinator_Diagnosis:
		return core.OnDiagnosis(rank, m.Diagnosis.Report)
	default:
		c.cfg.Log.Warn("unexpected control message", "pe", rank, "type", fmt.Sprintf("%T", m))
	}
	return nil
}

func sortedRanks(m map[int]time.Time) []int {
	ranks := make([]int, 0, len(m))
	for r := range m {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	return ranks
}

func describeExit(ev processExited) string {
	if ev.err != nil && ev.state == nil {
		return fmt.Sprintf("(pid %d) could not be waited for: %v", ev.pid, ev.err)
	}
	return exitHow(ev.state)
}

// reportHeartbeatGaps logs the longest silence of each PE the launcher
// watched, against the bound: how close to a false verdict the job came.
func (c *coordinator) reportHeartbeatGaps() {
	var per, heard []string
	var longest, longestHeard int64
	for _, p := range c.peers {
		if p == nil || !p.watched.Load() {
			continue
		}
		gap := time.Duration(p.maxGap.Load()).Milliseconds()
		longest = max(longest, gap)
		per = append(per, fmt.Sprintf("%d:%d", p.rank, gap))
		if st, ok := c.stats[p.rank]; ok {
			longestHeard = max(longestHeard, st.LongestSilenceMs)
			heard = append(heard, fmt.Sprintf("%d:%d", p.rank, st.LongestSilenceMs))
		}
	}
	if len(per) > 0 {
		// from PEs: as the launcher saw them; to PEs: as the PEs that
		// ended normally saw the launcher.
		c.cfg.Log.Info("heartbeats: longest silence", "bound_ms", c.cfg.HeartbeatTimeout.Milliseconds(),
			"from_pes_ms", longest, "per_pe", strings.Join(per, " "), "to_pes_ms", longestHeard, "per_pe_heard", strings.Join(heard, " "))
	}
}

// statsWait bounds collectStats' wait for the PEs' counters.
const statsWait = 10 * time.Second
