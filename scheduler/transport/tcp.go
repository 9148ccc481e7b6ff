package transport

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Wire format of the TCP endpoint (all integers little-endian).
//
// Handshake, the PE of lower rank dialing the higher one:
//
//	dialer   -> acceptor: "GCT1", dialer rank u32, acceptor rank u32, dialer nonce [16]
//	acceptor -> dialer:   acceptor nonce [16], HMAC(secret, "acceptor", both nonces, both ranks) [32]
//	dialer   -> acceptor: HMAC(secret, "dialer", both nonces, both ranks) [32]
//	acceptor -> dialer:   1 (accepted)
//
// Then frames, both ways: a 36-byte header (from u32, head length u32,
// data length u32, seq u64, ack u64, resend_from u64) followed by head
// and data.
const (
	tcpMagic         = "GCT1"
	nonceSize        = 16
	macSize          = sha256.Size
	helloSize        = len(tcpMagic) + 4 + 4 + nonceSize
	frameHeaderSize  = 4 + 4 + 4 + 8 + 8 + 8
	handshakeTimeout = 10 * time.Second
	minRedial        = 10 * time.Millisecond
	maxRedial        = time.Second
	drainTimeout     = time.Second
	loopCloseTimeout = 2 * time.Second
)

// unixWriteBuffer is the send buffer asked for on a Unix socket
// connection: room for a few of the largest frames, like TCP's on the
// loopback once grown (tcp_wmem's default maximum).
const unixWriteBuffer = 4 << 20

// DefaultTCPMaxFrame is the TCP endpoint's default frame size: with no
// gRPC message limit to respect, payloads up to 1 MiB travel in one frame
// and are delivered from the frame's own buffer, without being joined
// from pieces in a copy.
const DefaultTCPMaxFrame = 1<<20 + 16

// TCP is an Endpoint over TCP connections of its own, one per pair of PEs:
// the PE of lower rank dials the one of higher rank (so two PEs never dial
// each other at once) and dials again when the connection breaks, and both
// prove the job secret before any frame (see the package comment). One
// goroutine, the loop, owns the protocol core and runs the Handler; each
// connection has a reader and a writer goroutine.
type TCP struct {
	cfg  Config
	log  *slog.Logger
	ln   net.Listener
	addr string
	// unixLn listens on the Unix socket named after addr (localPEAddr)
	// for peers on this host; nil when there is none (Config.TCPOnly,
	// other systems, or the name taken).
	unixLn net.Listener
	stats  counters
	box    mailbox

	// Owned by the loop: by the goroutine that runs it (see mailbox).
	core       *core
	h          Handler
	peers      []tcpPeer // by rank
	early      []item    // what arrived before Start
	earlyBytes int

	mu struct {
		sync.Mutex
		started, closed bool
		open            map[net.Conn]struct{} // every socket, to close on Close
	}
	ctx        context.Context // cancelled by Close
	cancel     context.CancelFunc
	loopDone   chan struct{}
	wg         sync.WaitGroup // every goroutine but the loop
	draining   []*tcpConn     // set by the loop as it stops, for Close
	tickQueued atomic.Bool
	// held counts the frames queued on connections and not yet written
	// (or dropped): while it is 0 the core may reuse acknowledged frames'
	// buffers.
	held atomic.Int64
	// dirty lists the connections with frames queued by the loop since
	// it last wrote; owned by the loop.
	dirty []*tcpConn
	// spare is the loop's spare item slice (see mailbox.take).
	spare []item
	// recv recycles the readers' buffers (see recvPool); a heap object
	// of its own, so that the buffers' finalizers keep it alive, not e.
	recv *recvPool
	// spin lets one reader at a time poll before it waits (tcp_linux.go).
	spin spinner
	// joined recycles the buffers large payloads are joined into from
	// their frames (core.alloc), apart from recv: recv fills up with
	// frame buffers, and a checkpoint's buddy copy (megabytes, once per
	// checkpoint) would never find its way back into it.
	joined *recvPool
}

var _ Endpoint = (*TCP)(nil)

// spinner lets one reader of an endpoint poll its socket at a time, for
// up to poll (0: never), while busy reports no work for the loop and the
// writers; it counts the polls in stats (tcp_linux.go; readers on other systems
// wait without polling).
type spinner struct {
	taken atomic.Bool
	poll  time.Duration
	busy  func() bool
	stats *counters
}

// tcpPeer is the loop's view of one other PE.
type tcpPeer struct {
	conn      *tcpConn // the connection frames go out on; nil when none
	forgotten bool
	// Dialer side (this rank lower): redial asks the dialer goroutine for
	// a new connection; gone stops it for good.
	redial chan struct{}
	gone   chan struct{}
	upAt   time.Time
}

// NewTCP builds a TCP endpoint and starts listening: Addr is valid when it
// returns. Connections and frames that arrive before Start wait for it.
func NewTCP(cfg Config) (*TCP, error) {
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultTCPMaxFrame
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	host := strings.TrimSuffix(strings.TrimPrefix(cfg.Host, "["), "]")
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("%w on %s:%d: %w", ErrListen, host, cfg.Port, err)
	}
	e := &TCP{
		cfg: cfg, log: cfg.Logger.With("rank", cfg.Rank), ln: ln, addr: ln.Addr().String(),
		box:      mailbox{wake: make(chan struct{}, 1)},
		peers:    make([]tcpPeer, cfg.Size),
		loopDone: make(chan struct{}),
		recv:     &recvPool{maxBytes: recvPoolBytes},
		joined:   &recvPool{maxBytes: joinedPoolBytes, slack: 16},
	}
	e.mu.open = map[net.Conn]struct{}{}
	if name := e.localAddr(e.addr); name != "" {
		// The name is anyone's on this host to take: if another process
		// holds it, peers here connect over TCP (and do not trust what
		// answers there: dialOn).
		if e.unixLn, err = net.Listen("unix", name); err != nil {
			e.log.Warn("transport: cannot listen on the Unix socket; PEs on this host connect over TCP", "addr", name, "err", err)
			e.unixLn = nil
		}
	}
	// A reader polls only while neither the loop nor a writer has work:
	// their goroutines need the thread the poll holds (a writer waits
	// for its socket to take more of a large frame).
	e.spin.poll, e.spin.stats = max(cfg.IdlePoll, 0), &e.stats
	e.spin.busy = func() bool { return e.box.busy.Load() || e.held.Load() > 0 }
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.core = newCore(coreConfigFrom(cfg), &e.stats, e.log)
	e.core.deliver = func(from int, payload []byte) { e.h.Receive(from, payload) }
	e.core.transmit = e.transmit
	e.core.reusable = func() bool { return e.held.Load() == 0 }
	// A payload joined from frames (a checkpoint's buddy copy, a large
	// message) goes into recycled memory, as frames are read into.
	e.core.alloc = func(n int) []byte {
		if n >= joinedMin {
			return e.joined.get(n)
		}
		return e.recv.get(n)
	}
	go e.run()
	e.wg.Add(1)
	go e.acceptLoop(e.ln)
	if e.unixLn != nil {
		e.wg.Add(1)
		go e.acceptLoop(e.unixLn)
	}
	return e, nil
}

