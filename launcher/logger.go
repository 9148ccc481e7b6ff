package launcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gochare/gochare/internal/cputime"
	"github.com/gochare/gochare/internal/jobtls"
	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/launcher/controlpb"
)

// Loggers: `gochare run --loggers K` starts K processes besides the PEs
// that hold no task (`gochare pe --logger` starts one by hand). A logger
// joins as a PE does (the same challenge, the job secret, a Hello that
// says it is a logger), gets a LoggerSetup instead of a Setup, and from
// then on it and the launcher exchange heartbeats and judge each other's
// silence under the same bound as with a PE. Its death is detected as a
// PE's is (its process's end, its connection's end, missed heartbeats),
// reported in the launcher's log, and handed to the job's coordinator
// (OnLoggerFailure), which decides what it costs (job/loggers.go). The
// job goes on: a logger's death never stops it by itself. A logger that
// fails before the job begins, or that the launcher started and that does
// not join within --join-timeout, is left out (the job begins without
// it); loggers are never started again. One started by hand is waited
// for, as a PE started by hand is.
//
// With --log-quota the PEs dump the oldest entries of their sender logs
// to the loggers (dumpstream.go), and with --event-logger they send the
// protocol's records (eventlogstream.go): a logger listens for the PEs'
// connections from its start and says where in its Hello
// (transport_addr); the PEs get the addresses in their Setup.

// loggerExited is sent by the loggers' spawner when a logger process
// ends.
type loggerExited processExited

// loggerPeer returns the peer of logger l, nil if it has not joined.
func (c *coordinator) loggerPeer(l int) *peer {
	if l < 0 || l >= len(c.loggers) {
		return nil
	}
	return c.loggers[l]
}

// joinLogger admits an authenticated logger: it gets its setup at once,
// and heartbeats start.
func (c *coordinator) joinLogger(ctx context.Context, ev evJoined) {
	l := int(ev.hello.Rank)
	if p := c.loggers[l]; p != nil || slices.Contains(c.deadLoggers, l) {
		why := fmt.Sprintf("logger %d already joined", l)
		if slices.Contains(c.deadLoggers, l) {
			why = fmt.Sprintf("logger %d was declared dead: a failed logger never rejoins", l)
		}
		c.cfg.Log.Warn("refused connection", "peer", ev.conn.raw.RemoteAddr().String(), "reason", why)
		ev.conn.close()
		return
	}
	p := &peer{rank: l, logger: true, conn: ev.conn, out: newOutbox(ev.conn), hello: ev.hello}
	c.loggers[l] = p
	go c.readLoop(ctx, p)
	p.send(&controlpb.ToPE{Msg: &controlpb.ToPE_LoggerSetup{LoggerSetup: &controlpb.LoggerSetup{
		Logger: int32(l), JobId: c.cfg.JobID, HeartbeatTimeoutMs: c.cfg.HeartbeatTimeout.Milliseconds()}}})
	p.out.startHeartbeats(heartbeatInterval(c.cfg.HeartbeatTimeout))
	p.seen.Store(time.Now().UnixNano())
	p.watched.Store(true)
	c.cfg.Log.Info("logger joined", "logger", l, "pid", ev.hello.Pid, "host", ev.hello.Host)
	c.maybeSetup()
}

// loggersSettled reports whether every logger has joined or was declared
// dead: the PEs' setup waits for that.
func (c *coordinator) loggersSettled() bool {
	for l, p := range c.loggers {
		if p == nil && !slices.Contains(c.deadLoggers, l) {
			return false
		}
	}
	return true
}

// receiveLogger takes a message from a logger. A logger reports nothing
// yet but its errors.
func (c *coordinator) receiveLogger(ev evMessage) {
	p := c.loggerPeer(ev.rank)
	if p == nil || p != ev.peer || p.gone {
		return
	}
	if f := ev.msg.GetFailed(); f != nil {
		c.failLogger(ev.rank, "reported an error: "+f.Error)
		return
	}
	c.cfg.Log.Warn("unexpected control message from a logger", "logger", ev.rank, "type", fmt.Sprintf("%T", ev.msg.Msg))
}

