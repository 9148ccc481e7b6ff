package launcher

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/internal/jobtls"
	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
	"github.com/gochare/gochare/scheduler/transport"
)

// secretEnv carries the job secret to PEs (hex).
const secretEnv = "GOCHARE_JOB_SECRET"

// ErrNoSecret reports a PE started without the job secret.
var ErrNoSecret = errors.New("launcher: no job secret (set " + secretEnv + " or --secret-file)")

func newSecret() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("launcher: no randomness: %v", err))
	}
	return b
}

func readSecret(file string) ([]byte, error) {
	text := os.Getenv(secretEnv)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("launcher: secret file: %w", err)
		}
		text = string(b)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, ErrNoSecret
	}
	secret, err := hex.DecodeString(text)
	if err != nil || len(secret) < 16 {
		return nil, fmt.Errorf("launcher: job secret must be at least 16 bytes in hex")
	}
	return secret, nil
}

// peOptions configure one PE process.
type peOptions struct {
	Coordinator string
	Rank, Size  int
	Secret      []byte
	// TLS, when not nil, makes the control connection and the transport
	// mutual TLS with these credentials (--tls).
	TLS *jobtls.PE
	// Host is the address this PE's transport listens on and advertises.
	Host   string
	Apps   map[string]actor.App
	Stderr io.Writer
	Log    *slog.Logger
	// CPUProfileDir, when not empty, gets a CPU profile of the PE,
	// pe-RANK.prof (GOCHARE_CPUPROFILE).
	CPUProfileDir string
	// MemProfileDir, when not empty, gets the PE's allocation profile
	// (every allocation since the start, sampled as the runtime does),
	// pe-RANK.allocs.prof, written when the PE stops (GOCHARE_MEMPROFILE).
	MemProfileDir string
	// ProtoActorLog passes protoactor's own log lines to Log
	// (GOCHARE_DEBUG_PROTOACTOR).
	ProtoActorLog bool
	// Transport builds the endpoint (default: DefaultTransport), and
	// TransportName names it to the coordinator, which admits only PEs
	// that run the job's transport.
	Transport     Transport
	TransportName string
	// IdlePoll is how long the transport polls a connection for input
	// before it sleeps (transport.Config.IdlePoll; 0: never, the pe
	// command's --idle-poll).
	IdlePoll time.Duration
	// TCPOnly makes the transport connect to PEs on this host over TCP,
	// not Unix sockets (transport.Config.TCPOnly, the pe command's
	// --tcp-only).
	TCPOnly bool
}

// Environment variables read by `gochare pe`, for investigations. Set for
// `gochare run`, they reach the PEs it starts.
const (
	cpuProfileEnv      = "GOCHARE_CPUPROFILE"
	memProfileEnv      = "GOCHARE_MEMPROFILE"
	debugProtoActorEnv = "GOCHARE_DEBUG_PROTOACTOR"
)

// startCPUProfile writes a CPU profile of this process to path until stop
// is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// peControl is the PE's side of the control connection.
type peControl struct{ conn *conn }

