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
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
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
	// StallTimeout is how long the job may make no progress before it
	// stops with a diagnosis (scheduler.CheckStall).
	StallTimeout time.Duration
	// JoinTimeout bounds the time a spawned PE takes to join and be ready.
	JoinTimeout time.Duration
	Protocol    logging.Kind
	// Output receives the job's output lines; Log the launcher's reports.
	Output io.Writer
	Log    *slog.Logger
	// Spawned tells, per rank, whether the launcher started that PE (its
	// exit is then reported through processExited).
	Spawned []bool
	// Layout is the initial place of every task (scheduler.Layout).
	Layout          [][]int
	CheckpointEvery uint64
	CheckpointDir   string
	Spread          int
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
	trace     *tracer
}

// coordinator admits the PEs of one job, wires them together, runs
// quiescence detection, relays output and exit, and detects failures.
type coordinator struct {
	cfg    coordinatorConfig
	ln     net.Listener
	events chan any
	peers  []*peer
	// failure is the error that ends the job, if a PE's failure does.
	failure error
	// stopping is set once the job exits normally: PEs ending then are no
	// failures.
	stopping    bool
	stats       map[int]*controlpb.PEStats
	lastFailure time.Time
	// judge tells when a PE's silence is too long.
	judge silenceJudge
	// recovery describes each recovery, for the end-of-job report.
	recovery []recoveryReport
	// killProcess sends a signal to a spawned PE (failure injection, and
	// to make sure a PE declared dead is).
	killProcess func(rank int, sig syscall.Signal) (pid int, err error)
	// restartPE starts a spawned PE again and currentPID is its process
	// now (a PE that failed before every PE joined, see maxRestarts).
	restartPE  func(rank int) (pid int, err error)
	currentPID func(rank int) int
	restarts   map[int]int
}

// maxRestarts bounds how often a spawned PE that fails before every PE
// joined is started again (a PE that cannot start at all must end the
// job, not loop).
const maxRestarts = 3

type peer struct {
	rank  int
	conn  *conn
	out   *outbox
	hello *controlpb.Hello
	ready bool
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
		cfg.StallTimeout = scheduler.DefaultStallTimeout
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = 30 * time.Second
	}
	if cfg.Spawned == nil {
		cfg.Spawned = make([]bool, cfg.Size)
	}
	return &coordinator{cfg: cfg, ln: ln, restarts: map[int]int{}, events: make(chan any, 256), peers: make([]*peer, cfg.Size), stats: map[int]*controlpb.PEStats{},
		judge: silenceJudge{bound: cfg.HeartbeatTimeout}}
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