// lostLogger takes the end of a logger's control connection; a logger
// the launcher started gets exitReportGrace for its exit report first.
func (c *coordinator) lostLogger(ev evLost) {
	p := c.loggerPeer(ev.rank)
	if p == nil || p != ev.peer || p.gone {
		return
	}
	if c.cfg.LoggerSpawned[ev.rank] && !c.stopping {
		c.loggerLostAt[ev.rank] = time.Now()
		c.loggerLostErr[ev.rank] = ev.err
		return
	}
	c.failLogger(ev.rank, fmt.Sprintf("lost its connection to the launcher: %v", ev.err))
}

// loggerEnded takes the spawner's report that a logger process ended.
func (c *coordinator) loggerEnded(ev loggerExited) {
	if p := c.loggerPeer(ev.rank); p != nil {
		p.exited = true
		if p.gone {
			c.cfg.Log.Info("logger declared dead has ended", "logger", ev.rank, "pid", ev.pid, "how", describeExit(processExited(ev)))
			return
		}
	}
	c.failLogger(ev.rank, describeExit(processExited(ev)))
}

// failLogger declares logger l dead for good (how says why): its
// connection is cut, a logger the launcher started is killed if it still
// runs, and the job's coordinator is told. The job goes on.
func (c *coordinator) failLogger(l int, how string) {
	if slices.Contains(c.deadLoggers, l) {
		return
	}
	p := c.loggerPeer(l)
	where := ""
	if p != nil && p.hello != nil {
		where = fmt.Sprintf(" (pid %d on %s)", p.hello.Pid, p.hello.Host)
	}
	delete(c.loggerLostAt, l)
	c.deadLoggers = append(c.deadLoggers, l)
	if p != nil {
		p.gone = true
		p.out.abort()
		if c.cfg.LoggerSpawned[l] && !p.exited && c.killLogger != nil {
			if _, err := c.killLogger(l, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				c.cfg.Log.Warn("could not kill a logger declared dead", "logger", l, "err", err)
			}
		}
	}
	detail := fmt.Sprintf("logger %d%s %s", l, where, how)
	if c.stopping || (c.core != nil && func() bool { _, done := c.core.Done(); return done }()) {
		c.cfg.Log.Warn("logger failed after the job's end was decided", "detail", detail)
		return
	}
	c.cfg.Log.Error("logger failed; the job goes on", "detail", detail, "loggers_left", c.cfg.Loggers-len(c.deadLoggers))
	if c.setupSent && (c.cfg.EventLogger || c.cfg.LogQuota > 0) {
		// The PEs' streams to it may stay open (a hung process or
		// host): they drop them now.
		for _, q := range c.peers {
			if q != nil && !q.gone {
				q.send(&controlpb.ToPE{Msg: &controlpb.ToPE_LoggerFailed{LoggerFailed: &controlpb.LoggerFailed{Logger: int32(l), Why: detail}}})
			}
		}
	}
	if c.core != nil {
		c.perform(c.core.OnLoggerFailure(l))
		return
	}
	// Before the job began: the job begins without it (the job's
	// coordinator is told when it is made), and the PEs' setup no longer
	// waits for it.
	c.maybeSetup()
}

// loggerTick is the loggers' part of the launcher's periodic work: a
// broken connection whose exit report did not come, silence beyond the
// bound, and loggers that did not join in time.
func (c *coordinator) loggerTick(now time.Time) {
	for _, l := range sortedRanks(c.loggerLostAt) {
		if now.Sub(c.loggerLostAt[l]) > exitReportGrace {
			c.failLogger(l, fmt.Sprintf("lost its connection to the launcher: %v", c.loggerLostErr[l]))
		}
	}
	for l, p := range c.loggers {
		if p == nil || p.gone || !p.watched.Load() {
			continue
		}
		if last := time.Unix(0, p.seen.Load()); c.judge.dead(now, last) {
			how := fmt.Sprintf("missed heartbeats: silent for %v (bound %v)", now.Sub(last).Round(time.Millisecond), c.cfg.HeartbeatTimeout)
			if c.cfg.LoggerSpawned[l] && c.killLogger != nil {
				how += "; killed with SIGKILL"
			}
			c.failLogger(l, how)
		}
	}
	if c.core == nil && c.failure == nil && now.Sub(c.startedAt) > c.cfg.JoinTimeout {
		for l, p := range c.loggers {
			// A logger started by hand is waited for, as a PE is.
			if p == nil && c.cfg.LoggerSpawned[l] && !slices.Contains(c.deadLoggers, l) {
				// The PEs that waited for it get their setup now, and a
				// whole join timeout to get ready.
				c.startedAt = now
				if c.cfg.LoggerSpawned[l] && c.killLogger != nil {
					c.killLogger(l, syscall.SIGKILL)
				}
				c.failLogger(l, fmt.Sprintf("did not join the job within %v of its start (--join-timeout)", c.cfg.JoinTimeout))
			}
		}
	}
}

