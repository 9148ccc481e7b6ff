package protoactor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gochare/gochare/scheduler/transport"
)

// actorName is the name of the actor of every PE.
const actorName = "pe"

// Remote settings. protoactor's defaults preallocate a million-slot queue
// per endpoint writer and send batches of up to 1000 messages, which with
// large frames exceeds gRPC's 4 MB message limit.
const (
	writerBatchSize = 64  // frames per gRPC message
	writerQueueSize = 256 // initial slots of an endpoint writer's queue (it grows)
	grpcWindow      = 4 << 20
)

// Endpoint is a transport.Endpoint over protoactor-go remote (gRPC
// streams), driving the transport's protocol core (transport.Core).
type Endpoint struct {
	cfg    transport.Config
	log    *slog.Logger
	system *actor.ActorSystem
	remote *remote.Remote
	self   *actor.PID
	addr   string
	pe     *peActor
	// refused and malformed count what the core does not see: refused
	// gRPC calls and streams whose input broke protoactor's reader.
	refused, malformed atomic.Uint64

	mu struct {
		sync.Mutex
		started, closed bool
	}
	sub        *eventstream.Subscription
	stopTicker chan struct{}
	tickerDone chan struct{}
	tickQueued atomic.Bool
	peerAddrs  []string // set by Start
}

var _ transport.Endpoint = (*Endpoint)(nil)

// Messages of the PE actor besides *Frame.
type (
	postedEvent struct{ ev any }
	startMsg    struct {
		peers []*actor.PID
		h     transport.Handler
	}
	tickMsg     struct{}
	peerLostMsg struct{ rank int }
	closeMsg    struct{}
)

// New builds an endpoint and starts listening: Addr is valid when it
// returns. Frames that arrive before Start wait for it.
func New(cfg transport.Config) (*Endpoint, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		return nil, fmt.Errorf("%w: this endpoint has no TLS (the tcp transport has)", transport.ErrConfig)
	}
	cfg.Host = bracketIPv6(cfg.Host)
	e := &Endpoint{cfg: cfg, log: cfg.Logger.With("rank", cfg.Rank)}
	auth := &authenticator{
		token:     jobToken(cfg.Secret),
		log:       e.log,
		refused:   func() { e.refused.Add(1) },
		malformed: func() { e.malformed.Add(1) },
	}
	e.system, e.remote, err = startSystem(cfg, auth)
	if err != nil {
		return nil, err
	}
	e.addr = e.system.Address()

	e.pe = &peActor{e: e}
	resendTicks := uint64(cfg.ResendAfter / cfg.TickInterval)
	e.pe.core, err = transport.NewCore(transport.CoreConfig{
		Rank: cfg.Rank, Size: cfg.Size, MaxFrame: cfg.MaxFrame, Window: cfg.Window, MaxPayload: cfg.MaxPayload,
		ResendTicks: resendTicks, Logger: e.log,
	}, e.pe.transmit, e.pe.deliver)
	if err != nil {
		e.remote.Shutdown(false)
		e.system.Shutdown()
		return nil, err
	}
	// The producer hands out the same actor, so a restart by protoactor's
	// supervisor keeps the transport state.
	props := actor.PropsFromProducer(func() actor.Actor { return e.pe })
	e.self, err = e.system.Root.SpawnNamed(props, actorName)
	if err != nil {
		e.remote.Shutdown(false)
		e.system.Shutdown()
		return nil, fmt.Errorf("transport: spawn %s: %w", actorName, err)
	}
	return e, nil
}

// startSystem starts an actor system and protoactor's remote configured
// for cfg, with auth checking every gRPC call.
func startSystem(cfg transport.Config, auth *authenticator) (*actor.ActorSystem, *remote.Remote, error) {
	system := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			// protoactor reports every broken or refused connection as an
			// error, including the normal ones at shutdown and after a
			// peer failed; this layer recovers from them and reports what
			// matters itself, so protoactor's own log is kept only with
			// Config.ProtoActorLog.
			level := slog.LevelError + 1
			if cfg.ProtoActorLog {
				level = slog.LevelDebug
			}
			return slog.New(minLevel{cfg.Logger.Handler(), level}).With("lib", "protoactor", "rank", cfg.Rank)
		}),
		actor.WithDeadLetterRequestLogging(false),
	)
	r := remote.NewRemote(system, remoteConfig(cfg, auth))
	if err := startRemote(r); err != nil {
		system.Shutdown()
		return nil, nil, fmt.Errorf("%w on %s:%d: %w", transport.ErrListen, cfg.Host, cfg.Port, err)
	}
	return system, r, nil
}