// localAddr is the Unix socket on which the endpoint listening on TCP
// address addr listens too, "" when none may be used (Config.TCPOnly,
// other systems).
func (e *TCP) localAddr(addr string) string {
	if e.cfg.TCPOnly {
		return ""
	}
	return localPEAddr(addr)
}

// Rank returns this PE's rank.
func (e *TCP) Rank() int { return e.cfg.Rank }

// Addr returns the address the other PEs dial.
func (e *TCP) Addr() string { return e.addr }

// Start begins delivering to h; peers[r] is the Addr of PE r. It dials
// every PE of higher rank.
func (e *TCP) Start(peers []string, h Handler) error {
	if len(peers) != e.cfg.Size {
		return fmt.Errorf("%w: %d peer addresses for job size %d", ErrConfig, len(peers), e.cfg.Size)
	}
	if peers[e.cfg.Rank] != e.addr {
		return fmt.Errorf("%w: peers[%d] is %q, this PE listens on %q", ErrConfig, e.cfg.Rank, peers[e.cfg.Rank], e.addr)
	}
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrConfig)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	if e.mu.started {
		return ErrStarted
	}
	e.mu.started = true
	dialers := make([]chan struct{}, e.cfg.Size)
	gone := make([]chan struct{}, e.cfg.Size)
	for r := e.cfg.Rank + 1; r < e.cfg.Size; r++ {
		dialers[r], gone[r] = make(chan struct{}, 1), make(chan struct{})
	}
	e.box.put(item{kind: itemStart, ev: startTCP{h: h, redial: dialers, gone: gone}})
	for r := e.cfg.Rank + 1; r < e.cfg.Size; r++ {
		e.wg.Add(1)
		go e.dialer(r, peers[r], dialers[r], gone[r])
	}
	e.wg.Add(1)
	go e.runTicker()
	return nil
}

type startTCP struct {
	h      Handler
	redial []chan struct{}
	gone   []chan struct{}
}

// Send queues payload for PE to. Call it only from Handler callbacks.
func (e *TCP) Send(to int, payload []byte) { e.core.send(to, payload) }

// SendParts queues the payload head then body for PE to, as one payload
// (the receiver gets them joined, without a copy when the payload fits a
// frame). head is copied before SendParts returns, so the caller may
// reuse it at once; body is the endpoint's from now on, as Send's payload
// is. Call it only from Handler callbacks.
func (e *TCP) SendParts(to int, head, body []byte) { e.core.sendParts(to, head, body) }

// Released reports whether the endpoint holds none of the payloads and
// bodies given to Send and SendParts: every one acknowledged by its
// receiver, and no frame waiting to be written. The caller may then
// write their memory again. Call it only from Handler callbacks.
func (e *TCP) Released() bool { return e.stats.backlog.Load() == 0 && e.held.Load() == 0 }

// Recycle takes back the memory of a payload the endpoint delivered
// joined from several frames (of a megabyte or more: a checkpoint's
// buddy copy), which its handler will not use again, nor anything else:
// the next such payload is joined into it, memory the process already
// uses, instead of memory new to it (page faults and clearing; the
// buffer would otherwise come back only after a garbage collection,
// which a PE with a small heap may not run for many checkpoints). Any
// other payload is left alone. Call it from the Handler's methods (the
// endpoint's loop), as the scheduler does.
//
// Called from Receive with the payload being delivered, it also takes
// back the buffer of the frame that payload came in, if the
// payload was all that frame held: the reader reads a later frame into
// it, memory the process already uses (a batch of a stencil's faces,
// decoded as it arrived, comes and goes in the same buffer every
// iteration).
func (e *TCP) Recycle(payload []byte) {
	if len(payload) == 0 {
		return
	}
	if data := e.core.takeAlone(payload); data != nil {
		e.recv.put(data)
		return
	}
	e.joined.put(payload)
}

// Flush sends the frames being filled and the due acknowledgements. Call it
// only from Handler callbacks.
func (e *TCP) Flush() { e.core.flush() }

// Forget stops all traffic with a failed peer: what was queued for it is
// dropped, nothing is resent to it, its late frames are ignored, its
// connection is closed and not dialed again. Call it only from Handler
// callbacks.
func (e *TCP) Forget(peer int) {
	if peer < 0 || peer >= e.cfg.Size || peer == e.cfg.Rank {
		return
	}
	e.core.forget(peer)
	p := &e.peers[peer]
	if p.forgotten {
		return
	}
	p.forgotten = true
	if p.gone != nil {
		close(p.gone)
	}
	if p.conn != nil {
		p.conn.close()
		p.conn = nil
	}
}

// DropConnection breaks the connection to peer, as a network failure
// would: what it held is lost, and the dialer connects again. Safe from
// any goroutine; tests use it.
func (e *TCP) DropConnection(peer int) {
	if peer >= 0 && peer < e.cfg.Size && peer != e.cfg.Rank {
		e.box.put(item{kind: itemDrop, ev: peer})
	}
}

var errDropped = errors.New("transport: connection dropped on purpose")

// Post makes ev arrive at Handler.Event on the endpoint goroutine.
func (e *TCP) Post(ev any) { e.box.put(item{kind: itemEvent, ev: ev}) }

// Backlog returns the payload bytes sent and not yet acknowledged.
func (e *TCP) Backlog() int { return int(e.stats.backlog.Load()) }

