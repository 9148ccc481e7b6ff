package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Handler receives everything an Endpoint delivers, one call at a time
// (on the endpoint's loop or actor; the TCP endpoint may make the call on
// the goroutine that read the frame, when no other call is under way), so
// the state behind it has one owner.
type Handler interface {
	// Receive gets each complete payload from PE from, exactly once, in the
	// order from sent them. The handler owns payload.
	Receive(from int, payload []byte)
	// Event gets each value given to Endpoint.Post, in Post order.
	Event(ev any)
}

// Endpoint is one PE's end of the job's reliable PE-to-PE transport.
type Endpoint interface {
	// Rank is this PE's rank.
	Rank() int
	// Addr is the address the other PEs dial (host:port), known after New.
	Addr() string
	// Start begins delivering to h. peers[r] is the Addr of PE r.
	Start(peers []string, h Handler) error
	// Send queues payload for PE to: reliable and ordered. Full frames go
	// out at once; the frame being filled waits for Flush (or the next
	// tick). Call it only from inside Handler callbacks. The endpoint owns
	// payload from now on.
	Send(to int, payload []byte)
	// Flush sends the frames being filled and the acknowledgements that
	// are due. The scheduler calls it at the end of each work slice.
	Flush()
	// Post makes ev arrive at Handler.Event on the endpoint goroutine.
	// Safe from any goroutine.
	Post(ev any)
	// Backlog is the number of payload bytes accepted by Send and not yet
	// acknowledged by their receivers. Safe from any goroutine.
	Backlog() int
	// Stats returns the counters so far. Safe from any goroutine.
	Stats() Stats
	// Close stops the endpoint. Frames not yet acknowledged are abandoned.
	Close() error
}

// Config says how to build an endpoint. Every PE of a job must use the same
// Size, Secret, MaxFrame and MaxPayload.
type Config struct {
	Rank, Size int
	// Host is the listen host, e.g. 127.0.0.1; it must be an address the
	// other PEs can dial. Port 0 picks a free port.
	Host string
	Port int
	// Secret is the job secret; connections that do not prove it are refused.
	Secret []byte
	// TLS, when not nil, makes every connection mutual TLS before the
	// handshake: the TCP endpoint runs tls.Server with it on the
	// connections it accepts and tls.Client on those it dials, so it
	// must present a certificate, verify the peer's (ClientAuth
	// tls.RequireAndVerifyClientCert) and name the ServerName peers'
	// certificates carry (jobtls.PE.PeerConfig). Endpoints without TLS
	// (the protoactor one) refuse a Config that sets it.
	TLS *tls.Config
	// MaxFrame is the most data bytes in a frame (default 256 KiB + 16,
	// 1 MiB + 16 for the TCP endpoint; at least 64). Small payloads sent
	// in one work slice share frames; larger ones travel in pieces.
	MaxFrame int
	// Window is the most unacknowledged bytes in flight to one peer
	// (default 8 MiB). Sends beyond it wait in a queue counted by Backlog.
	Window int
	// MaxPayload bounds one payload; a peer announcing more is malformed
	// (default 1 GiB).
	MaxPayload int
	// TickInterval drives delayed acknowledgements and resend timeouts
	// (default 5ms). Ticks, when not nil, replaces the internal ticker: the
	// endpoint counts one tick per value received (tests step time with it).
	TickInterval time.Duration
	Ticks        <-chan time.Time
	// ResendAfter is how long the oldest unacknowledged frame to a peer
	// may wait before the endpoint goes back and resends (default 1s,
	// doubled on each timeout without progress, up to 32 times).
	ResendAfter time.Duration
	// IdlePoll is how long a reader of the TCP endpoint that finds its
	// socket empty keeps reading it, yielding its core between reads,
	// before it sleeps until the socket is readable (default 50 µs;
	// negative: it sleeps at once). Polling saves the wake-up of a
	// sleeping thread on a message's way, most of a short round trip's
	// time, at the price of the core's time while nothing comes: worth
	// it when each PE has a core of its own, not when PEs outnumber the
	// cores (the launcher's choice, launcher.idlePollFlag).
	IdlePoll time.Duration
	// TCPOnly makes the TCP endpoint connect to PEs on its own host over
	// TCP (the loopback), as to PEs on other hosts. Without it, on Linux,
	// the endpoint also listens on a Unix socket named after its TCP
	// address in the abstract namespace, and dials a peer there first: a
	// peer in the same network namespace (the same host) answers there,
	// and the connection, authenticated as over TCP, costs the kernel
	// less per message than TCP on the loopback. With TCPOnly it neither
	// listens nor dials there.
	TCPOnly bool
	// Logger receives the transport's log lines (default: discard).
	Logger *slog.Logger
	// ProtoActorLog passes protoactor's own log lines, at every level, to
	// Logger. Off, they are dropped: protoactor reports every broken or
	// refused connection as an error, the normal ones at shutdown and
	// after a peer failed included, and this layer reports what matters
	// itself. The launcher sets it from GOCHARE_DEBUG_PROTOACTOR.
	ProtoActorLog bool

	// DropOutgoing, when not nil, is asked before each data frame goes
	// out and drops it if it returns true: tests use it to lose frames.
	DropOutgoing func(to int, seq uint64) bool
}

