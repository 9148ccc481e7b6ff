package transport

import (
	"encoding/binary"
	"fmt"
	"log/slog"
)

// frameOverhead is what a frame costs in the window beyond its data, so
// that a stream of empty payloads is bounded too.
const frameOverhead = 64

// maxBackoffShift caps the doubling of the resend timeout (2^5 = 32 times).
const maxBackoffShift = 5

// core is the transport protocol of one PE, without I/O: per-peer sequence
// numbers, packing of payloads into frames and unpacking, cumulative
// acknowledgements,
// go-back-N resends and the flow-control window. Its owner calls send,
// receive, tick, flush and peerLost from one goroutine; core calls transmit
// for each frame to put on the wire and deliver for each complete payload.
// It reads no clock: time is the number of tick calls.
type core struct {
	coreConfig
	out   []outChannel // indexed by destination rank
	in    []inChannel  // indexed by source rank
	ticks uint64
	stats *counters
	log   *slog.Logger

	transmit func(to int, f frame)
	deliver  func(from int, payload []byte)
	// reusable, when not nil, says whether the driver holds no frame it
	// was given (all written out): then the buffers of acknowledged
	// frames, which nothing else refers to, go to spare and are reused
	// for new frames. Nil: never (a driver that may keep frames).
	reusable func() bool
	spare    [][]byte
	// inPlace says whether the last frame receive took was delivered, in
	// part, as payloads that are slices of it (the handler then holds its
	// memory); false: its bytes were copied out (joined) or dropped, and
	// its buffer is free again once receive returns (TCP gives a big
	// frame's buffer back to its pool at once, instead of waiting for the
	// garbage collector to find it unused: a checkpoint's buddy copy, 40
	// frames of 256 KiB, is then read into memory the process used
	// before, not into fresh pages; docs/benchmarks.md, "Sync points").
	inPlace bool
	// alloc, when not nil, returns n bytes for a payload that spans
	// frames (their joined copy, which the payload's handler then owns):
	// the TCP endpoint's recycled buffers (recvPool). Nil: make.
	alloc func(n int) []byte
	// alone, while receive delivers the payload that is the whole of a
	// frame's data but its record header (aloneAt bytes), is that data:
	// its memory holds that payload alone (takeAlone).
	alone   []byte
	aloneAt int
}

// maxSpare bounds the frame buffers kept for reuse.
const maxSpare = 4

// frame is a Frame as the core sees it: plain fields, passed by value, so
// that a driver can put it on the wire without allocating.
type frame struct {
	From       uint32
	Seq, Ack   uint64
	ResendFrom uint64
	Head, Data []byte
}

type coreConfig struct {
	rank, size  int
	maxFrame    int
	window      int
	maxPayload  int
	resendTicks uint64 // ticks before the oldest unacknowledged frame is resent
	ackFrames   int    // send a standalone ack after this many frames received...
	ackBytes    int    // ...or this many bytes, whichever comes first
}

// outChannel is the state of the frames this PE sends to one peer.
type outChannel struct {
	nextSeq uint64 // sequence number of the next new frame
	acked   uint64 // highest cumulative ack received
	// open is the frame being filled by send; sealed by flush, tick, or
	// when full. openPayload counts the payload bytes in it.
	open        []byte
	openPayload int
	queued      []sentFrame // sealed, waiting for room in the window
	unacked     []sentFrame // sent: frames acked+1 .. nextSeq-1, in order
	inFlight    int         // window cost of unacked
	// lastGoBack is where the last resend asked for by the peer started;
	// the peer repeats its request for every frame after a gap, and one
	// resend answers them all.
	lastGoBack uint64
	timeouts   uint // consecutive resend timeouts without progress
	// dead is set once the peer failed: nothing more goes to it.
	dead bool
}

type sentFrame struct {
	seq          uint64
	head, data   []byte // the stream piece is head then data
	buf          []byte // the core's own buffer among them (the other is a payload)
	payloadBytes int    // payload bytes in it (not record headers)
	sentTick     uint64
}

func (sf *sentFrame) cost() int { return len(sf.head) + len(sf.data) + frameOverhead }

// inChannel is the state of the frames this PE receives from one peer.
type inChannel struct {
	expected uint64 // sequence number of the next frame accepted
	// The payload being joined: need more bytes go into assembly.
	assembly []byte
	need     int
	// Acknowledgement owed to the peer: since which tick, for how much.
	owed       bool
	owedTick   uint64
	owedFrames int
	owedBytes  int
	// nackedFor is the expected seq for which a resend was last requested.
	nackedFor uint64
}