// Stats returns the endpoint's counters.
func (e *TCP) Stats() Stats { return e.stats.snapshot() }

// Close stops the endpoint: the loop sends the acknowledgements it owes
// (so that peers need not resend to a PE that left), the writers get a
// moment to put them on the wire, then every connection is closed.
func (e *TCP) Close() error {
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return nil
	}
	e.mu.closed = true
	e.mu.Unlock()
	e.cancel()
	e.ln.Close()
	if e.unixLn != nil {
		e.unixLn.Close()
	}
	done := make(chan struct{})
	e.box.put(item{kind: itemClose, done: done})
	select {
	case <-e.loopDone:
	case <-time.After(loopCloseTimeout):
		// A handler that does not return: its goroutine is left behind.
		e.log.Warn("transport: closing: the handler did not return; acknowledgements not flushed")
	}
	select {
	case <-done:
		deadline := time.NewTimer(drainTimeout)
		defer deadline.Stop()
		for _, c := range e.draining {
			select {
			case <-c.writerDone:
			case <-deadline.C:
			}
		}
	default:
	}
	e.mu.Lock()
	for nc := range e.mu.open {
		nc.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
	e.recv.close()
	e.joined.close()
	return nil
}

// track registers a socket to close on Close; false if closed already.
func (e *TCP) track(nc net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		nc.Close()
		return false
	}
	e.mu.open[nc] = struct{}{}
	return true
}

func (e *TCP) untrack(nc net.Conn) {
	e.mu.Lock()
	delete(e.mu.open, nc)
	e.mu.Unlock()
	nc.Close()
}

// The loop.

type itemKind uint8

const (
	itemFrame itemKind = iota
	itemEvent
	itemTick
	itemConnUp
	itemConnDown
	itemStart
	itemClose
	itemDrop
)

// item is one thing for the loop to do.
type item struct {
	kind itemKind
	f    frame
	// own: f.Data is a big frame's buffer of its own (recv.get), which
	// receive gives back to the pool if no payload points into it.
	own  bool
	conn *tcpConn
	ev   any
	done chan struct{}
}

// mailbox is the loop's unbounded queue: Post must never block, and the
// frames it holds are bounded by the peers' windows.
//
// One goroutine at a time runs the loop (handles items): the one that set
// running. That is the loop goroutine, or a reader that just put frames
// while no one ran the loop: it handles them itself (runInline), which
// spares a wake-up of the loop goroutine and a hand-over on the way of
// every message. Everything the loop owns is handed from one runner to
// the next under mu.
type mailbox struct {
	mu      sync.Mutex
	items   []item
	running bool
	wake    chan struct{}
	// busy is running || len(items) > 0, set under mu and read without
	// it: a reader polls its socket only while the loop has nothing to
	// do (spinner).
	busy atomic.Bool
}

func (m *mailbox) put(it item) {
	m.mu.Lock()
	m.items = append(m.items, it)
	m.busy.Store(true)
	idle := !m.running
	m.mu.Unlock()
	if idle {
		m.signal()
	}
}

func (m *mailbox) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// claim makes the caller the runner, if no one is, after queueing its.
func (m *mailbox) claim(its []item) bool {
	m.mu.Lock()
	m.items = append(m.items, its...)
	if m.running {
		m.busy.Store(true)
		m.mu.Unlock()
		return false
	}
	m.running = true
	m.busy.Store(true)
	m.mu.Unlock()
	return true
}

// take returns what is queued, keeping spare for what comes next; the
// runner stops being one when nothing is (and, with release, in any case:
// then what is left is for the loop goroutine).
func (m *mailbox) take(spare []item, release bool) []item {
	m.mu.Lock()
	items := m.items
	m.items = spare[:0]
	if len(items) == 0 || release {
		m.running = false
		m.items = items
		left := len(items) > 0
		m.busy.Store(left)
		m.mu.Unlock()
		if left {
			m.signal()
		}
		return nil
	}
	m.mu.Unlock()
	return items
}

// inlineRounds is how many times a reader that runs the loop takes what
// is queued before it leaves the rest to the loop goroutine and goes back
// to its socket (a frame, then the work slice it made runnable, then what
// that slice posted): the reader must not run the loop for long, since
// what its own socket brings (e.g. the acknowledgements a slice waits
// for) is read only when it returns.
const inlineRounds = 3

func (e *TCP) run() {
	for {
		select {
		case <-e.box.wake:
		case <-e.loopDone:
			return
		}
		if !e.box.claim(nil) {
			continue // a reader runs the loop and will see what is queued
		}
		e.drain(-1)
	}
}

// runInline queues its (frames a reader read) and, if no goroutine runs
// the loop, handles them and what they lead to on the caller's goroutine.
func (e *TCP) runInline(its []item) {
	if e.box.claim(its) {
		e.drain(inlineRounds)
	}
}

// drain runs the loop for its runner: it handles what is queued, up to
// rounds takes (-1: until nothing is), then stops being the runner.
func (e *TCP) drain(rounds int) {
	for round := 1; ; round++ {
		batch := e.box.take(e.spare, round == rounds+1)
		if batch == nil {
			return
		}
		for i := range batch {
			if e.handle(&batch[i]) {
				// Stopped: no one runs the loop again.
				close(e.loopDone)
				return
			}
			batch[i] = item{}
			e.writeDirty()
		}
		e.spare = batch
	}
}

// writeDirty writes what the last item queued on connections: on this
// goroutine while their writers are idle, as far as the sockets take it
// without blocking; the rest goes to the writers.
func (e *TCP) writeDirty() {
	for i, c := range e.dirty {
		c.dirty = false
		c.flush()
		e.dirty[i] = nil
	}
	e.dirty = e.dirty[:0]
}