// Defaults.
const (
	DefaultMaxFrame     = 256<<10 + 16 // room for a record header: a 256 KiB payload fits one frame
	DefaultWindow       = 8 << 20
	DefaultMaxPayload   = 1 << 30
	DefaultTickInterval = 5 * time.Millisecond
	DefaultResendAfter  = time.Second
	DefaultIdlePoll     = 50 * time.Microsecond

	minMaxFrame = 64
)

// Errors.
var (
	ErrConfig      = errors.New("transport: bad config")
	ErrStarted     = errors.New("transport: already started")
	ErrClosed      = errors.New("transport: closed")
	ErrListen      = errors.New("transport: cannot listen")
	ErrMalformed   = errors.New("transport: malformed frame")
	ErrUnknownRank = errors.New("transport: frame from unknown rank")
)

// WithDefaults returns cfg with defaults in place of zero values, or an
// error wrapping ErrConfig. Endpoints call it; other packages' endpoints
// (scheduler/transport/protoactor) too.
func (cfg Config) WithDefaults() (Config, error) {
	if cfg.Size <= 0 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return cfg, fmt.Errorf("%w: rank %d of size %d", ErrConfig, cfg.Rank, cfg.Size)
	}
	if len(cfg.Secret) == 0 {
		return cfg, fmt.Errorf("%w: empty secret", ErrConfig)
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.MaxFrame < minMaxFrame {
		return cfg, fmt.Errorf("%w: frame size %d below %d", ErrConfig, cfg.MaxFrame, minMaxFrame)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Window < cfg.MaxFrame {
		return cfg, fmt.Errorf("%w: window %d below frame size %d", ErrConfig, cfg.Window, cfg.MaxFrame)
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.ResendAfter <= 0 {
		cfg.ResendAfter = DefaultResendAfter
	}
	if cfg.IdlePoll == 0 {
		cfg.IdlePoll = DefaultIdlePoll
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// Stats counts what an endpoint did.
type Stats struct {
	PayloadsSent, PayloadsDelivered uint64
	FramesSent, BytesSent           uint64 // data frames and their data bytes, resends included
	FramesReceived, BytesReceived   uint64 // data frames accepted in order
	Resends                         uint64 // data frames sent again
	GoBacks                         uint64 // resend rounds (timeout, lost connection, gap report)
	Duplicates                      uint64 // data frames dropped as already received
	OutOfOrder                      uint64 // data frames dropped after a gap
	AcksSent, AcksReceived          uint64 // standalone acknowledgement frames
	Refused                         uint64 // connections refused (authentication)
	Malformed                       uint64 // frames dropped as malformed or from an unknown rank
	PeakInFlight                    uint64 // most unacknowledged bytes to one peer
	// Waits for input that polled the socket first (Config.IdlePoll),
	// those of them that found input, and those that stopped polling
	// because the loop had work.
	IdlePolls, IdlePollHits, IdlePollsCut uint64
	// Connections that came up (authenticated, either side) over a Unix
	// socket (a peer on this host) and over TCP.
	UnixConns, TCPConns uint64
}

// counters is Stats updated by the endpoint goroutine and read from anywhere.
type counters struct {
	payloadsSent, payloadsDelivered atomic.Uint64
	framesSent, bytesSent           atomic.Uint64
	framesReceived, bytesReceived   atomic.Uint64
	resends, goBacks                atomic.Uint64
	duplicates, outOfOrder          atomic.Uint64
	acksSent, acksReceived          atomic.Uint64
	refused, malformed              atomic.Uint64
	peakInFlight                    atomic.Uint64
	idlePolls, idlePollHits         atomic.Uint64
	idlePollsCut                    atomic.Uint64
	unixConns, tcpConns             atomic.Uint64
	backlog                         atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		PayloadsSent:      c.payloadsSent.Load(),
		PayloadsDelivered: c.payloadsDelivered.Load(),
		FramesSent:        c.framesSent.Load(),
		BytesSent:         c.bytesSent.Load(),
		FramesReceived:    c.framesReceived.Load(),
		BytesReceived:     c.bytesReceived.Load(),
		Resends:           c.resends.Load(),
		GoBacks:           c.goBacks.Load(),
		Duplicates:        c.duplicates.Load(),
		OutOfOrder:        c.outOfOrder.Load(),
		AcksSent:          c.acksSent.Load(),
		AcksReceived:      c.acksReceived.Load(),
		Refused:           c.refused.Load(),
		Malformed:         c.malformed.Load(),
		PeakInFlight:      c.peakInFlight.Load(),
		IdlePolls:         c.idlePolls.Load(),
		IdlePollHits:      c.idlePollHits.Load(),
		IdlePollsCut:      c.idlePollsCut.Load(),
		UnixConns:         c.unixConns.Load(),
		TCPConns:          c.tcpConns.Load(),
	}
}
