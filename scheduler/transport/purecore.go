package transport

import (
	"fmt"
	"log/slog"
)

// Core is the transport protocol of one PE without I/O, exported for
// drivers outside this package: the simulator (package sim) and the
// protoactor endpoint (scheduler/transport/protoactor). It is the same
// state machine the TCP endpoint runs
// (sequence numbers, frames, cumulative acks, go-back-N resends and the
// window; see the package comment). Its owner calls every method from
// one goroutine; Core calls transmit for each frame to put on the wire
// and deliver for each complete payload, on that goroutine. It reads no
// clock: time is the number of Tick calls.
//
// transmit must not keep the frame's Head and Data past the call without
// copying them if the receiver may change the payloads it is given: the
// core resends the same bytes.
type Core struct {
	c     *core
	stats counters
}

// CoreConfig configures a Core. Every PE of a job must use the same Size,
// MaxFrame and MaxPayload.
type CoreConfig struct {
	Rank, Size int
	// MaxFrame, Window and MaxPayload are as in Config (defaults
	// DefaultMaxFrame, DefaultWindow, DefaultMaxPayload).
	MaxFrame, Window, MaxPayload int
	// ResendTicks is the number of ticks the oldest unacknowledged frame
	// to a peer waits before the core goes back and resends (at least 2,
	// the default).
	ResendTicks uint64
	// Logger receives the core's log lines (default: discard).
	Logger *slog.Logger
}

// NewCore returns the transport core of PE cfg.Rank. transmit is called
// for each frame to send to PE to; deliver for each payload from PE from,
// in send order, exactly once.
func NewCore(cfg CoreConfig, transmit func(to int, f *Frame), deliver func(from int, payload []byte)) (*Core, error) {
	if cfg.Size <= 0 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("%w: rank %d of size %d", ErrConfig, cfg.Rank, cfg.Size)
	}
	if transmit == nil || deliver == nil {
		return nil, fmt.Errorf("%w: transmit and deliver are required", ErrConfig)
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.MaxFrame < minMaxFrame {
		return nil, fmt.Errorf("%w: frame size %d below %d", ErrConfig, cfg.MaxFrame, minMaxFrame)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Window < cfg.MaxFrame {
		return nil, fmt.Errorf("%w: window %d below frame size %d", ErrConfig, cfg.Window, cfg.MaxFrame)
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	cfg.ResendTicks = max(cfg.ResendTicks, 2)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pc := &Core{}
	pc.c = newCore(coreConfig{
		rank: cfg.Rank, size: cfg.Size, maxFrame: cfg.MaxFrame, window: cfg.Window, maxPayload: cfg.MaxPayload,
		resendTicks: cfg.ResendTicks, ackFrames: 32, ackBytes: cfg.Window / 4,
	}, &pc.stats, cfg.Logger)
	pc.c.transmit = func(to int, f frame) {
		transmit(to, &Frame{From: f.From, Seq: f.Seq, Ack: f.Ack, ResendFrom: f.ResendFrom, Head: f.Head, Data: f.Data})
	}
	pc.c.deliver = deliver
	return pc, nil
}

// Send appends payload to the stream to PE to (see Endpoint.Send). A
// rank outside the job panics: it is a bug of the caller.
func (c *Core) Send(to int, payload []byte) { c.c.send(to, payload) }

// SendParts appends the payload head then body to the stream to PE to,
// as one payload (see TCP.SendParts): head is copied before it returns,
// body is the core's from now on.
func (c *Core) SendParts(to int, head, body []byte) { c.c.sendParts(to, head, body) }

// Receive handles a frame that arrived from the network, delivering the
// payloads it completes. It returns an error (wrapping ErrMalformed or
// ErrUnknownRank) for a frame dropped as invalid; duplicates and frames
// after a gap are dropped silently (counted in Stats).
func (c *Core) Receive(f *Frame) error {
	return c.c.receive(frame{From: f.From, Seq: f.Seq, Ack: f.Ack, ResendFrom: f.ResendFrom, Head: f.Head, Data: f.Data})
}

// Tick advances time by one tick: owed acknowledgements go out and
// channels whose oldest frame timed out go back.
func (c *Core) Tick() { c.c.tick() }

// Flush seals the frames being filled and sends the acknowledgements due.
func (c *Core) Flush() { c.c.flush() }

// FlushAllAcks sends every acknowledgement owed, due or not.
func (c *Core) FlushAllAcks() { c.c.flushAllAcks() }

// PeerLost says the connection to peer broke: frames in flight may be
// lost, so the core goes back now instead of waiting for the timeout.
func (c *Core) PeerLost(peer int) {
	if peer >= 0 && peer < c.c.size && peer != c.c.rank {
		c.c.peerLost(peer)
	}
}

// Forget stops all traffic with a failed peer (see TCP.Forget).
func (c *Core) Forget(peer int) {
	if peer >= 0 && peer < c.c.size && peer != c.c.rank {
		c.c.forget(peer)
	}
}

// Backlog returns the payload bytes sent and not yet acknowledged.
func (c *Core) Backlog() int { return int(c.stats.backlog.Load()) }

// Stats returns the core's counters.
func (c *Core) Stats() Stats { return c.stats.snapshot() }