// handle does one item; true when the loop must stop.
func (e *TCP) handle(it *item) bool {
	switch it.kind {
	case itemFrame:
		if e.h == nil {
			e.hold(*it, len(it.f.Head)+len(it.f.Data))
			return false
		}
		e.receive(it.conn, it.f)
		if it.own && !e.core.inPlace {
			e.recv.put(it.f.Data)
		}
	case itemEvent:
		if e.h == nil {
			e.hold(*it, 0)
			return false
		}
		e.h.Event(it.ev)
	case itemTick:
		e.tickQueued.Store(false)
		if e.h != nil {
			e.core.tick()
		}
	case itemConnUp:
		e.connUp(it.conn)
	case itemConnDown:
		e.connDown(it.conn)
	case itemStart:
		st := it.ev.(startTCP)
		e.h = st.h
		for r := range e.peers {
			e.peers[r].redial, e.peers[r].gone = st.redial[r], st.gone[r]
		}
		early := e.early
		e.early, e.earlyBytes = nil, 0
		for i := range early {
			e.handle(&early[i])
		}
	case itemDrop:
		if c := e.peers[it.ev.(int)].conn; c != nil {
			c.fail(errDropped)
		}
	case itemClose:
		if e.h != nil {
			e.core.flushAllAcks()
		}
		for r := range e.peers {
			if c := e.peers[r].conn; c != nil {
				c.drain()
				e.draining = append(e.draining, c)
			}
		}
		close(it.done)
		return true
	}
	return false
}

// hold keeps what arrived before Start, bounded: frames beyond the bound
// are dropped and resent later by their senders.
func (e *TCP) hold(it item, size int) {
	if it.kind == itemFrame && e.earlyBytes+size > e.cfg.Size*e.cfg.Window {
		return
	}
	e.early = append(e.early, it)
	e.earlyBytes += size + frameOverhead
}

func (e *TCP) receive(c *tcpConn, f frame) {
	if c == nil { // from this PE itself
		if err := e.core.receive(f); err != nil {
			panic(fmt.Sprintf("transport: own frame rejected: %v", err))
		}
		return
	}
	if e.peers[c.rank].forgotten {
		return
	}
	if err := e.core.receive(f); err != nil {
		// Counted by the core. A peer that sends what does not fit the
		// protocol loses its connection.
		e.log.Warn("transport: dropped frame and its connection", "peer", c.rank, "addr", c.remote, "err", err)
		c.close()
	}
}

func (e *TCP) connUp(c *tcpConn) {
	p := &e.peers[c.rank]
	if p.forgotten {
		c.close()
		return
	}
	if p.conn != nil {
		p.conn.close() // the peer dialed again: its old connection is dead
	}
	p.conn, p.upAt = c, time.Now()
	if c.unix {
		e.stats.unixConns.Add(1)
	} else {
		e.stats.tcpConns.Add(1)
	}
	e.log.Debug("transport: connected", "peer", c.rank, "addr", c.remote)
	// Frames sent on the last connection may be lost: go back now.
	e.core.peerLost(c.rank)
}

func (e *TCP) connDown(c *tcpConn) {
	p := &e.peers[c.rank]
	if p.conn != c {
		return // replaced or forgotten already
	}
	p.conn = nil
	e.log.Debug("transport: connection lost", "peer", c.rank, "addr", c.remote, "err", c.err)
	if p.redial != nil && !p.forgotten {
		select {
		case p.redial <- struct{}{}:
		default:
		}
	}
}

// transmit hands a frame to the writer of the connection to PE to. With
// no connection it is dropped: the core resends it when one comes up.
func (e *TCP) transmit(to int, f frame) {
	if f.Seq != 0 && e.cfg.DropOutgoing != nil && e.cfg.DropOutgoing(to, f.Seq) {
		return
	}
	if to == e.cfg.Rank {
		// To itself: through the mailbox, in a copy of its own as a frame
		// read from a socket would be.
		buf := make([]byte, len(f.Head)+len(f.Data))
		copy(buf[copy(buf, f.Head):], f.Data)
		f.Head, f.Data = nil, buf
		e.box.put(item{kind: itemFrame, f: f})
		return
	}
	if c := e.peers[to].conn; c != nil && c.enqueue(f) && !c.dirty {
		c.dirty = true
		e.dirty = append(e.dirty, c)
	}
}

// runTicker posts ticks to the loop: from cfg.Ticks one per value, or from
// a ticker with at most one tick waiting.
func (e *TCP) runTicker() {
	defer e.wg.Done()
	ticks, coalesce := e.cfg.Ticks, false
	if ticks == nil {
		t := time.NewTicker(e.cfg.TickInterval)
		defer t.Stop()
		ticks, coalesce = t.C, true
	}
	for {
		select {
		case <-e.ctx.Done():
			return
		case _, ok := <-ticks:
			if !ok {
				return
			}
			if !coalesce || e.tickQueued.CompareAndSwap(false, true) {
				e.box.put(item{kind: itemTick})
			}
		}
	}
}

// Connections.

// tcpConn is one authenticated connection to PE rank.
//
// Writes: the loop queues frames (enqueue) and, after each item it
// handles, writes them itself (flush) when the writer goroutine is idle,
// as far as the socket takes them without blocking; what is left, and
// what the loop queues while the writer is busy, the writer writes,
// blocking as long as it must. So a frame is written on the loop's
// goroutine at once in the common case, and a peer that stops reading
// never blocks the loop. Whoever writes owns the scratch buffers of its
// side (loop: lframes, lhead, lbufs; writer: frames, headers, bufs).
type tcpConn struct {
	e      *TCP
	nc     net.Conn        // the connection: sock, or TLS over it
	sock   net.Conn        // the socket, as tracked (see TCP.track)
	raw    syscall.RawConn // for writes that must not block; nil: the writer writes all
	tls    *tlsState       // nil without TLS (see tcp_tls.go)
	unix   bool            // over a Unix socket (a peer on this host)
	rank   int
	remote string
	err    error // why it closed, set before dead is closed

	mu struct {
		sync.Mutex
		queue []frame
		// partial is what the loop could not write without blocking,
		// for the writer to write first; partialHeld the frames in it.
		partial     net.Buffers
		partialHeld int
		writing     bool // the writer is writing
		closed      bool
		draining    bool
	}
	wake       chan struct{}
	dead       chan struct{}
	writerDone chan struct{}
	closeOnce  sync.Once

	// Owned by the loop.
	dirty   bool
	lframes []frame
	lhead   []byte
	lbufs   net.Buffers
	direct  directWriter

	// Owned by the writer goroutine.
	frames  []frame
	headers []byte
	bufs    net.Buffers
	pending net.Buffers
}