func (c peControl) to(m *controlpb.ToCoordinator) { c.conn.send(m) }
func (c peControl) Output(task, seq uint64, line string) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Output{Output: &controlpb.Output{Line: line, Task: task, Seq: seq}}})
}
func (c peControl) Exit(status int) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Exit{Exit: &controlpb.ExitRequest{Status: int32(status)}}})
}
func (c peControl) Idle(st coord.IdleStatus) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Idle{Idle: &controlpb.Idle{
		Round: st.Round, Sent: st.Sent, Received: st.Received, AtSync: int32(st.AtSync), SyncTasks: int32(st.SyncTasks), SyncStep: st.SyncStep, LowSyncStep: st.LowSyncStep, SyncStepsKnown: st.SyncStepsKnown, LogBytes: int64(st.LogBytes)}}})
}
func (c peControl) CheckpointStaged(epoch uint64, tasks, bytes int) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Staged{Staged: &controlpb.CheckpointStaged{Epoch: epoch, Tasks: int32(tasks), Bytes: int64(bytes)}}})
}
func (c peControl) BuddyStored(epoch uint64, ward int, generation uint64) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_BuddyStored{BuddyStored: &controlpb.BuddyStored{Epoch: epoch, Ward: int32(ward), Generation: generation}}})
}
func (c peControl) DiskWritten(epoch uint64, e migrate.FileEntry, err error) {
	d := &controlpb.DiskWritten{Epoch: epoch, Name: e.Name, Pe: int32(e.PE), Sha256: e.SHA256[:], Size: e.Size}
	if err != nil {
		d.Error = err.Error()
	}
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_DiskWritten{DiskWritten: d}})
}
func (c peControl) Restored(generation uint64, tasks int, before coord.Progress) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Restored{Restored: &controlpb.Restored{
		Generation: generation, Tasks: int32(tasks), Offered: before.Offered, Step: before.Step}}})
}
func (c peControl) Reached(generation, step uint64) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Reached{Reached: &controlpb.Reached{Generation: generation, Step: step}}})
}
func (c peControl) Loads(loads []migrate.TaskLoad) {
	l := &controlpb.Loads{}
	for _, t := range loads {
		l.Loads = append(l.Loads, &controlpb.TaskLoad{Collection: uint32(t.Task.Collection), Lin: int64(t.Task.Lin), Load: t.Load})
	}
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Loads{Loads: l}})
}
func (c peControl) Migrated() {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Migrated{Migrated: &controlpb.Migrated{}}})
}
func (c peControl) Fail(err error) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Failed{Failed: &controlpb.Failed{Error: err.Error()}}})
}
func (c peControl) Committed(epoch uint64) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Committed{Committed: &controlpb.Committed{Epoch: epoch}}})
}
func (c peControl) Progress(delivered uint64) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Progress{Progress: &controlpb.ProgressReport{Delivered: delivered}}})
}
func (c peControl) Diagnosis(report string) {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Diagnosis{Diagnosis: &controlpb.Diagnosis{Report: report}}})
}
func (c peControl) RequestQuiescence() {
	c.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Quiescence{Quiescence: &controlpb.QuiescenceRequest{}}})
}