func newCore(cc coreConfig, stats *counters, log *slog.Logger) *core {
	c := &core{
		coreConfig: cc,
		out:        make([]outChannel, cc.size),
		in:         make([]inChannel, cc.size),
		stats:      stats,
		log:        log,
	}
	for i := range c.out {
		c.out[i].nextSeq = 1
		c.in[i].expected = 1
	}
	return c
}

func coreConfigFrom(cfg Config) coreConfig {
	resendTicks := uint64(cfg.ResendAfter / cfg.TickInterval)
	if resendTicks < 2 {
		resendTicks = 2
	}
	return coreConfig{
		rank:        cfg.Rank,
		size:        cfg.Size,
		maxFrame:    cfg.MaxFrame,
		window:      cfg.Window,
		maxPayload:  cfg.MaxPayload,
		resendTicks: resendTicks,
		ackFrames:   32,
		ackBytes:    cfg.Window / 4,
	}
}

// minOpenFrame is the least capacity given to a new open frame.
const minOpenFrame = 4 << 10

// largePayload is the size from which payloads are not copied into frames
// but sent from their own memory: below it, packing several into one frame
// saves more (protoactor costs microseconds per message) than the copy.
const largePayload = 16 << 10

// send appends payload to the stream to PE to. Full frames go out at once
// (window permitting); the last, partly filled one waits for flush or tick.
func (c *core) send(to int, payload []byte) { c.sendParts(to, nil, payload) }