func (e *TCP) newConn(nc net.Conn, rank int) *tcpConn {
	c := &tcpConn{e: e, nc: nc, sock: nc, rank: rank,
		wake: make(chan struct{}, 1), dead: make(chan struct{}), writerDone: make(chan struct{})}
	if tc, ok := nc.(*tls.Conn); ok {
		c.tls = newTLSState(tc)
		c.sock = c.tls.sealed.Conn
	}
	c.remote = connName(c.sock)
	if tc, ok := c.sock.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if uc, ok := c.sock.(*net.UnixConn); ok {
		c.unix = true
		// A Unix socket's send buffer bounds what is in flight to the
		// reader (wmem_default, 208 KiB on Linux, unless raised): a
		// large frame would go in pieces, each a wake-up of both
		// sides. TCP's grows by itself up to tcp_wmem's maximum; this
		// asks for as much (the kernel caps it at wmem_max).
		uc.SetWriteBuffer(unixWriteBuffer)
	}
	if sc, ok := c.sock.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
		}
	}
	return c
}

// start tells the loop the connection is up, then starts its reader (so
// that its frames reach the loop after that) and its writer.
func (c *tcpConn) start() {
	c.e.box.put(item{kind: itemConnUp, conn: c})
	c.e.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// enqueue queues f for writing; false if the connection is closed. The
// loop writes it after the item it handles (flush).
func (c *tcpConn) enqueue(f frame) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	c.mu.queue = append(c.mu.queue, f)
	c.e.held.Add(1)
	return true
}

// flush writes the queued frames on the loop's goroutine if the writer is
// idle, without blocking; the rest, or everything if the writer is busy,
// goes to the writer.
func (c *tcpConn) flush() {
	c.mu.Lock()
	if c.mu.closed || len(c.mu.queue) == 0 {
		c.mu.Unlock()
		return
	}
	if c.mu.writing || c.mu.partial != nil || c.raw == nil {
		c.mu.Unlock()
		c.wakeWriter()
		return
	}
	c.lframes, c.mu.queue = c.mu.queue, c.lframes[:0]
	c.mu.Unlock()
	n := len(c.lframes)
	c.lbufs, c.lhead = appendFrames(c.lbufs[:0], c.lhead, c.lframes)
	if c.tls != nil {
		c.flushTLS(n)
		return
	}
	rest, err := c.direct.write(c.raw, c.lbufs)
	clear(c.lframes)
	c.lframes = c.lframes[:0]
	if err != nil {
		clear(c.lbufs)
		c.e.held.Add(int64(-n))
		c.fail(err)
		return
	}
	if len(rest) == 0 {
		clear(c.lbufs)
		c.e.held.Add(int64(-n))
		return
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		clear(c.lbufs)
		c.e.held.Add(int64(-n))
		return
	}
	c.mu.partial, c.mu.partialHeld = rest, n
	c.mu.Unlock()
	c.wakeWriter()
}

// flushTLS is flush's end for a TLS connection: the n frames in lbufs are
// sealed (and so released), the records written without blocking, and
// what the socket did not take left to the writer.
func (c *tcpConn) flushTLS(n int) {
	err := c.tls.seal(c.lbufs, nil)
	clear(c.lframes)
	c.lframes = c.lframes[:0]
	clear(c.lbufs)
	c.e.held.Add(int64(-n))
	if err != nil {
		c.fail(err)
		return
	}
	sealed := c.tls.sealed.take(c.tls.spare)
	c.tls.spare = nil
	c.lbufs = append(c.lbufs[:0], sealed)
	rest, err := c.direct.write(c.raw, c.lbufs)
	if err != nil {
		clear(c.lbufs)
		c.fail(err)
		return
	}
	if len(rest) == 0 {
		clear(c.lbufs)
		c.tls.spare = sealed
		return
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		clear(c.lbufs)
		return
	}
	// The writer writes the rest; sealed is its until then.
	c.mu.partial, c.mu.partialHeld = rest, 0
	c.mu.Unlock()
	c.wakeWriter()
}

func (c *tcpConn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// drain makes the writer write what is queued, then shut the sending side.
func (c *tcpConn) drain() {
	c.mu.Lock()
	c.mu.draining = true
	c.mu.Unlock()
	c.wakeWriter()
}

// close closes the socket (once) and tells the loop.
func (c *tcpConn) close() { c.fail(nil) }

// fail closes the connection (once) for err and tells the loop. A write
// that failed because the peer closed its end (EPIPE) leaves the socket's
// read side to the reader, which closes the socket once it has read what
// the peer sent before it closed (its last acknowledgements, sent as its
// endpoint closed): on a Unix socket the write fails as soon as the peer
// closed, before the reader may have read them.
func (c *tcpConn) fail(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.mu.closed = true
		c.e.held.Add(-int64(len(c.mu.queue) + c.mu.partialHeld))
		c.mu.queue, c.mu.partial, c.mu.partialHeld = nil, nil, 0
		c.mu.Unlock()
		c.err = err
		close(c.dead)
		if cw, ok := c.sock.(interface{ CloseWrite() error }); ok && errors.Is(err, syscall.EPIPE) {
			cw.CloseWrite()
		} else {
			c.e.untrack(c.sock)
		}
		c.e.box.put(item{kind: itemConnDown, conn: c})
	})
}

// writeLoop writes what the loop left to it: the rest of a write the
// socket did not take at once, then the frames queued meanwhile, in one
// vectored write.
func (c *tcpConn) writeLoop() {
	defer c.e.wg.Done()
	defer close(c.writerDone)
	for {
		select {
		case <-c.wake:
		case <-c.dead:
			return
		}
		for {
			c.mu.Lock()
			if c.mu.closed {
				c.mu.Unlock()
				return
			}
			partial, held := c.mu.partial, c.mu.partialHeld+len(c.mu.queue)
			c.mu.partial, c.mu.partialHeld = nil, 0
			c.frames, c.mu.queue = c.mu.queue, c.frames[:0]
			draining := c.mu.draining
			// With TLS, partial holds no frame (they were sealed) but
			// must be written all the same.
			work := held > 0 || len(partial) > 0
			c.mu.writing = work
			c.mu.Unlock()
			if !work {
				if draining {
					// The socket's: with TLS, no close_notify (it would
					// stay in the sealed buffer); the peer reads EOF.
					if cw, ok := c.sock.(interface{ CloseWrite() error }); ok {
						cw.CloseWrite()
					}
					return
				}
				break
			}
			err := c.write(partial)
			c.e.held.Add(int64(-held))
			c.mu.Lock()
			c.mu.writing = false
			c.mu.Unlock()
			if err != nil {
				c.fail(err)
				return
			}
		}
	}
}