// loggerAddrs are the addresses of the loggers' dump listeners, by
// number, "" for a dead one (the PEs' setup waits for every logger to
// join or be declared dead): for the dump stream and the event logger's
// record stream, none without either.
func (c *coordinator) loggerAddrs() []string {
	if c.cfg.LogQuota <= 0 && !c.cfg.EventLogger {
		return nil
	}
	addrs := make([]string, c.cfg.Loggers)
	for l, p := range c.loggers {
		if p != nil && !p.gone && p.hello != nil && !slices.Contains(c.deadLoggers, l) {
			addrs[l] = p.hello.TransportAddr
		}
	}
	return addrs
}

// stopLoggers tells the live loggers the job is over.
func (c *coordinator) stopLoggers() {
	for _, p := range c.loggers {
		if p != nil && !p.gone {
			p.send(commandToPB(coord.Stop{}))
		}
	}
}

// runLogger runs one logger process until the coordinator stops the job.
//
// creds, when not nil, makes the control connection mutual TLS (--tls).
func runLogger(ctx context.Context, coordinator string, l, size int, secret []byte, creds *jobtls.PE, log *slog.Logger) (int, error) {
	raw, err := dialCoordinator(ctx, coordinator, creds)
	if err != nil {
		return 1, fmt.Errorf("launcher: logger %d: %w", l, err)
	}
	cn := newConn(raw)
	defer cn.close()
	var dumpTLS *tls.Config
	if creds != nil {
		dumpTLS = creds.PeerConfig()
	}
	// The PEs reach the logger where it reaches the coordinator.
	dumps, err := listenDumps(l, size, raw.LocalAddr().(*net.TCPAddr).IP.String(), secret, dumpTLS, log)
	if err != nil {
		return 1, err
	}
	defer func() {
		dumps.close()
		el := dumps.events.stats()
		cpu, _ := cputime.Process()
		log.Info("logger stops", "held_bytes", dumps.store.held(), "event_log_batches", el.Batches, "event_log_records", el.Records,
			"event_log_bytes", el.Bytes, "event_log_stale_batches", el.Stale,
			"cpu_ms", cpu.Milliseconds())
	}()
	var why atomic.Pointer[error]
	cut := func(err error) {
		if why.CompareAndSwap(nil, &err) {
			cn.close()
		}
	}
	fail := func(err error) (int, error) {
		if w := why.Load(); w != nil {
			return 1, *w
		}
		return 1, err
	}
	defer context.AfterFunc(ctx, func() { cut(fmt.Errorf("launcher: logger %d: interrupted by a signal", l)) })()
	var first controlpb.ToPE
	if err := cn.recv(&first); err != nil {
		return fail(fmt.Errorf("launcher: logger %d: no challenge from coordinator: %w", l, err))
	}
	ch := first.GetChallenge()
	if ch == nil {
		return 1, fmt.Errorf("launcher: logger %d: coordinator did not open with a challenge", l)
	}
	host, _ := os.Hostname()
	if err := cn.send(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Hello{Hello: &controlpb.Hello{
		Rank: int32(l), Size: int32(size), Mac: helloMAC(secret, ch.Nonce), Pid: int64(os.Getpid()), Host: host, Logger: true,
		TransportAddr: dumps.addr(),
	}}}); err != nil {
		return fail(err)
	}
	var setupMsg controlpb.ToPE
	if err := cn.recv(&setupMsg); err != nil {
		return fail(fmt.Errorf("launcher: logger %d: refused by the coordinator or no setup: %w", l, err))
	}
	if r := setupMsg.GetRefused(); r != nil {
		return 1, fmt.Errorf("launcher: logger %d: the coordinator refused it: %s", l, r.Reason)
	}
	setup := setupMsg.GetLoggerSetup()
	if setup == nil || int(setup.Logger) != l {
		return 1, fmt.Errorf("launcher: logger %d: bad setup from coordinator: %v", l, setupMsg.String())
	}
	bound := time.Duration(setup.HeartbeatTimeoutMs) * time.Millisecond
	if bound <= 0 {
		bound = 5 * time.Second
	}
	var heard atomic.Int64
	heard.Store(time.Now().UnixNano())
	watching := make(chan struct{})
	defer close(watching)
	go sendHeartbeats(watching, cn, heartbeatInterval(bound))
	go watchCoordinator(watching, &heard, bound, func(silent time.Duration) {
		log.Error("no word from the coordinator: stopping", "silent_ms", silent.Milliseconds(), "bound_ms", bound.Milliseconds())
		cut(fmt.Errorf("launcher: logger %d heard nothing from the coordinator for %v (bound %v): stopping", l, silent.Round(time.Millisecond), bound))
	})
	log.Info("logger admitted", "job", setup.JobId)
	for {
		var m controlpb.ToPE
		if err := cn.recv(&m); err != nil {
			return fail(fmt.Errorf("launcher: logger %d lost the coordinator: %w", l, err))
		}
		heard.Store(time.Now().UnixNano())
		switch x := m.Msg.(type) {
		case *controlpb.ToPE_Heartbeat:
		case *controlpb.ToPE_Stop:
			return 0, nil
		case *controlpb.ToPE_InjectFailure:
			sig := syscall.SIGKILL
			if x.InjectFailure.Signal == "STOP" {
				sig = syscall.SIGSTOP
			}
			log.Warn("failure injection: the launcher asks this logger to signal itself", "signal", sig.String())
			syscall.Kill(os.Getpid(), sig)
		default:
			log.Warn("unexpected control message for a logger", "type", fmt.Sprintf("%T", m.Msg))
		}
	}
}