// run drives the job to its end and returns its exit status. Decisions
// are the JobCoordinator's; this loop moves messages, watches the PEs and
// keeps time.
func (c *coordinator) run(ctx context.Context) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.acceptLoop(ctx)
	defer c.ln.Close()
	defer c.reportUnfiredKills()
	defer func() {
		// The last messages (Stop) go out first, if the PE still reads.
		deadline := time.Now().Add(time.Second)
		for _, p := range c.peers {
			if p != nil {
				p.out.close(deadline)
			}
		}
		c.reportHeartbeatGaps()
	}()

	ticker := time.NewTicker(c.cfg.QuiescenceEvery)
	defer ticker.Stop()
	stallWindow := c.cfg.StallTimeout / scheduler.StallChecks
	stallTicker := time.NewTicker(stallWindow)
	defer stallTicker.Stop()
	joined, ready, restarted := 0, 0, 0
	// A PE this launcher started must join and be ready within
	// joinTimeout (heartbeats start only once it has joined): a PE stopped
	// or stuck before that would otherwise hold the job forever.
	startedAt := time.Now()
	joinTimeout := c.cfg.JoinTimeout
	var core *scheduler.JobCoordinator
	// setupSent: every PE joined and got its setup. earlyDead are the PEs
	// that failed after that but before the job began: the job begins
	// without them once the others are ready (their tasks are created on
	// the others, see JobCoordinator.OnFailure).
	setupSent := false
	var earlyDead []int
	// startCore creates the job coordinator once every PE still alive is
	// ready.
	startCore := func() bool {
		for r, p := range c.peers {
			if !p.ready && !slices.Contains(earlyDead, r) {
				return false
			}
		}
		if len(earlyDead) == c.cfg.Size {
			c.failure = fmt.Errorf("%w: every PE failed before the job began", ErrPEFailed)
			return false
		}
		return true
	}
	// launchCore starts the job: with the initial checkpoint, or, if PEs
	// failed early, with their failures (their tasks are created on the
	// others, and the initial checkpoint follows).
	var launchCore func()
	// A PE whose connection broke may be a spawned process about to be
	// reported by the spawner with how it died; give it a moment.
	lostAt := map[int]time.Time{}
	lostErr := map[int]error{}
	// noticeAt is when the restored tasks were told to go on (the
	// rollback finished); watchAt when the PEs were asked to tell when
	// the progress at the failure is regained.
	var began, failedAt, checkpointAt, noticeAt, watchAt time.Time

	var deliver func(cmds []scheduler.Command)
	deliver = func(cmds []scheduler.Command) {
		for _, cmd := range cmds {
			switch {
			case cmd.To == -2:
				if wm, ok := cmd.Event.(scheduler.WriteManifest); ok {
					if err := migrate.WriteManifest(wm.Dir, wm.Manifest); err != nil {
						c.cfg.Log.Error("cannot write checkpoint manifest", "err", err)
					}
				}
				if sd, ok := cmd.Event.(scheduler.SendDiskRecords); ok {
					c.cfg.Log.Warn("recovery from disk: every task goes back to a disk checkpoint", "epoch", sd.Epoch, "dir", sd.Dir)
					if err := c.sendDiskRecords(sd); err != nil {
						defer deliver(core.Abort(fmt.Errorf("launcher: recovery from disk checkpoint %d in %s: %w", sd.Epoch, sd.Dir, err)))
					}
				}
			case cmd.To == -1:
				c.sendAll(commandToPB(cmd.Event))
			default:
				if p := c.peers[cmd.To]; p != nil && !p.gone {
					p.send(commandToPB(cmd.Event))
				}
			}
			switch ev := cmd.Event.(type) {
			case scheduler.TakeCheckpoint:
				checkpointAt = time.Now()
				c.fireWhere(began, func(k *kill) bool { return k.Trigger == atCheckpoint && k.N == ev.Epoch })
			case scheduler.Recover:
				c.fireWhere(began, func(k *kill) bool { return k.Trigger == atRecovery && k.N == ev.Generation })
			case scheduler.Rollback:
				c.fireWhere(began, func(k *kill) bool { return k.Trigger == atRecovery && k.N == ev.Generation })
			case scheduler.CommitCheckpoint:
				c.cfg.Log.Info("checkpoint committed", "epoch", ev.Epoch, "ms", time.Since(checkpointAt).Milliseconds())
				c.cfg.trace.span(fmt.Sprintf("checkpoint %d", ev.Epoch), "checkpoint", checkpointAt)
				if !noticeAt.IsZero() {
					c.cfg.trace.span("replay and catch-up", "recovery", noticeAt)
					r := c.currentRecovery()
					r.checkpointed, r.toCheckpoint = true, time.Since(noticeAt)
					c.cfg.Log.Info("recovery report: first checkpoint after the failure",
						"replay_and_catch_up_ms", r.toCheckpoint.Milliseconds(), "since_failure_ms", time.Since(c.lastFailure).Milliseconds())
					noticeAt = time.Time{}
				}
			case scheduler.Migrate:
				c.cfg.trace.instant(fmt.Sprintf("load balancing: %d moves", len(ev.Moves)), "balance")
			case scheduler.Begin:
				began = time.Now()
				c.cfg.trace.instant("job begins", "job")
				c.cfg.Log.Info("all PEs ready; job begins", "pes", c.cfg.Size, "ft", protocolName(c.cfg.Protocol))
			case scheduler.NoticeFailure:
				c.cfg.trace.span("restore", "recovery", failedAt)
				noticeAt = time.Now()
				r := c.currentRecovery()
				r.restored, r.restore = true, noticeAt.Sub(c.lastFailure)
				c.cfg.Log.Info("recovery: tasks restored, replay starts", "failed", fmt.Sprint(ev.Failed), "restore_ms", time.Since(failedAt).Milliseconds(), "relocated", len(ev.Relocations))
			case scheduler.Resume:
				if began.IsZero() {
					// A job restarted from disk resumes instead of
					// beginning.
					began = time.Now()
					c.cfg.trace.instant("job resumes", "job")
					c.cfg.Log.Info("all PEs ready; job resumes from the disk checkpoint", "pes", c.cfg.Size, "ft", protocolName(c.cfg.Protocol))
				}
				if !failedAt.IsZero() && c.cfg.Protocol == logging.KindNone {
					c.cfg.Log.Info("recovery: every task rolled back to the checkpoint", "restore_ms", time.Since(failedAt).Milliseconds())
					c.cfg.trace.span("rollback", "recovery", failedAt)
					failedAt = time.Time{}
					noticeAt = time.Now()
					r := c.currentRecovery()
					r.restored, r.restore = true, noticeAt.Sub(c.lastFailure)
				}
			case scheduler.WatchProgress:
				watchAt = time.Now()
			case scheduler.ProgressRegained:
				c.cfg.trace.span("catch-up to the failure point", "recovery", watchAt)
				r := c.currentRecovery()
				r.regained, r.step, r.catchUp, r.sinceFailure = true, ev.Step, time.Since(watchAt), time.Since(c.lastFailure)
				c.cfg.Log.Info("recovery report: progress at the failure regained", "step", ev.Step,
					"catch_up_ms", r.catchUp.Milliseconds(), "since_failure_ms", r.sinceFailure.Milliseconds())
			}
		}
		if core != nil {
			for _, e := range core.Events() {
				c.cfg.Log.Info(e)
			}
		}
	}
	failure := func(rank int, how string) {
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
		delete(lostAt, rank)
		if core == nil && !setupSent && c.cfg.Spawned[rank] && c.restartPE != nil && c.restarts[rank] < maxRestarts {
			// Before every PE joined nothing depends on it: start it again.
			c.restarts[rank]++
			if p != nil {
				joined--
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
		if core == nil && setupSent && c.cfg.Restart == nil && !slices.Contains(earlyDead, rank) {
			// Before the job began, after every PE got its setup (the
			// others know of it): the job begins without it.
			c.cfg.Log.Error("PE failed before the job began; its tasks will be created on the other PEs", "detail", detail)
			earlyDead = append(earlyDead, rank)
			if startCore() {
				launchCore()
			}
			return
		}
		if core == nil || !core.Live()[rank] {
			if core == nil {
				c.failure = fmt.Errorf("%w: %s", ErrPEFailed, detail)
			}
			return
		}
		failedAt = time.Now()
		c.lastFailure = failedAt
		c.cfg.trace.instant(fmt.Sprintf("PE %d failed", rank), "recovery")
		if began.IsZero() {
			c.cfg.Log.Error("PE failed", "detail", detail)
		} else {
			c.cfg.Log.Error("PE failed", "detail", detail, "after_begin_ms", time.Since(began).Milliseconds())
		}
		deliver(core.OnFailure(rank))
		if out, done := core.Done(); done && out.Err != nil {
			c.failure = fmt.Errorf("%w: %s: %w", ErrPEFailed, detail, out.Err)
		}
	}
	launchCore = func() {
		core = c.newCore()
		if len(earlyDead) == 0 {
			deliver(core.Ready())
			return
		}
		for _, r := range earlyDead {
			deliver(core.OnFailure(r))
		}
	}

	for {
		if c.failure != nil && core == nil {
			c.sendAll(commandToPB(scheduler.Stop{Status: 1}))
			return 1, c.failure
		}
		if core != nil {
			if out, done := core.Done(); done {
				c.collectStats(ctx, core.Live())
				if c.failure != nil {
					return out.Status, c.failure
				}
				return out.Status, out.Err
			}
		}
		select {
		case <-ctx.Done():
			c.sendAll(commandToPB(scheduler.Stop{Status: 1}))
			return 1, ctx.Err()
		case <-stallTicker.C:
			if core != nil {
				deliver(core.CheckStall(stallWindow, nil))
			}
		case <-ticker.C:
			now := time.Now()
			for _, rank := range sortedRanks(lostAt) {
				if now.Sub(lostAt[rank]) > 300*time.Millisecond {
					failure(rank, fmt.Sprintf("lost its connection to the launcher: %v", lostErr[rank]))
				}
			}
			c.checkHeartbeats(now, func(p *peer, silent time.Duration) {
				how := fmt.Sprintf("missed heartbeats: silent for %v (bound %v)", silent.Round(time.Millisecond), c.cfg.HeartbeatTimeout)
				if c.cfg.Spawned[p.rank] && c.killProcess != nil {
					how += "; killed with SIGKILL" // by failure, a stopped process too
				}
				failure(p.rank, how)
			})
			if core != nil {
				deliver(core.Tick())
			} else if c.failure == nil && now.Sub(startedAt) > joinTimeout {
				// The PEs that never joined hold the others back (they get
				// their setup once all have): name those first.
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
				case late >= 0 && !setupSent && c.restartPE != nil && c.restarts[late] < maxRestarts:
					// Stuck before every PE joined (stopped, say): kill it and
					// start it again, as if it had died.
					if c.peers[late] == nil {
						c.killProcess(late, syscall.SIGKILL)
					}
					failure(late, fmt.Sprintf("did not join the job and get ready within %v of its start (--join-timeout); killed", joinTimeout))
					startedAt = now
				case late >= 0:
					c.failure = fmt.Errorf("%w: PE %d did not join the job and get ready within %v of its start (--join-timeout); the job cannot begin without it", ErrPEFailed, late, joinTimeout)
				}
			}
			c.killDue(now, began)
		case ev := <-c.events:
			switch ev := ev.(type) {
			case evJoined:
				r := int(ev.hello.Rank)
				if p := c.peers[r]; p != nil {
					why := fmt.Sprintf("rank %d already joined", r)
					if p.gone {
						why = fmt.Sprintf("PE %d was declared dead: a failed PE never rejoins", r)
					}
					c.cfg.Log.Warn("refused connection", "peer", ev.conn.raw.RemoteAddr().String(), "reason", why)
					ev.conn.close()
					continue
				}
				p := &peer{rank: r, conn: ev.conn, out: newOutbox(ev.conn), hello: ev.hello}
				c.peers[r] = p
				go c.readLoop(ctx, p)
				joined++
				if joined == c.cfg.Size {
					setupSent = true
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
							TraceFile: c.cfg.TraceFile, HeartbeatTimeoutMs: c.cfg.HeartbeatTimeout.Milliseconds(),
						}}})
						// From now on both sides send heartbeats, and
						// silence counts.
						p.out.startHeartbeats(heartbeatInterval(c.cfg.HeartbeatTimeout))
						p.seen.Store(now)
						p.watched.Store(true)
					}
					c.fireWhere(began, func(k *kill) bool { return k.Trigger == atSetup })
				}
			case evMessage:
				p := c.peers[ev.rank]
				if p == nil || p != ev.peer {
					continue // of a process replaced before the job began
				}
				if p.gone {
					if !p.ignored {
						p.ignored = true
						c.cfg.Log.Warn("ignoring messages from a PE declared dead", "pe", ev.rank, "type", fmt.Sprintf("%T", ev.msg.Msg))
					}
					continue
				}
				switch m := ev.msg.Msg.(type) {
				case *controlpb.ToCoordinator_Ready:
					if !p.ready {
						p.ready = true
						ready++
					}
					if c.cfg.Restart != nil && ready == c.cfg.Size {
						c.sendRestart()
						continue
					}
					if c.cfg.Restart == nil && core == nil && startCore() {
						launchCore()
					}
				case *controlpb.ToCoordinator_Restored:
					if core == nil && c.cfg.Restart != nil {
						restarted++
						if restarted == c.cfg.Size {
							c.cfg.Log.Info("restarted from disk checkpoint", "epoch", c.cfg.RestartEpoch)
							core = c.newCore()
							deliver(core.Ready())
						}
						continue
					}
					deliver(c.handleReport(core, ev.rank, ev.msg))
				case *controlpb.ToCoordinator_Output:
					fmt.Fprintln(c.cfg.Output, m.Output.Line)
				case *controlpb.ToCoordinator_KillDue:
					c.onKillDue(ev.rank, m.KillDue.Step, began)
				case *controlpb.ToCoordinator_Stats:
					c.stats[ev.rank] = m.Stats
				case *controlpb.ToCoordinator_Failed:
					if core == nil {
						c.failure = fmt.Errorf("%w: PE %d reported an error: %s", ErrPEFailed, ev.rank, m.Failed.Error)
						continue
					}
					deliver(core.OnError(ev.rank, errors.New(m.Failed.Error)))
				default:
					if core == nil {
						c.cfg.Log.Warn("control message before the job began", "pe", ev.rank, "type", fmt.Sprintf("%T", m))
						continue
					}
					deliver(c.handleReport(core, ev.rank, ev.msg))
				}
			case evLost:
				p := c.peers[ev.rank]
				if p == nil || p != ev.peer || p.gone {
					continue
				}
				if c.cfg.Spawned[ev.rank] {
					lostAt[ev.rank] = time.Now()
					lostErr[ev.rank] = ev.err
					continue
				}
				failure(ev.rank, fmt.Sprintf("lost its connection to the launcher: %v", ev.err))
			case processExited:
				if c.currentPID != nil && ev.pid != c.currentPID(ev.rank) {
					continue // a process replaced before the job began
				}
				if p := c.peers[ev.rank]; p != nil {
					p.exited = true
					if p.gone {
						c.cfg.Log.Info("PE declared dead has ended", "pe", ev.rank, "pid", ev.pid, "how", describeExit(ev))
						continue
					}
				}
				if c.stopping {
					continue
				}
				failure(ev.rank, describeExit(ev))
			}
		}
	}
}

