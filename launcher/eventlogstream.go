package launcher

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// The event logger's record stream: with --event-logger every PE opens a
// connection to every logger when it starts (the logger's listener of
// the dump stream, or its Unix socket on its host; the handshake of
// loggerconn.go with magic "GCE1"). On it the PE sends its record
// batches (logging.EventLogBatch, to the one logger its protocol names)
// and the fetches of its restored tasks (logging.EventLogFetch, to every
// live logger); the logger, a logging.EventLogger, stores the batches
// and replies to them with the acknowledgements of every PE's records
// (the acknowledgements of all PEs reach every PE: that is what makes a
// record stable everywhere without PE-to-PE acknowledgements), and
// answers a fetch on the fetching PE's connection, after closing the
// streams of the PEs the fetch names failed. Frames, little-endian:
//
//	header:  kind u8, body length u32
//	records (PE -> logger, kind 1): epoch u64, determinants u32, progress u32, the records
//	acks    (logger -> PE, kind 2): count u32, count x (epoch u64, creator u32, up to u64)
//	fetch   (PE -> logger, kind 3): epoch u64, recovery u32, failed u32, failed x PE u32, tasks u32, tasks x task u64
//	answer  (logger -> PE, kind 4): recovery u32, count u32, count x (task u64, determinants u32, progress u32, the records)
//	board   (logger -> PE, kind 5, first on a Unix connection): creators u32, with the board's memory file (ackboard.go)
//
// A determinant is sender u64, srn u64, path length u32, path, receiver
// u64, rsn u64, creator u32, seq u64; a progress record task u64, rsn
// u64, creator u32, seq u64. A batch's creator is the PE at the other
// end of the connection. The logger coalesces acknowledgements: it
// replies once to the batches of a PE read in together, with the latest
// acknowledgement of each creator not yet sent to that PE, so a PE
// learns of the others' records when it sends its own (eventLogServer.read
// says why that is soon enough), in one frame per reply. A logger sends
// a PE that connects the acknowledgements it already made in the current
// period. A PE on the logger's host (a Unix connection without TLS) reads
// them instead on the logger's acknowledgement board, memory both map
// (ackboard.go), at every TakeAcks, and gets no reply frames.
//
// A PE that loses its connection to a logger (or cannot open one) posts
// scheduler.LoggerLost, and answers its fetches still due there as empty
// (scheduler.EventLogAnswer without envelopes): the protocol then stops
// the job if a restored task needed that logger's records
// (logging.ErrEventLogLost). A malformed frame closes the connection
// (the logger logs it; the PE takes the logger for lost).
const (
	elKindRecords = 1
	elKindAcks    = 2
	elKindFetch   = 3
	elKindAnswer  = 4
	elHeaderSize  = 5
	elAckSize     = 8 + 4 + 8
	// maxEventLogFrame bounds a frame's body.
	maxEventLogFrame = 1 << 30
)

// errEventLogFrame reports a malformed event-log frame.
var errEventLogFrame = errors.New("launcher: malformed event log frame")

// elWriter appends the frames' fields.
type elWriter struct{ b []byte }

func (w *elWriter) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *elWriter) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// begin starts a frame of kind; end fills its length.
func (w *elWriter) begin(kind byte) int {
	at := len(w.b)
	w.b = append(w.b, kind, 0, 0, 0, 0)
	return at
}

func (w *elWriter) end(at int) {
	binary.LittleEndian.PutUint32(w.b[at+1:], uint32(len(w.b)-at-elHeaderSize))
}

func (w *elWriter) determinant(d logging.Determinant) {
	w.u64(uint64(d.Message.Sender))
	w.u64(d.Message.SRN)
	w.u32(uint32(d.Message.CPI.Len()))
	w.b = d.Message.CPI.AppendEncoded(w.b)
	w.u64(uint64(d.Receiver))
	w.u64(d.RSN)
	w.u32(uint32(d.Creator))
	w.u64(d.Seq)
}

func (w *elWriter) progress(p logging.Progress) {
	w.u64(uint64(p.Task))
	w.u64(p.RSN)
	w.u32(uint32(p.Creator))
	w.u64(p.Seq)
}

func (w *elWriter) records(dets []logging.Determinant, prog []logging.Progress) {
	w.u32(uint32(len(dets)))
	w.u32(uint32(len(prog)))
	for _, d := range dets {
		w.determinant(d)
	}
	for _, p := range prog {
		w.progress(p)
	}
}

// elReader takes a frame's fields; the first short read or bad value
// sets err, and later reads return zeros.
type elReader struct {
	b   []byte
	err error
}