// NewBareRemote starts an actor system and protoactor's remote configured
// as an endpoint's are (writer queue and batch sizes, gRPC message limits
// and windows, the job token check, protoactor's logging), with nothing of
// this package above them: no PE actor, sequence numbers,
// acknowledgements or resends. cfg.Size may be 1 (it is not used). It is
// here so that a benchmark can compare the endpoint with bare protoactor
// on equal terms (bench/transportbench); the runtime does not use it.
// Shut down the remote, then the system, when done.
func NewBareRemote(cfg transport.Config) (*actor.ActorSystem, *remote.Remote, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, nil, err
	}
	cfg.Host = bracketIPv6(cfg.Host)
	auth := &authenticator{token: jobToken(cfg.Secret), log: cfg.Logger, refused: func() {}, malformed: func() {}}
	return startSystem(cfg, auth)
}

// remoteConfig configures protoactor's remote for HPC-sized traffic.
func remoteConfig(cfg transport.Config, auth *authenticator) *remote.Config {
	maxMessage := writerBatchSize*(cfg.MaxFrame+4096) + 1<<20
	dial := append(auth.dialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		grpc.WithInitialWindowSize(grpcWindow),
		grpc.WithInitialConnWindowSize(grpcWindow),
	)
	serve := append(auth.serverOptions(),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.MaxSendMsgSize(maxMessage),
		grpc.InitialWindowSize(grpcWindow),
		grpc.InitialConnWindowSize(grpcWindow),
	)
	return remote.Configure(cfg.Host, cfg.Port,
		remote.WithEndpointWriterBatchSize(writerBatchSize),
		remote.WithEndpointWriterQueueSize(writerQueueSize),
		remote.WithEndpointManagerBatchSize(writerBatchSize),
		remote.WithEndpointManagerQueueSize(writerQueueSize),
		remote.WithDialOptions(dial...),
		remote.WithServerOptions(serve...),
	)
}

// startRemote starts protoactor's remote, which panics when it cannot listen.
func startRemote(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r.Start()
	return nil
}

// Rank returns this PE's rank.
func (e *Endpoint) Rank() int { return e.cfg.Rank }

// Addr returns the address the other PEs dial.
func (e *Endpoint) Addr() string { return e.addr }

// Start begins delivering to h; peers[r] is the Addr of PE r.
func (e *Endpoint) Start(peers []string, h transport.Handler) error {
	if len(peers) != e.cfg.Size {
		return fmt.Errorf("%w: %d peer addresses for job size %d", transport.ErrConfig, len(peers), e.cfg.Size)
	}
	if peers[e.cfg.Rank] != e.addr {
		return fmt.Errorf("%w: peers[%d] is %q, this PE listens on %q", transport.ErrConfig, e.cfg.Rank, peers[e.cfg.Rank], e.addr)
	}
	if h == nil {
		return fmt.Errorf("%w: nil handler", transport.ErrConfig)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return transport.ErrClosed
	}
	if e.mu.started {
		return transport.ErrStarted
	}
	e.mu.started = true

	pids := make([]*actor.PID, len(peers))
	rankOf := make(map[string]int, len(peers))
	for r, addr := range peers {
		pids[r] = actor.NewPID(addr, actorName)
		rankOf[addr] = r
	}
	e.system.Root.Send(e.self, startMsg{peers: pids, h: h})
	// protoactor publishes EndpointTerminatedEvent when the stream to an
	// address failed; whatever was in flight on it may be lost.
	e.peerAddrs = peers
	e.sub = e.system.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*remote.EndpointTerminatedEvent); ok {
			if r, ok := rankOf[t.Address]; ok {
				e.system.Root.Send(e.self, peerLostMsg{rank: r})
			}
		}
	})
	e.stopTicker = make(chan struct{})
	e.tickerDone = make(chan struct{})
	go e.runTicker()
	return nil
}

// runTicker posts ticks to the actor: from cfg.Ticks one per value, or from
// a ticker with at most one tick waiting in the mailbox.
func (e *Endpoint) runTicker() {
	defer close(e.tickerDone)
	ticks, coalesce := e.cfg.Ticks, false
	if ticks == nil {
		t := time.NewTicker(e.cfg.TickInterval)
		defer t.Stop()
		ticks, coalesce = t.C, true
	}
	for {
		select {
		case <-e.stopTicker:
			return
		case _, ok := <-ticks:
			if !ok {
				return
			}
			if !coalesce || e.tickQueued.CompareAndSwap(false, true) {
				e.system.Root.Send(e.self, tickMsg{})
			}
		}
	}
}

// Send queues payload for PE to. Call it only from Handler callbacks.
func (e *Endpoint) Send(to int, payload []byte) { e.pe.core.Send(to, payload) }