// loggerRole resolves the role of a `gochare pe` process: a logger
// (--logger, or under srun with --loggers K, one of the last K tasks) or a
// PE, with its rank (logger number for a logger) and the job's PE count.
// rank and size are the flags (-1 and 0 when not given); procID and
// nTasks are SLURM_PROCID and SLURM_NTASKS ("" when not set).
func loggerRole(rank, size int, logger bool, loggers int, procID, nTasks string) (isLogger bool, r, n int, err error) {
	if loggers < 0 {
		return false, 0, 0, fmt.Errorf("%w: --loggers %d: want a number >= 0", errUsage, loggers)
	}
	fromEnv := func(name, v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %s=%q", errUsage, name, v)
		}
		return n, nil
	}
	if size == 0 && nTasks != "" {
		n, err := fromEnv("SLURM_NTASKS", nTasks)
		if err != nil {
			return false, 0, 0, err
		}
		// srun starts the PEs and the loggers as one step: the last
		// --loggers tasks are the loggers.
		size = n - loggers
	}
	if rank < 0 && procID != "" {
		p, err := fromEnv("SLURM_PROCID", procID)
		if err != nil {
			return false, 0, 0, err
		}
		rank = p
		if loggers > 0 && size > 0 && p >= size {
			logger, rank = true, p-size
		}
	}
	if logger {
		if rank < 0 || size < 1 || (loggers > 0 && rank >= loggers) {
			return false, 0, 0, fmt.Errorf("%w: pe --logger needs --rank L (the logger's number, from 0) and --size N (the job's PEs), or SLURM_PROCID and SLURM_NTASKS with --loggers K", errUsage)
		}
		return true, rank, size, nil
	}
	if rank < 0 || size < 1 || rank >= size {
		return false, 0, 0, fmt.Errorf("%w: pe needs --rank R and --size N with 0 <= R < N (or SLURM_PROCID and SLURM_NTASKS)", errUsage)
	}
	return false, rank, size, nil
}