func (r *elReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errEventLogFrame, what)
	}
	r.b = nil
}

func (r *elReader) u32() uint32 {
	if len(r.b) < 4 {
		r.fail("short")
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *elReader) u64() uint64 {
	if len(r.b) < 8 {
		r.fail("short")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// count reads a count of items of at least min bytes each, checked
// against what is left.
func (r *elReader) count(min int) int {
	n := r.u32()
	if uint64(n)*uint64(min) > uint64(len(r.b)) {
		r.fail("count beyond the frame")
		return 0
	}
	return int(n)
}

func (r *elReader) determinant() logging.Determinant {
	var d logging.Determinant
	d.Message.Sender = commutative.TaskID(r.u64())
	d.Message.SRN = r.u64()
	if n := r.u32(); n > 0 {
		if uint64(n) > uint64(len(r.b)) {
			r.fail("path beyond the frame")
			return d
		}
		p, err := commutative.ParsePath(r.b[:n])
		if err != nil {
			r.fail(err.Error())
			return d
		}
		d.Message.CPI = p
		r.b = r.b[n:]
	}
	d.Receiver = logging.TaskID(r.u64())
	d.RSN = r.u64()
	d.Creator = logging.PEID(int32(r.u32()))
	d.Seq = r.u64()
	return d
}

func (r *elReader) progress() logging.Progress {
	return logging.Progress{Task: logging.TaskID(r.u64()), RSN: r.u64(), Creator: logging.PEID(int32(r.u32())), Seq: r.u64()}
}

const (
	elDeterminantMin = 8 + 8 + 4 + 8 + 8 + 4 + 8
	elProgressSize   = 8 + 8 + 4 + 8
)

func (r *elReader) records() ([]logging.Determinant, []logging.Progress) {
	return r.recordsInto(nil, nil)
}

// recordsInto reads records into dets and prog, emptied first (nil
// slices for none).
func (r *elReader) recordsInto(dets []logging.Determinant, prog []logging.Progress) ([]logging.Determinant, []logging.Progress) {
	nd := r.count(elDeterminantMin)
	np := r.u32()
	dets, prog = dets[:0], prog[:0]
	if nd > 0 && dets == nil {
		dets = make([]logging.Determinant, 0, nd)
	}
	for range nd {
		if r.err != nil {
			return nil, nil
		}
		dets = append(dets, r.determinant())
	}
	if uint64(np)*elProgressSize > uint64(len(r.b)) {
		r.fail("count beyond the frame")
		return nil, nil
	}
	if np > 0 && prog == nil {
		prog = make([]logging.Progress, 0, np)
	}
	for range np {
		prog = append(prog, r.progress())
	}
	return dets, prog
}

// done fails on trailing bytes and returns the first error.
func (r *elReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	return r.err
}

// readEventLogFrame reads one frame: its kind and body.
func readEventLogFrame(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	var h [elHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if n > maxEventLogFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes", errEventLogFrame, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return h[0], buf, nil
}

// eventLogServer is a logger's side of the record stream: one
// logging.EventLogger, fed by the connections of every PE.
type eventLogServer struct {
	logger int
	log    *slog.Logger
	mu     sync.Mutex
	state  *logging.EventLogger
	// acks are the latest acknowledgement of each creator in the current
	// period (indexed by creator; UpTo 0: none yet), what a reply to a PE
	// compares with what that PE was sent; peers the PEs' connections.
	acks  []logging.EventLogAck
	peers map[int]*elPeer
	// board shares acks with the PEs of this host (ackboard.go; nil:
	// none); socketPeers counts the PEs that do not read it, to whom
	// relayTo may have to relay.
	board       *ackBoard
	socketPeers atomic.Int32
}

// elPeer is the logger's side of one PE's connection: the
// acknowledgements sent to it (the latest per creator).
type elPeer struct {
	pe  int
	nc  net.Conn
	raw syscall.RawConn
	// client is set once the PE sent a batch here (under the server's
	// mu); relay wakes its relay goroutine, which sends a PE that is no
	// client the acknowledgements it has not had.
	client bool
	relay  chan struct{}
	// board is set when the PE reads the acknowledgements on the board:
	// no reply frames then.
	board bool
	// wmu serializes the writes to the PE (the reading goroutine's
	// replies and answers, the relay goroutine's frames) and guards
	// sent and out.
	wmu  sync.Mutex
	sent []logging.EventLogAck
	// out is the frame being written (reused).
	out elWriter
}

// newEventLogServer makes logger l's server for a job of pes PEs.
func newEventLogServer(l, pes int, log *slog.Logger) *eventLogServer {
	s := &eventLogServer{logger: l, log: log, state: logging.NewEventLogger(l), peers: map[int]*elPeer{}}
	if pes > 0 {
		b, err := newAckBoard(pes)
		if err != nil {
			log.Warn("event logger: no acknowledgement board, replies on the sockets", "logger", l, "err", err)
		}
		s.board = b
	}
	return s
}

// serve runs PE pe's connection until it ends. Everything the logger
// sends to the PE is written here, on the goroutine that reads the PE's
// frames: the acknowledgements so far when it connects, then one reply
// to each group of its batches read in together and the answers to its
// fetches.
func (s *eventLogServer) serve(nc net.Conn, pe int) {
	p := &elPeer{pe: pe, nc: nc, raw: rawConnOf(nc), relay: make(chan struct{}, 1)}
	if uc, ok := nc.(*net.UnixConn); ok {
		if err := s.board.offer(uc); err != nil {
			s.log.Warn("event log connection dropped", "pe", pe, "err", err)
			nc.Close()
			return
		}
		p.board = s.board != nil
	}
	if !p.board {
		s.socketPeers.Add(1)
		defer s.socketPeers.Add(-1)
	}
	s.mu.Lock()
	if old := s.peers[pe]; old != nil {
		old.nc.Close()
	}
	s.peers[pe] = p
	s.mu.Unlock()
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		for range p.relay {
			if err := s.reply(p); err != nil {
				nc.Close()
				return
			}
		}
	}()
	err := s.reply(p)
	if err == nil {
		err = s.read(nc, p)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Warn("event log connection dropped", "pe", pe, "addr", nc.RemoteAddr().String(), "err", err)
	}
	s.mu.Lock()
	if s.peers[pe] == p {
		delete(s.peers, pe)
	}
	close(p.relay)
	s.mu.Unlock()
	nc.Close()
	<-relayed
}

// read takes PE p's frames until the connection ends or breaks the
// format. The logger acknowledges in reply to p's batches, on p's
// connection, once for the batches that were read in together (when no
// whole frame is left in the buffer: they are all p's, and
// acknowledgements are cumulative): the reply carries every creator's
// latest acknowledgement that p has not had. A PE that sends its batches
// here thus learns of the other PEs' records at its own pace, one frame
// per group of its own batches, where sending every acknowledgement to
// every PE cost each batch a frame to every PE: an acknowledgement only
// spares envelopes records, and a PE sends envelopes from handlers,
// which make records, which it sends in batches. A PE that sends no
// batch here (with several loggers, those of the others) gets the
// acknowledgements at each reply to another (relayTo).
func (s *eventLogServer) read(nc net.Conn, p *elPeer) error {
	var in elIncoming
	if p.raw != nil {
		return s.readRaw(p, &in)
	}
	r := bufio.NewReaderSize(nc, 64<<10)
	for {
		if in.stored && !frameBuffered(r) {
			if err := s.replied(p, &in); err != nil {
				return err
			}
		}
		kind, body, err := readEventLogFrame(r, in.buf)
		if err != nil {
			return err
		}
		in.buf = body
		if err := s.frame(p, &in, kind, body); err != nil {
			return err
		}
	}
}

// readRaw is read on a plain socket: each time the socket is readable
// it reads what it holds (one read, unless that filled the buffer),
// takes the whole frames and replies, then waits in the netpoller for
// more. A read that did not fill the buffer emptied the socket, so no
// read that finds nothing follows it: data that comes after it makes
// the socket readable again.
func (s *eventLogServer) readRaw(p *elPeer, in *elIncoming) error {
	var inbox rawInbox
	var err error
	rerr := p.raw.Read(func(fd uintptr) bool {
		for {
			n, ferr := inbox.fill(fd, 64<<10)
			if ferr != nil {
				err = ferr
				return true
			}
			if n == 0 {
				break
			}
			full := len(inbox.in) == cap(inbox.in)
			for {
				avail := inbox.pending()
				if len(avail) < elHeaderSize {
					break
				}
				size := binary.LittleEndian.Uint32(avail[1:])
				if size > maxEventLogFrame {
					err = fmt.Errorf("%w: %d bytes", errEventLogFrame, size)
					return true
				}
				if uint64(len(avail)-elHeaderSize) < uint64(size) {
					inbox.await(elHeaderSize + int(size))
					break
				}
				inbox.take(elHeaderSize + int(size))
				if err = s.frame(p, in, avail[0], avail[elHeaderSize:elHeaderSize+int(size)]); err != nil {
					return true
				}
			}
			if !full {
				break
			}
		}
		if in.stored {
			if err = s.replied(p, in); err != nil {
				return true
			}
		}
		return false // wait until the socket is readable
	})
	if err == nil {
		err = rerr
	}
	return err
}

// elIncoming is what a connection's reading keeps between frames: the
// frame buffer (bufio path), whether a batch was stored since the last
// reply, and the arrays the batches' records are read into
// (EventLogger.Store copies what it keeps).
type elIncoming struct {
	buf    []byte
	stored bool
	dets   []logging.Determinant
	prog   []logging.Progress
}

// replied replies to p's batches stored since the last reply, and
// relays to the PEs that send no batch here.
func (s *eventLogServer) replied(p *elPeer, in *elIncoming) error {
	if err := s.reply(p); err != nil {
		return err
	}
	s.relayTo(p)
	in.stored = false
	return nil
}

// frame takes one frame of PE p's.
func (s *eventLogServer) frame(p *elPeer, in *elIncoming, kind byte, body []byte) error {
	fr := elReader{b: body}
	switch kind {
	case elKindRecords:
		b := logging.EventLogBatch{Logger: s.logger, Creator: logging.PEID(p.pe)}
		b.Epoch = fr.u64()
		in.dets, in.prog = fr.recordsInto(in.dets, in.prog)
		b.Determinants, b.Progress = in.dets, in.prog
		if err := fr.done(); err != nil {
			return fmt.Errorf("records from PE %d: %w", p.pe, err)
		}
		if s.store(p, b) {
			in.stored = true
		}
	case elKindFetch:
		if in.stored {
			if err := s.replied(p, in); err != nil {
				return err
			}
		}
		f := logging.EventLogFetch{Logger: s.logger, PE: logging.PEID(p.pe)}
		f.Epoch = fr.u64()
		f.Recovery = fr.u32()
		for range fr.count(4) {
			f.Failed = append(f.Failed, logging.PEID(int32(fr.u32())))
		}
		for range fr.count(8) {
			f.Tasks = append(f.Tasks, logging.TaskID(fr.u64()))
		}
		if err := fr.done(); err != nil {
			return fmt.Errorf("fetch from PE %d: %w", p.pe, err)
		}
		return s.fetch(p, f)
	default:
		return fmt.Errorf("%w: kind %d from PE %d", errEventLogFrame, kind, p.pe)
	}
	return nil
}

// frameBuffered reports whether r holds a whole frame already read in.
func frameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < elHeaderSize {
		return false
	}
	h, err := r.Peek(elHeaderSize)
	return err == nil && uint64(binary.LittleEndian.Uint32(h[1:])) <= uint64(n-elHeaderSize)
}

// store keeps a batch of p's and notes its acknowledgement; false:
// dropped.
func (s *eventLogServer) store(p *elPeer, b logging.EventLogBatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.client = true
	before := s.state.Epoch()
	ack, ok := s.state.Store(b)
	if !ok {
		return false
	}
	if s.state.Epoch() != before {
		clear(s.acks)
	}
	if ack.Creator < 0 {
		return true
	}
	if int(ack.Creator) >= len(s.acks) {
		s.acks = append(s.acks, make([]logging.EventLogAck, int(ack.Creator)+1-len(s.acks))...)
	}
	s.acks[ack.Creator] = ack
	s.board.publish(ack)
	return true
}

// relayTo wakes the relay of every PE but from that sent no batch here:
// it gets the acknowledgements it has not had, as a reply would give
// them. With one logger every PE sends its batches to it, and this costs
// a look at each PE; none when every PE reads the board.
func (s *eventLogServer) relayTo(from *elPeer) {
	if s.socketPeers.Load() == 0 {
		return // every PE reads the board
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.peers {
		if q == from || q.client || q.board {
			continue
		}
		select {
		case q.relay <- struct{}{}:
		default: // woken already
		}
	}
}

// reply sends p the acknowledgements it has not had, if any (none to a
// PE that reads the board).
func (s *eventLogServer) reply(p *elPeer) error {
	if p.board {
		return nil
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	w := &p.out
	w.b = w.b[:0]
	at := w.begin(elKindAcks)
	w.u32(0)
	n := 0
	s.mu.Lock()
	if len(p.sent) < len(s.acks) {
		p.sent = append(p.sent, make([]logging.EventLogAck, len(s.acks)-len(p.sent))...)
	}
	for c, a := range s.acks {
		if a.UpTo == 0 || a == p.sent[c] {
			continue
		}
		p.sent[c] = a
		w.u64(a.Epoch)
		w.u32(uint32(a.Creator))
		w.u64(a.UpTo)
		n++
	}
	s.mu.Unlock()
	if n == 0 {
		return nil
	}
	binary.LittleEndian.PutUint32(w.b[at+elHeaderSize:], uint32(n))
	w.end(at)
	return p.write(w.b)
}

// write writes b to p: what the socket takes at once without the
// runtime's bookkeeping for a call that may block (writeNow), the rest,
// if any, by a write that waits. The caller holds p.wmu.
func (p *elPeer) write(b []byte) error {
	if p.raw != nil {
		b = b[writeNow(p.raw, b):]
		if len(b) == 0 {
			return nil
		}
	}
	_, err := p.nc.Write(b)
	return err
}

// fetch answers f on p's connection, the failed PEs' streams closed
// first.
func (s *eventLogServer) fetch(p *elPeer, f logging.EventLogFetch) error {
	s.mu.Lock()
	s.state.PEsFailed(f.Failed)
	envs := s.state.Fetch(f)
	s.mu.Unlock()
	var w elWriter
	at := w.begin(elKindAnswer)
	w.u32(f.Recovery)
	w.u32(uint32(len(envs)))
	for _, env := range envs {
		w.u64(uint64(env.Task))
		w.records(env.Determinants, env.Progress)
	}
	w.end(at)
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.write(w.b)
}

// stats returns the logger's counters.
func (s *eventLogServer) stats() logging.EventLoggerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Stats()
}

// eventLogClient is a PE's side of the record stream: a
// scheduler.EventLogAckSource with one connection per logger, opened at
// once. Log and Fetch encode on the caller's goroutine and write what
// the socket takes at once (a plain connection; under TLS they queue); a
// writer per logger sends the rest, a reader keeps the acknowledgements
// for the PE to take between handlers (TakeAcks) and posts the answers
// to the PE (post), and the first error posts the logger's loss.
type eventLogClient struct {
	rank   int
	secret []byte
	tls    *tls.Config
	post   func(any)
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	links  []*elLink
	// acks are the acknowledgements received and not yet taken (the
	// latest per logger and creator); pending is set while there are.
	ackMu   sync.Mutex
	acks    map[elAckKey]logging.EventLogAck
	pending atomic.Bool
	// takes counts the calls of TakeAcks (on the PE goroutine) since
	// the last poll of the sockets.
	takes int
}

// elPollEvery is how many calls of TakeAcks (one per handler) a PE lets
// pass between two reads of a logger's socket while a reply to its
// batches is due: a read that finds nothing costs a system call (about
// 1 us), a reply read late a few more records on the envelopes of the
// handlers meanwhile.
const elPollEvery = 8

type elAckKey struct {
	logger  int
	creator logging.PEID
}

type elLink struct {
	logger int
	addr   string
	mu     sync.Mutex
	cond   *sync.Cond
	out    []byte
	gone   error
	conn   net.Conn
	// raw is conn's socket when the PE may write to it directly (plain
	// TCP or Unix): every write to it is made under mu, by the PE or
	// by the writer, without waiting, from out; backlog is set while
	// out holds what the socket did not take.
	raw     syscall.RawConn
	backlog atomic.Bool
	// writing is set while the writer of a connection without raw
	// writes outside mu.
	writing bool
	// fetches counts the answers due, in the order asked.
	fetches int
	// awaiting is set when a batch was written since the last frame of
	// acknowledgements came in: the PE then reads the socket itself
	// between handlers (poll). Not with a board.
	awaiting atomic.Bool
	// board is the logger's acknowledgement board (ackboard.go), which
	// the PE reads at every TakeAcks instead of reply frames; nil: none
	// (over TCP or TLS, or once the logger is lost).
	board atomic.Pointer[ackView]
	// inbox holds what was read from a raw connection and not yet taken
	// as frames, by the reader goroutine or the PE's polls, whichever
	// holds rdMu; ackScratch is a frame's acknowledgements.
	rdMu       sync.Mutex
	inbox      rawInbox
	ackScratch []logging.EventLogAck
}

func newEventLogClient(rank int, addrs []string, secret []byte, tlsCfg *tls.Config, post func(any), log *slog.Logger) *eventLogClient {
	ctx, cancel := context.WithCancel(context.Background())
	c := &eventLogClient{rank: rank, secret: secret, tls: tlsCfg, post: post, log: log, ctx: ctx, cancel: cancel, acks: map[elAckKey]logging.EventLogAck{}}
	for l, a := range addrs {
		k := &elLink{logger: l, addr: a}
		k.cond = sync.NewCond(&k.mu)
		c.links = append(c.links, k)
		if a == "" {
			k.gone = fmt.Errorf("launcher: logger %d was dead before the job began", l)
			continue
		}
		c.wg.Add(1)
		go c.run(k)
	}
	return c
}

// queue appends a frame for k made by fill, or reports k gone.
func (c *eventLogClient) queue(l int, fill func(w *elWriter), fetch bool) error {
	if l < 0 || l >= len(c.links) {
		return fmt.Errorf("launcher: no logger %d", l)
	}
	k := c.links[l]
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gone != nil {
		return k.gone
	}
	w := elWriter{b: k.out}
	fill(&w)
	k.out = w.b
	if fetch {
		k.fetches++
	} else if k.raw != nil && k.board.Load() == nil {
		k.awaiting.Store(true) // after k.raw: TakeAcks reads it then
	}
	if k.raw != nil {
		// Write at once what the socket takes, which is all of it
		// unless the logger is behind: the writer is not woken for
		// each batch (a futex wake and a switch of goroutines), and
		// gets the rest, or the error, if any.
		if k.flushLocked() == nil && len(k.out) == 0 {
			return nil
		}
	}
	k.cond.Signal()
	return nil
}

// flushLocked writes what the socket takes of k.out, without waiting.
// k.mu is held.
func (k *elLink) flushLocked() error {
	var n int
	var err error
	if cerr := k.raw.Control(func(fd uintptr) { n, err = writeSome(fd, k.out) }); err == nil {
		err = cerr
	}
	k.out = k.out[:copy(k.out, k.out[n:])]
	k.backlog.Store(len(k.out) > 0)
	return err
}

// flush writes k's backlog, on the PE goroutine: with one thread per PE
// the writer, which waits for the socket to take more, runs only when
// the PE waits, and the batches behind would wait with it.
func (k *elLink) flush() {
	k.mu.Lock()
	if k.gone == nil && len(k.out) > 0 {
		k.flushLocked() // an error is the writer's to report
	}
	k.mu.Unlock()
}

// Log queues b for its logger; it never blocks.
func (c *eventLogClient) Log(b logging.EventLogBatch) {
	err := c.queue(b.Logger, func(w *elWriter) {
		at := w.begin(elKindRecords)
		w.u64(b.Epoch)
		w.records(b.Determinants, b.Progress)
		w.end(at)
	}, false)
	if err != nil {
		c.post(scheduler.LoggerLost{Logger: b.Logger, Why: err})
	}
}

// Fetch queues f for its logger; a logger already gone answers at once
// with nothing.
func (c *eventLogClient) Fetch(f logging.EventLogFetch) {
	err := c.queue(f.Logger, func(w *elWriter) {
		at := w.begin(elKindFetch)
		w.u64(f.Epoch)
		w.u32(f.Recovery)
		w.u32(uint32(len(f.Failed)))
		for _, p := range f.Failed {
			w.u32(uint32(p))
		}
		w.u32(uint32(len(f.Tasks)))
		for _, t := range f.Tasks {
			w.u64(uint64(t))
		}
		w.end(at)
	}, true)
	if err != nil {
		c.post(scheduler.LoggerLost{Logger: f.Logger, Why: err})
		c.post(scheduler.EventLogAnswer{Logger: f.Logger})
	}
}

// lose marks k gone with err (the first error wins), tells the PE, and
// answers its fetches due as empty.
func (c *eventLogClient) lose(k *elLink, err error) {
	k.mu.Lock()
	first := k.gone == nil
	due := 0
	if first {
		k.gone = err
		k.board.Store(nil)
		k.out = nil
		due, k.fetches = k.fetches, 0
		k.cond.Broadcast()
	}
	conn := k.conn
	k.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	if first && c.ctx.Err() == nil {
		c.log.Warn("lost an event logger", "logger", k.logger, "err", err)
		c.post(scheduler.LoggerLost{Logger: k.logger, Why: err})
		for range due {
			c.post(scheduler.EventLogAnswer{Logger: k.logger})
		}
	}
}

// loseLogger drops the streams to logger l, which the launcher declared
// dead, as if they had broken.
func (c *eventLogClient) loseLogger(l int, why error) {
	if l < 0 || l >= len(c.links) {
		return
	}
	c.lose(c.links[l], why)
}

// run opens k's connection and writes what is queued until an error or
// close.
func (c *eventLogClient) run(k *elLink) {
	defer c.wg.Done()
	nc, err := dialLoggerConn(c.ctx, eventLogStream, k.addr, c.rank, k.logger, c.secret, c.tls)
	if err != nil {
		c.lose(k, err)
		return
	}
	k.mu.Lock()
	if k.gone != nil {
		k.mu.Unlock()
		nc.Close()
		return
	}
	k.conn = nc // closed by lose and close from now on
	k.mu.Unlock()
	var board *ackView
	if uc, ok := nc.(*net.UnixConn); ok {
		// The logger sends its board first; one that stops before
		// that is lost as at any other time (its connection closed).
		if board, err = takeAckBoard(uc); err != nil {
			c.lose(k, fmt.Errorf("launcher: event logger %d: %w", k.logger, err))
			return
		}
	}
	k.mu.Lock()
	if k.gone != nil {
		k.mu.Unlock()
		return
	}
	if board != nil {
		k.board.Store(board) // before k.raw: queue reads it then
	}
	k.raw = rawConnOf(nc)
	k.mu.Unlock()
	c.wg.Add(1)
	go c.read(k, nc)
	if k.raw != nil {
		c.writeRaw(k)
		return
	}
	var buf []byte
	for {
		k.mu.Lock()
		k.writing = false
		for len(k.out) == 0 && k.gone == nil {
			k.cond.Wait()
		}
		if k.gone != nil {
			k.mu.Unlock()
			return
		}
		// Swap the buffers: Log fills the other while this one is
		// written, and leaves it to this writer.
		buf, k.out = k.out, buf[:0]
		k.writing = true
		k.mu.Unlock()
		if _, err := nc.Write(buf); err != nil {
			c.lose(k, fmt.Errorf("launcher: records to event logger %d: %w", k.logger, err))
			return
		}
	}
}

// writeRaw writes what the PE left in k.out, waiting for the socket to
// take it, until an error or close; the PE's own writes, under k.mu as
// these, go on meanwhile.
func (c *eventLogClient) writeRaw(k *elLink) {
	for {
		k.mu.Lock()
		for len(k.out) == 0 && k.gone == nil {
			k.cond.Wait()
		}
		if k.gone != nil {
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		var err error
		rerr := k.raw.Write(func(uintptr) bool {
			k.mu.Lock()
			defer k.mu.Unlock()
			if k.gone != nil || len(k.out) == 0 {
				return true
			}
			err = k.flushLocked()
			return err != nil || len(k.out) == 0 // else wait until it takes more
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			c.lose(k, fmt.Errorf("launcher: records to event logger %d: %w", k.logger, err))
			return
		}
	}
}

// read posts k's acknowledgements and answers until the connection
// ends. On a raw connection it reads the socket as the PE's polls do,
// under k.rdMu, and waits for it in the netpoller when it is empty: the
// PE, which reads it itself between handlers while a reply is due, has
// usually taken the replies already (with GOMAXPROCS=1 this goroutine
// runs only when the PE's waits for messages let it).
func (c *eventLogClient) read(k *elLink, nc net.Conn) {
	defer c.wg.Done()
	if raw := rawConnOf(nc); raw != nil {
		var err error
		rerr := raw.Read(func(fd uintptr) bool {
			k.rdMu.Lock()
			err = c.readRaw(k, fd, true)
			k.rdMu.Unlock()
			return err != nil // else wait until the socket is readable
		})
		if err == nil {
			err = rerr
		}
		c.lose(k, fmt.Errorf("launcher: event logger %d's connection ended: %w", k.logger, err))
		return
	}
	r := bufio.NewReaderSize(nc, 16<<10)
	var buf []byte
	for {
		kind, body, err := readEventLogFrame(r, buf)
		if err != nil {
			c.lose(k, fmt.Errorf("launcher: event logger %d's connection ended: %w", k.logger, err))
			return
		}
		buf = body
		if err := c.frame(k, kind, body, true); err != nil {
			c.lose(k, err)
			return
		}
	}
}

// readRaw reads what k's socket (fd) holds without waiting and takes
// the whole frames in it; notify: post EventLogAcksPending for the
// acknowledgements (not for the PE's own polls). It returns io.EOF when
// the logger closed the connection, the first other error of a read or
// a frame. k.rdMu is held.
func (c *eventLogClient) readRaw(k *elLink, fd uintptr, notify bool) error {
	for {
		n, err := k.inbox.fill(fd, 16<<10)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // empty: wait
		}
		for {
			avail := k.inbox.pending()
			if len(avail) < elHeaderSize {
				break
			}
			size := binary.LittleEndian.Uint32(avail[1:])
			if size > maxEventLogFrame {
				return fmt.Errorf("%w: %d bytes", errEventLogFrame, size)
			}
			if uint64(len(avail)-elHeaderSize) < uint64(size) {
				k.inbox.await(elHeaderSize + int(size))
				break
			}
			k.inbox.take(elHeaderSize + int(size))
			if err := c.frame(k, avail[0], avail[elHeaderSize:elHeaderSize+int(size)], notify); err != nil {
				return err
			}
		}
	}
}

// poll reads k's socket on the PE goroutine when no one else does.
func (c *eventLogClient) poll(k *elLink) {
	if !k.rdMu.TryLock() {
		return // the reader goroutine is at it
	}
	var err error
	cerr := k.raw.Control(func(fd uintptr) { err = c.readRaw(k, fd, false) })
	k.rdMu.Unlock()
	if err == nil {
		err = cerr
	}
	if err != nil {
		c.lose(k, fmt.Errorf("launcher: event logger %d's connection ended: %w", k.logger, err))
	}
}

// frame takes one frame from k's logger: acknowledgements are kept for
// the PE, answers posted.
func (c *eventLogClient) frame(k *elLink, kind byte, body []byte, notify bool) error {
	fr := elReader{b: body}
	switch kind {
	case elKindAcks:
		n := fr.count(elAckSize)
		acks := k.ackScratch[:0]
		for range n {
			acks = append(acks, logging.EventLogAck{Logger: k.logger, Epoch: fr.u64(), Creator: logging.PEID(int32(fr.u32())), UpTo: fr.u64()})
		}
		k.ackScratch = acks[:0]
		if err := fr.done(); err != nil {
			return fmt.Errorf("launcher: event logger %d: %w", k.logger, err)
		}
		k.awaiting.Store(false)
		c.keepAcks(acks, notify)
	case elKindAnswer:
		recovery := fr.u32()
		n := fr.count(8 + 4 + 4)
		envs := make([]logging.Envelope, 0, n)
		for range n {
			env := logging.Envelope{Kind: logging.EnvelopeRecovery, From: logging.LoggerPE(k.logger), To: logging.PEID(c.rank),
				Task: logging.TaskID(fr.u64()), Epoch: recovery}
			env.Determinants, env.Progress = fr.records()
			envs = append(envs, env)
		}
		if err := fr.done(); err != nil {
			return fmt.Errorf("launcher: event logger %d: %w", k.logger, err)
		}
		k.mu.Lock()
		due := k.fetches > 0 && k.gone == nil
		if due {
			k.fetches--
		}
		k.mu.Unlock()
		if !due {
			return fmt.Errorf("launcher: event logger %d answered a fetch nobody made", k.logger)
		}
		c.post(scheduler.EventLogAnswer{Logger: k.logger, Envelopes: envs})
	default:
		return fmt.Errorf("%w: kind %d from event logger %d", errEventLogFrame, kind, k.logger)
	}
	return nil
}

// keepAcks keeps acknowledgements for the PE to take (TakeAcks), and
// (notify) tells it when they are the first since it last took them.
func (c *eventLogClient) keepAcks(acks []logging.EventLogAck, notify bool) {
	c.ackMu.Lock()
	for _, a := range acks {
		k := elAckKey{a.Logger, a.Creator}
		if cur, ok := c.acks[k]; !ok || cur.Epoch < a.Epoch || (cur.Epoch == a.Epoch && cur.UpTo < a.UpTo) {
			c.acks[k] = a
		}
	}
	first := len(c.acks) > 0 && !c.pending.Swap(true)
	c.ackMu.Unlock()
	if first && notify {
		c.post(scheduler.EventLogAcksPending{})
	}
}

// TakeAcks appends the acknowledgements received since the last call to
// into (scheduler.EventLogAckSource): those on the loggers' boards that
// changed, then those of reply frames. Every elPollEvery calls it reads
// the sockets of the loggers that owe this PE a reply first.
func (c *eventLogClient) TakeAcks(into []logging.EventLogAck) []logging.EventLogAck {
	for _, k := range c.links {
		if b := k.board.Load(); b != nil {
			into = b.take(k.logger, into)
		}
	}
	if c.takes++; c.takes >= elPollEvery {
		c.takes = 0
		for _, k := range c.links {
			if k.backlog.Load() {
				k.flush()
			}
			if k.awaiting.Load() {
				c.poll(k)
			}
		}
	}
	if !c.pending.Load() {
		return into
	}
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	for _, a := range c.acks {
		into = append(into, a)
	}
	clear(c.acks)
	c.pending.Store(false)
	return into
}

// close stops every connection and goroutine; losses are not reported
// from then on.
func (c *eventLogClient) close() {
	c.cancel()
	for _, k := range c.links {
		k.mu.Lock()
		if k.gone == nil {
			k.gone = errors.New("launcher: closed")
		}
		k.cond.Broadcast()
		conn := k.conn
		k.mu.Unlock()
		// Closed outside k.mu: Close waits for the reads and writes
		// under way, which may be waiting for k.mu.
		if conn != nil {
			conn.Close()
		}
	}
	c.wg.Wait()
}