// write writes partial (the rest of the loop's last write, whose buffers
// the loop leaves alone until this is done), then c.frames.
func (c *tcpConn) write(partial net.Buffers) error {
	c.bufs = append(c.bufs[:0], partial...)
	c.bufs, c.headers = appendFrames(c.bufs, c.headers, c.frames)
	c.pending = c.bufs
	var err error
	if c.tls != nil {
		err = c.writeTLS(partial)
	} else {
		_, err = c.pending.WriteTo(c.nc)
	}
	clear(c.frames)
	clear(c.bufs)
	clear(partial)
	c.frames = c.frames[:0]
	return err
}

// writeTLS is write for a TLS connection: partial is records the loop
// sealed and could not write, c.bufs (after partial) the frames to seal.
func (c *tcpConn) writeTLS(partial net.Buffers) error {
	out := func(b []byte) error {
		_, err := c.sock.Write(b)
		return err
	}
	for _, b := range partial {
		if err := out(b); err != nil {
			return err
		}
	}
	if err := c.tls.seal(c.bufs[len(partial):], func() error {
		b := c.tls.sealed.take(c.tls.writerSpare)
		c.tls.writerSpare = nil
		err := out(b)
		c.tls.writerSpare = b
		return err
	}); err != nil {
		return err
	}
	b := c.tls.sealed.take(c.tls.writerSpare)
	c.tls.writerSpare = nil
	if len(b) > 0 {
		if err := out(b); err != nil {
			return err
		}
	}
	c.tls.writerSpare = b
	return nil
}

// appendFrames appends the wire form of frames to bufs: each frame's
// header (in headers, grown as needed), head and data.
func appendFrames(bufs net.Buffers, headers []byte, frames []frame) (net.Buffers, []byte) {
	n := len(frames) * frameHeaderSize
	headers = slices.Grow(headers[:0], n)[:n]
	for i := range frames {
		f := &frames[i]
		h := headers[i*frameHeaderSize : (i+1)*frameHeaderSize]
		putFrameHeader(h, f)
		bufs = append(bufs, h)
		if len(f.Head) > 0 {
			bufs = append(bufs, f.Head)
		}
		if len(f.Data) > 0 {
			bufs = append(bufs, f.Data)
		}
	}
	return bufs, headers
}

func putFrameHeader(h []byte, f *frame) {
	binary.LittleEndian.PutUint32(h[0:], f.From)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(f.Head)))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(f.Data)))
	binary.LittleEndian.PutUint64(h[12:], f.Seq)
	binary.LittleEndian.PutUint64(h[20:], f.Ack)
	binary.LittleEndian.PutUint64(h[28:], f.ResendFrom)
}

// parseFrameHeader decodes a frame header; its head and data lengths.
func parseFrameHeader(h []byte) (f frame, headLen, dataLen uint32) {
	f.From = binary.LittleEndian.Uint32(h[0:])
	headLen = binary.LittleEndian.Uint32(h[4:])
	dataLen = binary.LittleEndian.Uint32(h[8:])
	f.Seq = binary.LittleEndian.Uint64(h[12:])
	f.Ack = binary.LittleEndian.Uint64(h[20:])
	f.ResendFrom = binary.LittleEndian.Uint64(h[28:])
	return f, headLen, dataLen
}

// Reading: the reader reads into a chunk of readChunk bytes as much as
// the socket holds, hands every whole frame in it to the loop in one
// batch, and reads on after them. Frames' head and data are slices of the
// chunk, so the payloads delivered from them share it: a chunk that gave
// out a payload is never written again (the handler owns the payload)
// and the next read goes to a new chunk once this one is nearly full.
// A frame of more than bigFrame bytes gets a buffer of its own, read
// into directly. Chunks and big frames' buffers come from e.recv, which
// takes them back once nothing refers to them.
const (
	readChunk  = 64 << 10
	bigFrame   = 16 << 10
	minReadGap = 4 << 10 // read into a new chunk when less is left
)

// readLoop reads frames and passes them to the loop.
func (c *tcpConn) readLoop() {
	defer c.e.wg.Done()
	defer c.e.untrack(c.sock) // closed already, unless a write failed (fail)
	var in io.Reader = c.nc
	if c.tls == nil && c.raw != nil {
		if r := newRawReader(c.raw, &c.e.spin); r != nil {
			in = r
		}
	}
	buf := c.e.recv.get(readChunk)
	r, w := 0, 0    // buf[r:w] is read and not yet passed on
	pinned := false // a frame passed on refers to buf
	var batch []item
	for {
		// Pass on the whole frames read.
		for w-r >= frameHeaderSize {
			f, headLen, dataLen := parseFrameHeader(buf[r:])
			if err := c.check(f, headLen, dataLen); err != nil {
				c.e.log.Warn("transport: malformed frame: dropping the connection", "peer", c.rank, "addr", c.remote, "err", err)
				c.e.stats.malformed.Add(1)
				c.fail(err)
				return
			}
			n := int(headLen) + int(dataLen)
			if n > bigFrame {
				break
			}
			if w-r-frameHeaderSize < n {
				break
			}
			if n > 0 {
				body := buf[r+frameHeaderSize : r+frameHeaderSize+n : r+frameHeaderSize+n]
				f.Head, f.Data = nil, body // one piece of the stream
				pinned = true
			}
			batch = append(batch, item{kind: itemFrame, f: f, conn: c})
			r += frameHeaderSize + n
		}
		if len(batch) > 0 {
			c.e.runInline(batch)
			clear(batch)
			batch = batch[:0]
		}
		if w-r >= frameHeaderSize {
			// A big frame: read its body into a buffer of its own.
			f, headLen, dataLen := parseFrameHeader(buf[r:])
			if n := int(headLen) + int(dataLen); n > bigFrame {
				body := c.e.recv.get(n)
				got := copy(body, buf[r+frameHeaderSize:w])
				r += frameHeaderSize + got
				// A long copy: through net.Conn, so that the runtime
				// may run other goroutines meanwhile.
				if _, err := io.ReadFull(c.nc, body[got:]); err != nil {
					c.fail(err)
					return
				}
				f.Head, f.Data = nil, body // one piece of the stream
				batch = append(batch, item{kind: itemFrame, f: f, own: true, conn: c})
				c.e.runInline(batch)
				clear(batch)
				batch = batch[:0]
				continue
			}
		}
		// Room to read into: what is left of buf, else a new chunk
		// (the same one if nothing refers to it) with the unread bytes.
		need := frameHeaderSize
		if w-r >= frameHeaderSize {
			_, headLen, dataLen := parseFrameHeader(buf[r:])
			need += int(headLen) + int(dataLen)
		}
		if len(buf)-w < minReadGap || len(buf)-r < need || (!pinned && r == w) {
			switch {
			case !pinned && r == w:
				r, w = 0, 0
			case !pinned:
				w = copy(buf, buf[r:w])
				r = 0
			default:
				next := c.e.recv.get(readChunk)
				w = copy(next, buf[r:w])
				buf, r, pinned = next, 0, false
			}
		}
		n, err := in.Read(buf[w:])
		if err != nil {
			c.fail(err)
			return
		}
		w += n
	}
}