// Forget stops all traffic with a failed peer: what was queued for it is
// dropped, nothing is resent to it, and its late frames are ignored. Call
// it only from Handler callbacks.
func (e *Endpoint) Forget(peer int) {
	e.pe.core.Forget(peer)
}

// Flush sends the frames being filled and the due acknowledgements. Call it
// only from Handler callbacks.
func (e *Endpoint) Flush() { e.pe.core.Flush() }

// DropConnection tears down protoactor's endpoint writer to peer, as
// protoactor does when its gRPC stream fails: what it held is lost. Call it
// after Start; tests use it.
func (e *Endpoint) DropConnection(peer int) {
	if peer >= 0 && peer < len(e.peerAddrs) && peer != e.cfg.Rank {
		e.system.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: e.peerAddrs[peer]})
	}
}

// Post makes ev arrive at Handler.Event on the endpoint goroutine.
func (e *Endpoint) Post(ev any) { e.system.Root.Send(e.self, postedEvent{ev: ev}) }

// Backlog returns the payload bytes sent and not yet acknowledged.
func (e *Endpoint) Backlog() int { return e.pe.core.Backlog() }

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() transport.Stats {
	st := e.pe.core.Stats()
	st.Refused += e.refused.Load()
	st.Malformed += e.malformed.Load()
	return st
}

// Close stops the endpoint: the actor sends the acknowledgements it owes
// (so that peers need not resend to a PE that left), then stops; the gRPC
// server stops at once. protoactor's endpoint writers are left to finish
// what they hold: stopping them waits for any that is retrying a
// connection, 2 s per attempt.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return nil
	}
	e.mu.closed = true
	started := e.mu.started
	e.mu.Unlock()
	if started {
		close(e.stopTicker)
		<-e.tickerDone
		e.system.EventStream.Unsubscribe(e.sub)
		if _, err := e.system.Root.RequestFuture(e.self, closeMsg{}, time.Second).Result(); err != nil {
			e.log.Warn("transport: closing: acknowledgements not flushed", "err", err)
		}
	}
	if err := e.system.Root.StopFuture(e.self).Wait(); err != nil {
		e.log.Warn("transport: stopping the PE actor", "err", err)
	}
	e.remote.Shutdown(false)
	e.system.Shutdown()
	return nil
}

// peActor is the actor of the PE: the single goroutine that owns the
// transport state and runs the Handler.
type peActor struct {
	e     *Endpoint
	core  *transport.Core
	h     transport.Handler
	peers []*actor.PID
	// early holds what arrived before Start, bounded: frames beyond it are
	// dropped and resent later by their senders.
	early      []any
	earlyBytes int
}

func (a *peActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *transport.Frame:
		if a.h == nil {
			a.hold(m, len(m.Head)+len(m.Data))
			return
		}
		if err := a.core.Receive(m); err != nil {
			a.e.log.Warn("transport: dropped frame", "err", err)
		}
	case postedEvent:
		if a.h == nil {
			a.hold(m, 0)
			return
		}
		a.h.Event(m.ev)
	case tickMsg:
		a.e.tickQueued.Store(false)
		if a.h != nil {
			a.core.Tick()
		}
	case peerLostMsg:
		if a.h != nil {
			a.core.PeerLost(m.rank)
		}
	case closeMsg:
		if a.h != nil {
			a.core.FlushAllAcks()
		}
		ctx.Respond(true)
	case startMsg:
		a.peers, a.h = m.peers, m.h
		early := a.early
		a.early, a.earlyBytes = nil, 0
		for _, msg := range early {
			switch msg := msg.(type) {
			case *transport.Frame:
				if err := a.core.Receive(msg); err != nil {
					a.e.log.Warn("transport: dropped frame", "err", err)
				}
			case postedEvent:
				a.h.Event(msg.ev)
			}
		}
	}
}

func (a *peActor) hold(msg any, size int) {
	if _, isFrame := msg.(*transport.Frame); isFrame && a.earlyBytes+size > a.e.cfg.Size*a.e.cfg.Window {
		return
	}
	a.early = append(a.early, msg)
	a.earlyBytes += size + earlyOverhead
}

func (a *peActor) deliver(from int, payload []byte) { a.h.Receive(from, payload) }

func (a *peActor) transmit(to int, f *transport.Frame) {
	if f.Seq != 0 && a.e.cfg.DropOutgoing != nil && a.e.cfg.DropOutgoing(to, f.Seq) {
		return
	}
	a.e.system.Root.Send(a.peers[to], f)
}

// earlyOverhead is what a held message costs beyond its bytes.
const earlyOverhead = 64

// bracketIPv6 writes an IPv6 host in brackets: protoactor joins host and
// port with a plain colon.
func bracketIPv6(host string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]"
	}
	return host
}

// minLevel is a slog.Handler that passes only records at or above a level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