// recoveryReport is what the launcher measured of one recovery, for the
// end-of-job summary.
type recoveryReport struct {
	failedAt time.Time
	// restore: failure → restored tasks told to go on (or every task
	// rolled back).
	restored bool
	restore  time.Duration
	// catchUp: from then until every task offered again the step the job
	// had reached at the failure (step); sinceFailure: failure → then.
	regained              bool
	step                  uint64
	catchUp, sinceFailure time.Duration
	// toCheckpoint: from the restore until the first checkpoint after the
	// failure committed.
	checkpointed bool
	toCheckpoint time.Duration
}

func (r recoveryReport) String() string {
	var parts []string
	if r.restored {
		parts = append(parts, fmt.Sprintf("restore %d ms", r.restore.Milliseconds()))
	}
	if r.regained {
		parts = append(parts, fmt.Sprintf("catch-up to the failure point (step %d) %d ms, failure → progress regained %d ms",
			r.step, r.catchUp.Milliseconds(), r.sinceFailure.Milliseconds()))
	} else {
		parts = append(parts, "progress at the failure not regained (the job ended or another PE failed first)")
	}
	if r.checkpointed {
		parts = append(parts, fmt.Sprintf("replay and catch-up to the next checkpoint %d ms", r.toCheckpoint.Milliseconds()))
	}
	return strings.Join(parts, ", ")
}