// dialCoordinator opens a PE's or a logger's control connection to the
// coordinator at addr, mutual TLS with creds when they are given (--tls).
func dialCoordinator(ctx context.Context, addr string, creds *jobtls.PE) (net.Conn, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := new(net.Dialer).DialContext(dialCtx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if creds == nil {
		return raw, nil
	}
	tc := tls.Client(raw, creds.CoordinatorClientConfig())
	if err := tc.HandshakeContext(dialCtx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("TLS with the coordinator: %w", err)
	}
	return tc, nil
}

// runPE runs one PE process until the coordinator stops the job. It returns
// the status the process should exit with.
func runPE(ctx context.Context, o peOptions) (int, error) {
	if dir := o.CPUProfileDir; dir != "" {
		// A CPU profile of this PE, for performance work:
		// go tool pprof DIR/pe-N.prof.
		stop, err := startCPUProfile(filepath.Join(dir, fmt.Sprintf("pe-%d.prof", o.Rank)))
		if err != nil {
			return 1, fmt.Errorf("launcher: PE %d: %s: %w", o.Rank, cpuProfileEnv, err)
		}
		defer stop()
	}
	if dir := o.MemProfileDir; dir != "" {
		// go tool pprof -sample_index=alloc_space DIR/pe-N.allocs.prof.
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("pe-%d.allocs.prof", o.Rank)))
		if err != nil {
			return 1, fmt.Errorf("launcher: PE %d: %s: %w", o.Rank, memProfileEnv, err)
		}
		defer func() {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}()
	}
	raw, err := dialCoordinator(ctx, o.Coordinator, o.TLS)
	if err != nil {
		return 1, fmt.Errorf("launcher: PE %d: %w", o.Rank, err)
	}
	cn := newConn(raw)
	defer cn.close()
	// The control connection is cut on purpose when the PE is
	// interrupted (SIGTERM, SIGINT) or hears nothing from the coordinator:
	// whatever waits on it returns at once, with why.
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
	defer context.AfterFunc(ctx, func() {
		cut(fmt.Errorf("launcher: PE %d: interrupted by a signal", o.Rank))
	})()
	if o.Host == "" {
		// Listen where this host reaches the coordinator: the other PEs
		// reach it the same way.
		o.Host = raw.LocalAddr().(*net.TCPAddr).IP.String()
	}
	newEndpoint, transportName := o.Transport, o.TransportName
	if newEndpoint == nil {
		newEndpoint, transportName = DefaultTransports()[DefaultTransport], DefaultTransport
	}
	tcfg := transport.Config{
		Rank: o.Rank, Size: o.Size, Host: o.Host, Secret: o.Secret, Logger: o.Log,
		ProtoActorLog: o.ProtoActorLog, IdlePoll: o.IdlePoll, TCPOnly: o.TCPOnly,
	}
	if o.IdlePoll <= 0 {
		tcfg.IdlePoll = -1 // never (0 in a Config is the default)
	}
	if o.TLS != nil {
		tcfg.TLS = o.TLS.PeerConfig()
	}
	ep, err := newEndpoint(tcfg)
	if err != nil {
		return 1, fmt.Errorf("launcher: PE %d transport: %w", o.Rank, err)
	}
	defer closeWithin(ep, 3*time.Second, o.Log)

	var first controlpb.ToPE
	if err := cn.recv(&first); err != nil {
		hint := ""
		if o.TLS == nil {
			hint = " (if the job runs with --tls, start the PE with --tls --secret-dir DIR)"
		}
		return fail(fmt.Errorf("launcher: PE %d: no challenge from coordinator%s: %w", o.Rank, hint, err))
	}
	ch := first.GetChallenge()
	if ch == nil {
		return 1, fmt.Errorf("launcher: PE %d: coordinator did not open with a challenge", o.Rank)
	}
	host, _ := os.Hostname()
	if err := cn.send(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Hello{Hello: &controlpb.Hello{
		Rank: int32(o.Rank), Size: int32(o.Size), Mac: helloMAC(o.Secret, ch.Nonce),
		TransportAddr: ep.Addr(), Pid: int64(os.Getpid()), Host: host, Transport: transportName,
	}}}); err != nil {
		return fail(err)
	}
	var setupMsg controlpb.ToPE
	if err := cn.recv(&setupMsg); err != nil {
		return fail(fmt.Errorf("launcher: PE %d: refused by the coordinator or no setup: %w", o.Rank, err))
	}
	if r := setupMsg.GetRefused(); r != nil {
		return 1, fmt.Errorf("launcher: PE %d: the coordinator refused it: %s", o.Rank, r.Reason)
	}
	if st := setupMsg.GetStop(); st != nil {
		// The job ended (or failed) before it began, e.g. another PE
		// could not start: this PE leaves as a PE stopped later does.
		o.Log.Info("the job stopped before this PE was set up", "rank", o.Rank, "status", st.Status)
		return 0, nil
	}
	setup := setupMsg.GetSetup()
	if setup == nil || int(setup.Rank) != o.Rank || int(setup.Size) != o.Size || len(setup.TransportAddrs) != o.Size {
		return 1, fmt.Errorf("launcher: PE %d: bad setup from coordinator: %v", o.Rank, setupMsg.String())
	}
	app, ok := o.Apps[setup.App]
	if !ok {
		return 1, fmt.Errorf("launcher: PE %d: this binary has no app %q", o.Rank, setup.App)
	}
	kind, ok := protocolNames[setup.Protocol]
	if !ok {
		return 1, fmt.Errorf("launcher: PE %d: unknown protocol %q in setup", o.Rank, setup.Protocol)
	}
	// From the setup on, both sides send heartbeats and watch for them.
	bound := time.Duration(setup.HeartbeatTimeoutMs) * time.Millisecond
	if bound <= 0 {
		bound = 5 * time.Second
	}
	// heard is when the last message came from the coordinator (unix ns);
	// longest the longest silence between two.
	var heard atomic.Int64
	var longest time.Duration
	heard.Store(time.Now().UnixNano())
	watching := make(chan struct{})
	defer close(watching)
	go sendHeartbeats(watching, cn, heartbeatInterval(bound))
	// The coordinator's silence is judged from the loop below on, where
	// its messages are read: until then (the scheduler creating this PE's
	// tasks, which takes long with many, and the transport starting) its
	// heartbeats wait unread in the connection, and the silence would be
	// this PE's own. The coordinator judges this PE by its heartbeats,
	// which go out all along.
	watchFrom := func() {
		heard.Store(time.Now().UnixNano())
		go watchCoordinator(watching, &heard, bound, func(silent time.Duration) {
			err := fmt.Errorf("launcher: PE %d heard nothing from the coordinator for %v (bound %v): stopping", o.Rank, silent.Round(time.Millisecond), bound)
			o.Log.Error("no word from the coordinator: stopping", "silent_ms", silent.Milliseconds(), "bound_ms", bound.Milliseconds())
			cut(err)
		})
	}
	control := peControl{conn: cn}
	var onStep func(uint64)
	if at := setup.KillAtStep; at > 0 {
		due := false
		onStep = func(step uint64) {
			if step < at || due {
				return
			}
			// This PE does no more work: it tells the coordinator, which
			// sends the signal the kill asks for.
			due = true
			o.Log.Warn("failure injection: killing this PE", "step", step)
			control.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_KillDue{KillDue: &controlpb.KillDue{Step: step}}})
			select {}
		}
	}
	var tr *tracer
	var trace func(string, string, time.Time, time.Duration)
	if setup.TraceFile != "" {
		tr = &tracer{pid: o.Rank}
		trace = tr.handler
		defer func() {
			if err := tr.write(peTraceFile(setup.TraceFile, o.Rank)); err != nil {
				o.Log.Warn("cannot write trace", "err", err)
			}
		}()
	}
	var dumps *dumpClient
	var dumpSink scheduler.DumpSink
	var deadLoggers []int
	if setup.LogQuota > 0 {
		var dumpTLS *tls.Config
		if o.TLS != nil {
			dumpTLS = o.TLS.PeerConfig()
		}
		dumps = newDumpClient(o.Rank, setup.LoggerAddrs, o.Secret, dumpTLS, ep.Post, o.Log)
		dumps.shareLog(int(setup.LogQuota))
		defer dumps.close()
		dumpSink = dumps
		for l, a := range setup.LoggerAddrs {
			if a == "" {
				deadLoggers = append(deadLoggers, l)
			}
		}
		// The connection to the logger this PE dumps to first, with
		// its ring, before the first dump.
		dumps.dialAhead()
	}
	var events *eventLogClient
	var eventSink scheduler.EventLogSink
	if setup.EventLogger {
		var elTLS *tls.Config
		if o.TLS != nil {
			elTLS = o.TLS.PeerConfig()
		}
		events = newEventLogClient(o.Rank, setup.LoggerAddrs, o.Secret, elTLS, ep.Post, o.Log)
		defer events.close()
		eventSink = events
		if deadLoggers == nil {
			for l, a := range setup.LoggerAddrs {
				if a == "" {
					deadLoggers = append(deadLoggers, l)
				}
			}
		}
	}
	pe, err := scheduler.New(scheduler.Config{
		LogQuota: int(setup.LogQuota), Loggers: len(setup.LoggerAddrs), Dumps: dumpSink, DeadLoggers: deadLoggers,
		EventLogger: setup.EventLogger, EventLog: eventSink, Failures: int(setup.Failures),
		Rank: o.Rank, Size: o.Size, JobID: setup.JobId, App: app, Args: setup.Args, Protocol: kind,
		Net: ep, Control: control, Logger: o.Log, Stderr: o.Stderr,
		CheckpointEvery: setup.CheckpointEvery, OnStep: onStep, MeasureLoad: setup.MeasureLoad, Trace: trace,
		RecordDir:        setup.RecordDir,
		CheckAnnotations: int(setup.CheckAnnotations),
	})
	if err != nil {
		control.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Failed{Failed: &controlpb.Failed{Error: err.Error()}}})
		return 1, err
	}
	if err := ep.Start(setup.TransportAddrs, pe); err != nil {
		return 1, fmt.Errorf("launcher: PE %d: start transport: %w", o.Rank, err)
	}
	if err := cn.send(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Ready{Ready: &controlpb.Ready{HandlerDigest: pe.HandlerDigest()}}}); err != nil {
		return fail(err)
	}
	var restart []migrate.TaskRecord
	watchFrom()
	for {
		var m controlpb.ToPE
		if err := cn.recv(&m); err != nil {
			return fail(fmt.Errorf("launcher: PE %d lost the coordinator: %w", o.Rank, err))
		}
		now := time.Now().UnixNano()
		longest = max(longest, time.Duration(now-heard.Swap(now)))
		switch x := m.Msg.(type) {
		case *controlpb.ToPE_Heartbeat:
			continue
		case *controlpb.ToPE_InjectFailure:
			sig := syscall.SIGKILL
			if x.InjectFailure.Signal == "STOP" {
				sig = syscall.SIGSTOP
			}
			o.Log.Warn("failure injection: the launcher asks this PE to signal itself", "signal", sig.String())
			syscall.Kill(os.Getpid(), sig)
			continue
		case *controlpb.ToPE_LoggerFailed:
			why := fmt.Errorf("launcher: the launcher declared logger %d dead: %s", x.LoggerFailed.Logger, x.LoggerFailed.Why)
			if events != nil {
				events.loseLogger(int(x.LoggerFailed.Logger), why)
			} else {
				ep.Post(scheduler.LoggerLost{Logger: int(x.LoggerFailed.Logger), Why: why})
			}
			continue
		}
		if rr := m.GetRestartRecords(); rr != nil {
			cp, err := migrate.UnmarshalPECheckpoint(rr.Checkpoint)
			if err != nil {
				control.Fail(fmt.Errorf("launcher: PE %d: restart records: %w", o.Rank, err))
				continue
			}
			if rr.Generation > 0 {
				// A recovery from disk: records of the tasks placed here.
				ep.Post(scheduler.DiskRecords{Generation: rr.Generation, Records: cp.Tasks, Last: rr.Last})
				continue
			}
			restart = append(restart, cp.Tasks...)
			if rr.Last {
				ep.Post(scheduler.RestartFrom{Records: restart})
				restart = nil
			}
			continue
		}
		ev, stop, err := eventFromPB(&m, o.Size)
		if err != nil {
			o.Log.Warn("bad control message", "err", err)
			continue
		}
		if _, ok := ev.(coord.Diagnose); ok {
			// The job is stalled. If application code has been running on
			// the PE goroutine all that time, it will not answer: say
			// what it runs from here (the coordinator keeps the first
			// answer).
			if busy := pe.Busy(); busy != "" {
				control.Diagnosis(fmt.Sprintf("PE %d is running %s (a handler that does not return?)", o.Rank, busy))
			}
		}
		if stop {
			if dumps != nil {
				// The loggers stop too: their connections' ends are
				// no loss now.
				dumps.cancel()
			}
			if events != nil {
				events.cancel()
			}
			reply := make(chan scheduler.Stats, 1)
			ep.Post(scheduler.StatsRequest{Reply: reply})
			select {
			case st := <-reply:
				p := st.Protocol
				control.to(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Stats{Stats: &controlpb.PEStats{
					Delivered: st.Delivered, EnvelopesSent: st.Sent, BytesSent: st.BytesSent, BatchesSent: st.BatchesSent,
					Determinants: int64(p.Determinants), PiggybackedBytes: int64(p.PiggybackedBytes), LoggedBytes: int64(p.LoggedBytes),
					Duplicates: int64(p.Duplicates), Restored: int32(st.Restored), RolledBack: int32(st.RolledBack), Dropped: st.Dropped,
					LoggedMessages: int64(p.Logged), LongestSilenceMs: longest.Milliseconds(), PassedAgain: int32(st.PassedAgain),
					LogPeakBytes: int64(p.PeakLogBytes), LogDumpedBytes: int64(st.LogDumpedBytes), LogBlockedMs: st.LogBlocked.Milliseconds(),
					LogFetchedBytes: int64(st.LogFetchedBytes),
					EventLogRecords: int64(p.EventLogRecords), EventLogBytes: int64(p.EventLogBytes),
					Gomaxprocs: int32(runtime.GOMAXPROCS(0)),
				}}})
			case <-time.After(2 * time.Second):
			}
			return 0, nil
		}
		ep.Post(ev)
	}
}

// closeWithin closes the transport, waiting at most d: a PE that must
// stop (interrupted, cut off) does not wait for a transport that cannot
// finish.
func closeWithin(ep interface{ Close() error }, d time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() {
		ep.Close()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn("transport not closed in time; leaving it", "after", d)
	}
}