// check validates a frame header against the connection and the job.
func (c *tcpConn) check(f frame, headLen, dataLen uint32) error {
	if int64(f.From) >= int64(c.e.cfg.Size) {
		return fmt.Errorf("%w: rank %d, job size %d", ErrUnknownRank, f.From, c.e.cfg.Size)
	}
	if int(f.From) != c.rank {
		return fmt.Errorf("%w: frame from rank %d on the connection of rank %d", ErrMalformed, f.From, c.rank)
	}
	if uint64(headLen)+uint64(dataLen) > uint64(c.e.cfg.MaxFrame) {
		return fmt.Errorf("%w: %d+%d bytes, frame size %d", ErrMalformed, headLen, dataLen, c.e.cfg.MaxFrame)
	}
	return nil
}

// Handshake.

// ErrRefused is the error of a connection that did not prove the job
// secret or broke the handshake.
var ErrRefused = errors.New("transport: connection refused")

func handshakeMAC(secret []byte, role string, dialerNonce, acceptorNonce []byte, dialer, acceptor int) []byte {
	return ProofMAC(secret, "gochare-tcp "+role, dialerNonce, acceptorNonce, dialer, acceptor)
}

// ProofMAC is the proof of the job secret in a handshake between a dialer
// and an acceptor (numbered dialer and acceptor) that exchanged nonces:
// an HMAC-SHA256 of label, both nonces and both numbers. label names the
// protocol and the side that proves (so that one side's proof cannot be
// replayed as the other's or in another protocol).
func ProofMAC(secret []byte, label string, dialerNonce, acceptorNonce []byte, dialer, acceptor int) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(label))
	mac.Write(dialerNonce)
	mac.Write(acceptorNonce)
	var ids [8]byte
	binary.LittleEndian.PutUint32(ids[0:], uint32(dialer))
	binary.LittleEndian.PutUint32(ids[4:], uint32(acceptor))
	mac.Write(ids[:])
	return mac.Sum(nil)
}

// acceptLoop accepts the connections of ln (the TCP listener or the
// Unix one), each authenticated by the same handshake.
func (e *TCP) acceptLoop(ln net.Listener) {
	defer e.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if e.ctx.Err() != nil {
				return
			}
			e.log.Warn("transport: accept", "err", err)
			select {
			case <-e.ctx.Done():
				return
			case <-time.After(minRedial):
			}
			continue
		}
		if !e.track(nc) {
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			c, err := e.accept(nc)
			if err != nil {
				name := connName(nc) // while the socket is open
				e.untrack(nc)
				if e.ctx.Err() == nil {
					// Logged, then counted: who sees the count finds the line.
					e.log.Warn("transport: refused connection", "addr", name, "err", err)
					e.stats.refused.Add(1)
				}
				return
			}
			c.start()
		}()
	}
}