// sendParts appends the payload head then body to the stream to PE to:
// one payload, delivered as one. head is copied into frames before it
// returns; body too when it is small, and otherwise goes out from its own
// memory, which the core keeps (for resends) until the frames holding it
// are acknowledged: the caller must not write it again.
func (c *core) sendParts(to int, head, body []byte) {
	if to < 0 || to >= c.size {
		panic(fmt.Sprintf("transport: send to rank %d of %d", to, c.size))
	}
	o := &c.out[to]
	if o.dead {
		return
	}
	n := len(head) + len(body)
	c.stats.payloadsSent.Add(1)
	c.stats.backlog.Add(int64(n))
	var header [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(header[:], uint64(n))
	if len(o.open)+h > c.maxFrame || (len(o.open) > 0 && len(o.open)+h+n > c.maxFrame && h+n <= c.maxFrame) {
		// A record header lies whole within one frame; and a payload
		// that fits in a frame is not split across two, which its
		// receiver would join in a copy: it starts a frame of its own.
		c.seal(to)
	}
	large := len(body) >= min(largePayload, c.maxFrame/4)
	want := h + len(head)
	if !large {
		want += len(body)
	}
	c.grow(o, want)
	o.open = append(o.open, header[:h]...)
	c.appendCopy(to, head)
	if !large {
		c.appendCopy(to, body)
		if len(o.open) == c.maxFrame {
			c.seal(to)
		}
		return
	}
	// Large: the body's bytes go out as they are, not copied; each frame
	// of it has what was open before it as its head.
	rest := body
	for len(rest) >= largePayload || len(rest) > c.maxFrame-len(o.open) {
		n := min(len(rest), c.maxFrame-len(o.open))
		o.queued = append(o.queued, sentFrame{head: o.open, data: rest[:n:n], buf: o.open, payloadBytes: o.openPayload + n})
		o.open, o.openPayload = nil, 0
		rest = rest[n:]
		c.pump(to)
	}
	if len(rest) > 0 { // a short tail shares a frame with what follows
		c.appendCopy(to, rest)
	}
}

// appendCopy copies payload bytes b into the open frames to PE to,
// sealing each one it fills but the last.
func (c *core) appendCopy(to int, b []byte) {
	o := &c.out[to]
	for len(b) > 0 {
		if len(o.open) == c.maxFrame {
			c.seal(to)
		}
		c.grow(o, len(b))
		n := min(c.maxFrame-len(o.open), len(b))
		o.open = append(o.open, b[:n]...)
		o.openPayload += n
		b = b[n:]
	}
}

// grow makes room in the open frame for want more bytes, up to a frame.
func (c *core) grow(o *outChannel, want int) {
	if o.open == nil {
		size := min(c.maxFrame, max(want, minOpenFrame))
		// The smallest spare that holds size: frames of one size (a
		// job's batches) reuse each other's memory, whatever smaller
		// frames went by between them.
		best := -1
		for i, b := range c.spare {
			if cap(b) >= size && (best < 0 || cap(b) < cap(c.spare[best])) {
				best = i
			}
		}
		if best >= 0 {
			last := len(c.spare) - 1
			o.open = c.spare[best]
			c.spare[best], c.spare[last] = c.spare[last], nil
			c.spare = c.spare[:last]
			return
		}
		o.open = make([]byte, 0, size)
		return
	}
	if free := cap(o.open) - len(o.open); free < want && cap(o.open) < c.maxFrame {
		grown := make([]byte, len(o.open), min(c.maxFrame, max(2*cap(o.open), len(o.open)+want)))
		copy(grown, o.open)
		o.open = grown
	}
}

// seal closes the open frame to PE to and transmits what the window allows.
func (c *core) seal(to int) {
	o := &c.out[to]
	if o.dead {
		return
	}
	if len(o.open) > 0 {
		o.queued = append(o.queued, sentFrame{data: o.open, buf: o.open, payloadBytes: o.openPayload})
		o.open, o.openPayload = nil, 0
	}
	c.pump(to)
}

// pump transmits queued frames while the window has room. A frame is always
// allowed when nothing is in flight, so the channel cannot stall.
func (c *core) pump(to int) {
	o := &c.out[to]
	queued := o.queued
	for len(o.queued) > 0 {
		sf := o.queued[0]
		cost := sf.cost()
		if o.inFlight > 0 && o.inFlight+cost > c.window {
			return
		}
		o.queued[0] = sentFrame{}
		o.queued = o.queued[1:]
		sf.seq = o.nextSeq
		o.nextSeq++
		o.inFlight += cost
		if peak := uint64(o.inFlight); peak > c.stats.peakInFlight.Load() {
			c.stats.peakInFlight.Store(peak)
		}
		o.unacked = append(o.unacked, sf)
		c.transmitData(to, &o.unacked[len(o.unacked)-1])
	}
	// Drained: the next frames reuse the array.
	o.queued = queued[:0]
}

func (c *core) transmitData(to int, sf *sentFrame) {
	f := frame{From: uint32(c.rank), Seq: sf.seq, Head: sf.head, Data: sf.data}
	c.stampAck(to, &f)
	sf.sentTick = c.ticks
	c.stats.framesSent.Add(1)
	c.stats.bytesSent.Add(uint64(len(sf.head) + len(sf.data)))
	c.transmit(to, f)
}

// stampAck piggybacks the cumulative ack for the channel from peer on f.
func (c *core) stampAck(peer int, f *frame) {
	in := &c.in[peer]
	f.Ack = in.expected - 1
	in.owed = false
	in.owedFrames = 0
	in.owedBytes = 0
}

func (c *core) transmitAck(to int, resendFrom uint64) {
	if c.out[to].dead {
		return
	}
	f := frame{From: uint32(c.rank), ResendFrom: resendFrom}
	c.stampAck(to, &f)
	c.stats.acksSent.Add(1)
	c.transmit(to, f)
}

// goBack resends every unacknowledged frame to peer to, oldest first.
func (c *core) goBack(to int) {
	o := &c.out[to]
	if len(o.unacked) == 0 || o.dead {
		return
	}
	c.stats.goBacks.Add(1)
	c.stats.resends.Add(uint64(len(o.unacked)))
	for i := range o.unacked {
		c.transmitData(to, &o.unacked[i])
	}
}

// receive handles a frame that arrived from the network. It returns an
// error (wrapping ErrMalformed or ErrUnknownRank) for a frame it dropped as
// invalid; duplicates and frames after a gap are dropped silently (counted).
func (c *core) receive(f frame) error {
	if int64(f.From) >= int64(c.size) {
		c.stats.malformed.Add(1)
		return fmt.Errorf("%w: rank %d, job size %d", ErrUnknownRank, f.From, c.size)
	}
	c.inPlace = false
	from := int(f.From)
	if c.out[from].dead {
		return nil // a failed peer's late frames
	}
	if err := c.onAck(from, f.Ack, f.ResendFrom); err != nil {
		c.stats.malformed.Add(1)
		return err
	}
	if f.Seq == 0 {
		if len(f.Data) != 0 || len(f.Head) != 0 {
			c.stats.malformed.Add(1)
			return fmt.Errorf("%w: ack frame from %d carries data", ErrMalformed, from)
		}
		c.stats.acksReceived.Add(1)
		return nil
	}
	in := &c.in[from]
	switch {
	case f.Seq < in.expected:
		c.stats.duplicates.Add(1)
		c.owe(in) // the peer resent: it may have missed our ack
		return nil
	case f.Seq > in.expected:
		c.stats.outOfOrder.Add(1)
		if in.nackedFor != in.expected {
			in.nackedFor = in.expected
			c.transmitAck(from, in.expected)
		}
		return nil
	}
	if err := in.check(f.Head, f.Data, c.maxPayload); err != nil {
		c.stats.malformed.Add(1)
		return fmt.Errorf("%w from %d seq %d: %w", ErrMalformed, from, f.Seq, err)
	}
	in.expected++
	size := len(f.Head) + len(f.Data)
	c.stats.framesReceived.Add(1)
	c.stats.bytesReceived.Add(uint64(size))
	c.owe(in)
	in.owedFrames++
	in.owedBytes += size + frameOverhead
	deliver := func(payload []byte) {
		c.stats.payloadsDelivered.Add(1)
		c.deliver(from, payload)
	}
	if len(f.Head) == 0 && in.need == 0 {
		if n, h := binary.Uvarint(f.Data); h > 0 && n > 0 && n == uint64(len(f.Data)-h) {
			c.alone, c.aloneAt = f.Data, h
		}
	}
	inPlace := in.unpack(f.Head, deliver, c.alloc)
	inPlace = in.unpack(f.Data, deliver, c.alloc) || inPlace
	c.inPlace = inPlace
	c.alone, c.aloneAt = nil, 0
	// The handler may have sent to from and so piggybacked the ack.
	if in.owed && (in.owedFrames >= c.ackFrames || in.owedBytes >= c.ackBytes) {
		c.transmitAck(from, 0)
	}
	return nil
}

func (c *core) owe(in *inChannel) {
	if !in.owed {
		in.owed = true
		in.owedTick = c.ticks
	}
}

// check reports whether head then data continue the stream: records whose
// length headers lie whole within one of them, no payload above maxPayload.
func (in *inChannel) check(head, data []byte, maxPayload int) error {
	if len(head)+len(data) == 0 {
		return fmt.Errorf("empty data frame")
	}
	need := in.need
	for _, piece := range [2][]byte{head, data} {
		rest := piece
		skip := min(need, len(rest))
		rest, need = rest[skip:], need-skip
		for len(rest) > 0 {
			n, h := binary.Uvarint(rest)
			if h <= 0 {
				return fmt.Errorf("bad record header at byte %d", len(piece)-len(rest))
			}
			if n > uint64(maxPayload) {
				return fmt.Errorf("payload of %d bytes above limit %d", n, maxPayload)
			}
			rest = rest[h:]
			skip := min(int(n), len(rest))
			rest, need = rest[skip:], int(n)-skip
		}
	}
	return nil
}

// unpack adds a piece of a checked frame to the stream and calls deliver
// for each payload it completes. A payload that lies whole in data is a
// subslice of it; others are joined in a buffer from alloc (nil: a new
// one). It reports whether it delivered such a subslice of data.
func (in *inChannel) unpack(data []byte, deliver func([]byte), alloc func(int) []byte) (inPlace bool) {
	joined := func(n int) []byte {
		if alloc != nil {
			return alloc(n)[:0]
		}
		return make([]byte, 0, n)
	}
	if len(data) == 0 {
		return false
	}
	if in.need > 0 {
		if len(in.assembly) == 0 && len(data) >= in.need {
			// The whole body is here: the frame's own bytes will do.
			payload := data[:in.need:in.need]
			data = data[in.need:]
			in.need, in.assembly = 0, nil
			inPlace = true
			deliver(payload)
		} else {
			if in.assembly == nil {
				in.assembly = joined(in.need)
			}
			n := min(in.need, len(data))
			in.assembly = append(in.assembly, data[:n]...)
			in.need -= n
			data = data[n:]
			if in.need == 0 {
				payload := in.assembly
				in.assembly = nil
				deliver(payload)
			}
		}
	}
	for len(data) > 0 {
		size, h := binary.Uvarint(data)
		data = data[h:]
		if int(size) <= len(data) {
			inPlace = true
			deliver(data[:size:size])
			data = data[size:]
			continue
		}
		in.need = int(size)
		if len(data) > 0 {
			in.assembly = append(joined(int(size)), data...)
			in.need -= len(data)
		}
		return inPlace
	}
	return inPlace
}

// takeAlone returns the data of the frame being received if payload, being
// delivered, is all it holds (beyond its record header), and forgets it;
// else nil.
func (c *core) takeAlone(payload []byte) []byte {
	a := c.alone
	if len(a) == 0 || len(payload) != len(a)-c.aloneAt || &payload[0] != &a[c.aloneAt] {
		return nil
	}
	c.alone, c.aloneAt = nil, 0
	return a
}

// keepSpare keeps b, an acknowledged frame's buffer, for a new frame:
// when maxSpare are kept already, in the place of the smallest one if b
// is larger (a large frame's memory is the one worth keeping).
func (c *core) keepSpare(b []byte) {
	if len(c.spare) < maxSpare {
		c.spare = append(c.spare, b)
		return
	}
	small := 0
	for i := range c.spare {
		if cap(c.spare[i]) < cap(c.spare[small]) {
			small = i
		}
	}
	if cap(b) > cap(c.spare[small]) {
		c.spare[small] = b
	}
}

// onAck applies a cumulative ack and a resend request from peer.
func (c *core) onAck(peer int, ack, resendFrom uint64) error {
	o := &c.out[peer]
	if ack >= o.nextSeq {
		return fmt.Errorf("%w: ack %d from %d for frames up to %d only", ErrMalformed, ack, peer, o.nextSeq-1)
	}
	if ack > o.acked {
		k := int(ack - o.acked)
		released := 0
		reuse := c.reusable != nil && c.reusable()
		for i := range o.unacked[:k] {
			sf := &o.unacked[i]
			released += sf.payloadBytes
			o.inFlight -= sf.cost()
			if reuse && sf.buf != nil {
				c.keepSpare(sf.buf[:0])
			}
			*sf = sentFrame{}
		}
		if k == len(o.unacked) {
			o.unacked = o.unacked[:0] // all acknowledged: reuse the array
		} else {
			o.unacked = o.unacked[k:]
		}
		o.acked = ack
		o.timeouts = 0
		c.stats.backlog.Add(-int64(released))
		c.pump(peer)
	}
	if resendFrom != 0 && resendFrom == o.acked+1 && resendFrom != o.lastGoBack && len(o.unacked) > 0 {
		o.lastGoBack = resendFrom
		c.goBack(peer)
	}
	return nil
}

// tick advances time by one tick: acknowledgements owed since an earlier
// tick go out, and channels whose oldest frame timed out go back.
func (c *core) tick() {
	c.ticks++
	for to := range c.out {
		c.seal(to)
	}
	c.flushAcks()
	for to := range c.out {
		o := &c.out[to]
		if len(o.unacked) == 0 {
			continue
		}
		timeout := c.resendTicks << min(o.timeouts, maxBackoffShift)
		if c.ticks-o.unacked[0].sentTick >= timeout {
			o.timeouts++
			c.goBack(to)
		}
	}
}

// flush seals the open frames, which carry acknowledgements along, then
// sends the acknowledgements owed since an earlier tick. Newer ones wait for
// a frame to ride on, the ack thresholds, or the next tick: a busy one-way
// stream must not cost one ack per frame.
func (c *core) flush() {
	for to := range c.out {
		c.seal(to)
	}
	c.flushAcks()
}

func (c *core) flushAcks() {
	for from := range c.in {
		in := &c.in[from]
		if in.owed && in.owedTick < c.ticks {
			c.transmitAck(from, 0)
		}
	}
}

// forget drops everything queued for or owed to a failed peer and sends
// it nothing more; what it sent is no longer delivered.
func (c *core) forget(peer int) {
	o := &c.out[peer]
	if o.dead {
		return
	}
	o.dead = true
	dropped := o.openPayload
	for _, sf := range o.queued {
		dropped += sf.payloadBytes
	}
	for _, sf := range o.unacked {
		dropped += sf.payloadBytes
	}
	c.stats.backlog.Add(-int64(dropped))
	o.open, o.openPayload, o.queued, o.unacked, o.inFlight = nil, 0, nil, nil, 0
	in := &c.in[peer]
	in.owed, in.assembly, in.need = false, nil, 0
}

// flushAllAcks sends every acknowledgement owed, due or not.
func (c *core) flushAllAcks() {
	for from := range c.in {
		if c.in[from].owed {
			c.transmitAck(from, 0)
		}
	}
}

// peerLost handles the loss of the connection to peer: frames in flight
// may be lost, so go back now instead of waiting for the timeout.
func (c *core) peerLost(peer int) {
	c.out[peer].lastGoBack = 0
	c.in[peer].nackedFor = 0
	c.goBack(peer)
}