// currentRecovery returns the report of the recovery from the last
// failure, started if need be.
func (c *coordinator) currentRecovery() *recoveryReport {
	if n := len(c.recovery); n > 0 && c.recovery[n-1].failedAt.Equal(c.lastFailure) {
		return &c.recovery[n-1]
	}
	c.recovery = append(c.recovery, recoveryReport{failedAt: c.lastFailure})
	return &c.recovery[len(c.recovery)-1]
}

func (c *coordinator) newCore() *scheduler.JobCoordinator {
	return scheduler.NewJobCoordinator(scheduler.CoordinatorConfig{
		Size: c.cfg.Size, Protocol: c.cfg.Protocol, Layout: c.cfg.Layout,
		CheckpointDir: c.cfg.CheckpointDir, Spread: c.cfg.Spread,
		Resumed:  c.cfg.Restart != nil && c.cfg.RestartEpoch > scheduler.InitialEpoch,
		Balancer: c.cfg.Balancer,
	})
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
func (c *coordinator) sendDiskRecords(sd scheduler.SendDiskRecords) error {
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

// collectStats waits briefly for the counters the live PEs send when they
// stop, and logs them.
func (c *coordinator) collectStats(ctx context.Context, live []bool) {
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	want := 0
	for r, ok := range live {
		if ok && c.peers[r] != nil && !c.peers[r].gone {
			want++
		}
	}
	for len(c.stats) < want {
		select {
		case <-deadline.C:
			want = 0
		case <-ctx.Done():
			want = 0
		case ev := <-c.events:
			if m, ok := ev.(evMessage); ok {
				if st := m.msg.GetStats(); st != nil {
					c.stats[m.rank] = st
				}
			}
		}
	}
	var total controlpb.PEStats
	for r := 0; r < c.cfg.Size; r++ {
		st, ok := c.stats[r]
		if !ok {
			continue
		}
		c.cfg.Log.Info("PE stats", "pe", r, "handled", st.Delivered, "envelopes_sent", st.EnvelopesSent, "batches_sent", st.BatchesSent, "bytes_sent", st.BytesSent,
			"messages_logged", st.LoggedMessages, "log_bytes", st.LoggedBytes, "determinants", st.Determinants,
			"piggybacked_bytes", st.PiggybackedBytes, "duplicates_dropped", st.Duplicates,
			"restored_tasks", st.Restored, "rolled_back_tasks", st.RolledBack, "bad_input_dropped", st.Dropped)
		total.Delivered += st.Delivered
		total.Determinants += st.Determinants
		total.PiggybackedBytes += st.PiggybackedBytes
		total.LoggedBytes += st.LoggedBytes
		total.Restored += st.Restored
		total.RolledBack += st.RolledBack
	}
	c.cfg.Log.Info("job stats", "ft", protocolName(c.cfg.Protocol), "handled", total.Delivered, "determinants", total.Determinants,
		"piggybacked_bytes", total.PiggybackedBytes, "log_bytes", total.LoggedBytes,
		"restored_tasks", total.Restored, "rolled_back_tasks", total.RolledBack)
	for i, r := range c.recovery {
		c.cfg.Log.Info(fmt.Sprintf("recovery %d of %d: %s", i+1, len(c.recovery), r))
	}
}

// handleReport hands a PE's report to the job coordinator.
func (c *coordinator) handleReport(core *scheduler.JobCoordinator, rank int, msg *controlpb.ToCoordinator) []scheduler.Command {
	switch m := msg.Msg.(type) {
	case *controlpb.ToCoordinator_Exit:
		c.stopping = true
		return core.OnExit(rank, int(m.Exit.Status))
	case *controlpb.ToCoordinator_Idle:
		i := m.Idle
		return core.OnIdle(rank, scheduler.IdleStatus{Round: i.Round, Sent: i.Sent, Received: i.Received, AtSync: int(i.AtSync), SyncTasks: int(i.SyncTasks)})
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
		return core.OnRestored(rank, r.Generation, scheduler.Progress{Step: r.Step, Offered: r.Offered})
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