// accept runs the acceptor's side of the handshake.
func (e *TCP) accept(nc net.Conn) (*tcpConn, error) {
	nc.SetDeadline(time.Now().Add(handshakeTimeout))
	if e.cfg.TLS != nil {
		tc := tlsServer(nc, e.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("%w: TLS: %w", ErrRefused, err)
		}
		nc = tc
	}
	var hello [helloSize]byte
	if _, err := io.ReadFull(nc, hello[:]); err != nil {
		return nil, fmt.Errorf("%w: no handshake: %w", ErrRefused, err)
	}
	if string(hello[:4]) != tcpMagic {
		return nil, fmt.Errorf("%w: not a gochare transport handshake", ErrRefused)
	}
	dialer := binary.LittleEndian.Uint32(hello[4:])
	acceptor := binary.LittleEndian.Uint32(hello[8:])
	if int(acceptor) != e.cfg.Rank || int64(dialer) >= int64(e.cfg.Rank) {
		return nil, fmt.Errorf("%w: rank %d dialing rank %d (this is rank %d of %d; lower ranks dial higher ones)",
			ErrRefused, dialer, acceptor, e.cfg.Rank, e.cfg.Size)
	}
	dialerNonce := hello[12:]
	var reply [nonceSize + macSize]byte
	rand.Read(reply[:nonceSize])
	acceptorNonce := reply[:nonceSize]
	copy(reply[nonceSize:], handshakeMAC(e.cfg.Secret, "acceptor", dialerNonce, acceptorNonce, int(dialer), e.cfg.Rank))
	if _, err := nc.Write(reply[:]); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	var proof [macSize]byte
	if _, err := io.ReadFull(nc, proof[:]); err != nil {
		return nil, fmt.Errorf("%w: rank %d gave no proof of the job secret: %w", ErrRefused, dialer, err)
	}
	if !hmac.Equal(proof[:], handshakeMAC(e.cfg.Secret, "dialer", dialerNonce, acceptorNonce, int(dialer), e.cfg.Rank)) {
		return nil, fmt.Errorf("%w: rank %d does not know the job secret", ErrRefused, dialer)
	}
	if _, err := nc.Write([]byte{1}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	nc.SetDeadline(time.Time{})
	return e.newConn(nc, int(dialer)), nil
}

// dial connects to PE rank at TCP address addr and runs the dialer's
// side of the handshake: over the peer's Unix socket (localAddr) while
// *local, else, or when that fails, over TCP. A PE on another host (or
// network namespace) is not found at the Unix socket; a connection there
// that fails for any other reason (something else answers: the name is
// anyone's on the host to take) sets *local to false, and this peer is
// dialed over TCP from then on.
func (e *TCP) dial(rank int, addr string, local *bool) (*tcpConn, error) {
	if name := e.localAddr(addr); name != "" && *local {
		c, err := e.dialOn(rank, "unix", name, handshakeTimeout/2)
		if err == nil {
			return c, nil
		}
		if e.ctx.Err() != nil {
			return nil, err
		}
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno != syscall.ECONNREFUSED {
			*local = false
			e.log.Warn("transport: no PE at the Unix socket of a peer: connecting over TCP", "peer", rank, "addr", name, "err", err)
		}
	}
	return e.dialOn(rank, "tcp", addr, handshakeTimeout)
}

// dialOn connects to PE rank at addr on network ("tcp", or "unix" for its
// Unix socket) and runs the dialer's side of the handshake, within
// timeout. On a Unix socket it first checks that the process listening
// there runs as this one's user (UnixPeerUser), so that the frames go to
// no other user's process even if one took the name first and relays the
// handshake to the PE.
func (e *TCP) dialOn(rank int, network, addr string, timeout time.Duration) (*tcpConn, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	nc, err := new(net.Dialer).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if !e.track(nc) {
		return nil, ErrClosed
	}
	if network == "unix" {
		if err := UnixPeerUser(nc); err != nil {
			e.untrack(nc)
			e.stats.refused.Add(1)
			return nil, fmt.Errorf("%w: %s: %w", ErrRefused, addr, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	sock := nc
	if e.cfg.TLS != nil {
		tc := tlsClient(nc, e.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			e.untrack(sock)
			return nil, fmt.Errorf("%w: TLS with the PE at %s: %w", ErrRefused, connName(sock), err)
		}
		nc = tc
	}
	c, err := e.dialHandshake(nc, rank)
	if err != nil {
		e.untrack(sock)
		return nil, err
	}
	if !stop() {
		e.untrack(sock)
		return nil, ctx.Err()
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

func (e *TCP) dialHandshake(nc net.Conn, rank int) (*tcpConn, error) {
	var hello [helloSize]byte
	copy(hello[:], tcpMagic)
	binary.LittleEndian.PutUint32(hello[4:], uint32(e.cfg.Rank))
	binary.LittleEndian.PutUint32(hello[8:], uint32(rank))
	rand.Read(hello[12:])
	dialerNonce := hello[12:]
	if _, err := nc.Write(hello[:]); err != nil {
		return nil, err
	}
	var reply [nonceSize + macSize]byte
	if _, err := io.ReadFull(nc, reply[:]); err != nil {
		return nil, fmt.Errorf("%w: no handshake reply: %w", ErrRefused, err)
	}
	acceptorNonce := reply[:nonceSize]
	if !hmac.Equal(reply[nonceSize:], handshakeMAC(e.cfg.Secret, "acceptor", dialerNonce, acceptorNonce, e.cfg.Rank, rank)) {
		e.stats.refused.Add(1)
		return nil, fmt.Errorf("%w: the PE at %s does not know the job secret", ErrRefused, nc.RemoteAddr())
	}
	if _, err := nc.Write(handshakeMAC(e.cfg.Secret, "dialer", dialerNonce, acceptorNonce, e.cfg.Rank, rank)); err != nil {
		return nil, err
	}
	var ok [1]byte
	if _, err := io.ReadFull(nc, ok[:]); err != nil || ok[0] != 1 {
		return nil, fmt.Errorf("%w: the PE at %s refused the handshake", ErrRefused, nc.RemoteAddr())
	}
	return e.newConn(nc, rank), nil
}

// dialer keeps a connection to PE rank (of higher rank than this one): it
// dials at once and again each time the loop asks, with a growing pause
// after failures and after connections that broke early, until the peer
// is forgotten or the endpoint closes.
func (e *TCP) dialer(rank int, addr string, redial <-chan struct{}, gone <-chan struct{}) {
	defer e.wg.Done()
	backoff := minRedial
	failures := 0
	local := true // try the peer's Unix socket first (see dial)
	for {
		c, err := e.dial(rank, addr, &local)
		if err == nil {
			up := time.Now()
			c.start()
			failures = 0
			select {
			case <-redial:
			case <-gone:
				return
			case <-e.ctx.Done():
				return
			}
			if time.Since(up) >= maxRedial {
				backoff = minRedial
				continue
			}
		} else {
			if e.ctx.Err() != nil {
				return
			}
			failures++
			level := slog.LevelDebug
			if errors.Is(err, ErrRefused) {
				level = slog.LevelWarn
			}
			if failures == 1 || errors.Is(err, ErrRefused) {
				e.log.Log(e.ctx, level, "transport: cannot connect", "peer", rank, "addr", addr, "err", err)
			}
		}
		select {
		case <-time.After(backoff):
		case <-gone:
			return
		case <-e.ctx.Done():
			return
		}
		backoff = min(2*backoff, maxRedial)
	}
}

// connName names the other end of the socket nc in log lines and
// errors: its address, or for a Unix socket the peer process (the other
// end of a Unix socket has no address).
func connName(nc net.Conn) string {
	if _, ok := nc.(*net.UnixConn); ok {
		if pid, uid, err := unixPeer(nc); err == nil {
			return fmt.Sprintf("unix socket, pid %d uid %d", pid, uid)
		}
		return "unix socket"
	}
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return "?"
}

// SocketReader returns a reader of nc's socket that reads as the
// endpoint's connections do (on Linux by RawSyscall, without the
// runtime's bookkeeping for a call that may block, which wakes the
// monitor thread of an idle process; an empty socket waits in the
// netpoller), without their spin; nc itself for a connection without a
// socket of its own (TLS) and on other systems. The launcher reads its
// streams to the loggers with it.
func SocketReader(nc net.Conn) io.Reader {
	sc, ok := nc.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nc
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	if r := newRawReader(raw, nil); r != nil {
		return r
	}
	return nc
}
