package logging

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gochare/gochare/commutative"
)

// The sender log keeps every message sent since the checkpoint in a form
// that costs nothing per message once it is warm, whatever its length:
//
//   - the variable parts of a message (its payload, its commutative path,
//     its Requires) are copied into large byte chunks, one after the
//     other; a chunk is never copied again as the log grows, and a
//     checkpoint keeps the chunks for the next period instead of handing
//     them back to the garbage collector;
//   - the fixed parts are one pointer-free logEntry per message, in
//     blocks of logBlock entries that are likewise never copied again
//     and kept across checkpoints.
//
// The garbage collector scans neither (no pointers inside), so its mark
// work does not grow with the log, and a message costs one copy of its
// payload and no allocation; the messages of a multicast (one payload to
// several tasks, sent one after the other) cost one copy of it in all
// (add). With Config.LogOffHeap (the scheduler's PEs)
// the chunks are mapped outside the Go heap (logmem.go), so that the
// collector's goal does not grow with the log either. Before, the log was
// a []Message whose payloads were the caller's own allocations: every
// logged payload stayed reachable, the heap grew with the log, and the
// collector let the heap grow to twice that before collecting, so every
// short-lived allocation of the run (the next message's encoding, the
// receiver's decoding) landed on memory fresh from the kernel, paying a
// page fault and a clear for each page (stencil3d, 256³ in 64³ blocks on
// 2 PEs: 2.06× the time of checkpoint/restart).
//
// A payload returned by the log (Message.Payload of a logged send's
// envelope, or of a replayed one) points into a chunk: it stays valid until
// the next Checkpoint, which the caller may only take when no message is in
// flight or buffered.

// logBlock is the number of entries in a block.
const logBlock = 4096

// logEntry is a logged message without its variable parts: its path and
// requires are at [off, off+pathLen+requiresLen) of chunk, its payload at
// [payloadOff, payloadOff+payloadLen) of the same chunk, either right
// after them or, for a payload with the same bytes as the one logged just
// before it (a multicast's), that earlier copy (see add).
type logEntry struct {
	sender      TaskID
	srn         uint64
	to          TaskID
	key         uint64
	handler     uint32
	order       commutative.Order
	regionSize  int32
	toPE        PEID
	chunk       int32
	off         int32
	pathLen     int32
	requiresLen int32
	payloadLen  int32
	payloadOff  int32
}

type senderLog struct {
	mem    logMemory
	chunks [][]byte
	// cur is the chunk being filled; chunks after it are spare (kept from
	// an earlier period).
	cur    int
	blocks [][]logEntry
	n      int
	// released is the number of entries whose chunk memory may have been
	// given back (release): they are not read again until the reset.
	released int
	// scratch encodes Requires before they are copied into a chunk.
	scratch []byte
	// free are chunks release gave back, kept for space to fill again
	// (a log under a quota, whose chunks come and go as loggers store
	// its entries: mapping them again would fault every page in again),
	// as long as the chunks held stay within keepBytes (0: none kept).
	free      [][]byte
	keepBytes int
	// last is where the payload of the last message logged lies, for add
	// to share (ok false: none to share, after a reset or forget, or when
	// that message's payload was an encoded value or shorter than
	// sharePayloadMin).
	last lastPayload
	// faulted is how far the chunk that starts at faultedAt (the one
	// being filled) is faulted in (reach).
	faultedAt uintptr
	faulted   int
}

// lastPayload is the position of a payload in the log's current chunk.
type lastPayload struct {
	ok         bool
	chunk, off int32
	n          int32
}

// forget stops add from sharing the payload logged last with the next
// message (the engine calls it at the end of each handler and Ready, and
// when another task sends: only the sends of one handler share).
func (l *senderLog) forget() { l.last = lastPayload{} }

// len is the number of messages logged.
func (l *senderLog) len() int { return l.n }

// reset empties the log, keeping its chunks and blocks for reuse. If it
// logged anything since the previous reset, the chunks it did not need for
// that go back (the log shrank: a mapped chunk is unmapped).
func (l *senderLog) reset() {
	// The slots of released chunks go: the chunks kept are those still
	// held, in their order.
	if l.released > 0 {
		nilBefore := 0
		for i := range l.cur {
			if l.chunks[i] == nil {
				nilBefore++
			}
		}
		l.cur -= nilBefore
		l.chunks = slices.DeleteFunc(l.chunks, func(c []byte) bool { return c == nil })
		l.released = 0
	}
	if l.n > 0 || l.cur > 0 || (len(l.chunks) > 0 && len(l.chunks[0]) > 0) {
		for i := l.cur + 1; i < len(l.chunks); i++ {
			l.mem.release(l.chunks[i])
			l.chunks[i] = nil
		}
		l.chunks = l.chunks[:l.cur+1]
	}
	if l.mem.shared() != nil {
		// Chunks shared with loggers go back to the shared memory,
		// which hands them out again only once the loggers have read
		// what was dumped from them (the dumps of the period that
		// ended may still be on their way).
		l.chunks = slices.DeleteFunc(l.chunks, func(c []byte) bool {
			if l.mem.sharedOf(c) != nil {
				l.mem.release(c)
				return true
			}
			return false
		})
	}
	l.cur, l.n = 0, 0
	l.last = lastPayload{}
	l.faultedAt, l.faulted = 0, 0
	for i := range l.chunks {
		l.chunks[i] = l.chunks[i][:0]
	}
	for i := range l.blocks {
		l.blocks[i] = l.blocks[i][:0]
	}
}

// release gives back the memory of the chunks that hold only entries
// below to (their bytes are stored elsewhere: on a logger) and returns
// how many bytes of chunks it gave back. The chunk being filled is kept.
// A released entry must not be read (message) until the next reset; its
// fixed part (entry) stays.
func (l *senderLog) release(to int) int {
	to = min(to, l.n)
	if to <= l.released {
		return 0
	}
	l.released = to
	keep := l.cur
	if to < l.n {
		keep = int(l.entry(to).chunk)
	}
	freed := 0
	for i := range keep {
		if c := l.chunks[i]; c != nil {
			freed += cap(c)
			l.chunks[i] = nil
			if l.keepBytes > 0 && l.memBytes()+cap(c) <= l.keepBytes && l.mem.sharedOf(c) == nil {
				l.free = append(l.free, c[:0])
				continue
			}
			l.mem.release(c)
		}
	}
	return freed
}

// reused returns a chunk of the free list with room for need bytes, or
// nil.
func (l *senderLog) reused(need int) []byte {
	for i, c := range l.free {
		if cap(c) >= need {
			l.free = slices.Delete(l.free, i, i+1)
			return c
		}
	}
	return nil
}

// memBytes is the capacity of the chunks the log holds, spare ones
// included.
func (l *senderLog) memBytes() int {
	n := 0
	for _, c := range l.chunks {
		n += cap(c)
	}
	for _, c := range l.free {
		n += cap(c)
	}
	return n
}

// space returns the chunk index where need more bytes fit, moving on to a
// spare chunk or making one.
func (l *senderLog) space(need int) int {
	if len(l.chunks) == 0 {
		c := l.reused(need)
		if c == nil {
			c = l.mem.chunk(need)
			l.faultedAt = 0
		}
		l.chunks = append(l.chunks, c)
		return 0
	}
	if c := l.chunks[l.cur]; cap(c)-len(c) >= need {
		return l.cur
	}
	l.cur++
	if l.cur < len(l.chunks) && cap(l.chunks[l.cur]) >= need {
		return l.cur
	}
	// No spare chunk, or one too small for this message: a new one (or
	// one released before) takes its place in the order (spare chunks
	// after it stay spare).
	c := l.reused(need)
	if c == nil {
		c = l.mem.chunk(need)
		l.faultedAt = 0
	}
	if l.cur == len(l.chunks) {
		l.chunks = append(l.chunks, c)
	} else {
		l.chunks = append(l.chunks, nil)
		copy(l.chunks[l.cur+1:], l.chunks[l.cur:])
		l.chunks[l.cur] = c
	}
	return l.cur
}

// add logs msg, sent to toPE, and returns msg with its Payload pointing
// at the logged copy, and the number of payload bytes it shares with the
// message before (see below; for the counts of the log's size). A
// message that carries its value (Message.Value) is encoded by values
// straight into the log, and returned with the encoding as its payload
// and no value.
//
// A payload of sharePayloadMin bytes or more with the same bytes as the
// payload of the message logged just before it (a multicast: the same
// bytes to several tasks), which still lies in the chunk this message's
// path and requires go to, is not copied again: the entry's payload is
// that copy, and the envelopes of the multicast carry one slice, which
// the scheduler sends once per batch. Both entries are in one chunk, so
// releases, which free whole chunks below the first entry kept, never
// free a payload an entry kept refers to.
func (l *senderLog) add(msg Message, toPE PEID, values ValueEncoder) (Message, int) {
	req := l.scratch[:0]
	for _, d := range msg.Requires {
		req = binary.AppendUvarint(req, uint64(d.Task))
		req = binary.AppendUvarint(req, uint64(d.Trigger.Sender))
		req = binary.AppendUvarint(req, d.Trigger.SRN)
		req = binary.AppendUvarint(req, uint64(d.Trigger.CPI.Len()))
		req = d.Trigger.CPI.AppendEncoded(req)
	}
	l.scratch = req
	pathLen := msg.ID.CPI.Len()
	payloadLen := len(msg.Payload)
	if msg.Value != nil {
		payloadLen = values.ValueSize(msg.Handler, msg.Value)
	}
	// same: the payload is the last one's, which the counts take as
	// shared even when this entry goes to the next chunk, where it must
	// be copied again (at most one payload per chunk): so they do not
	// depend on where the chunks end, which differs with the protocol
	// (PartialDet's entries carry requirements) and the quota.
	same := false
	if s := l.last; s.ok && msg.Value == nil && payloadLen >= sharePayloadMin && int(s.n) == payloadLen && int(s.chunk) == l.cur {
		c := l.chunks[l.cur]
		same = bytes.Equal(c[s.off:int(s.off)+payloadLen], msg.Payload)
		if same && cap(c)-len(c) >= pathLen+len(req) {
			off := len(c)
			l.reach(c, off+pathLen+len(req))
			c = msg.ID.CPI.AppendEncoded(c)
			c = append(c, req...)
			l.chunks[l.cur] = c
			end := int(s.off) + payloadLen
			msg.Payload = c[s.off:end:end]
			l.append(msg, toPE, logEntry{chunk: s.chunk, off: int32(off), pathLen: int32(pathLen), requiresLen: int32(len(req)),
				payloadLen: int32(payloadLen), payloadOff: s.off})
			return msg, payloadLen
		}
	}
	need := pathLen + len(req) + payloadLen
	ci := l.space(need)
	c := l.chunks[ci]
	off := len(c)
	l.reach(c, off+need)
	c = msg.ID.CPI.AppendEncoded(c)
	c = append(c, req...)
	l.last = lastPayload{}
	if msg.Value != nil {
		at := len(c)
		encoded, err := values.AppendValue(c, msg.Handler, msg.Value)
		if err != nil {
			panic(fmt.Sprintf("logging: encoding the value of a message to task %d: %v", msg.To, err))
		}
		if len(encoded)-at != payloadLen || cap(encoded) != cap(c) {
			// Not the size ValueSize said (a guard; beyond the room
			// asked for, it left the chunk): encoded on its own, then
			// copied in as any payload.
			payload, _ := values.AppendValue(nil, msg.Handler, msg.Value)
			msg.Payload, msg.Value = payload, nil
			l.chunks[ci] = c[:off]
			return l.add(msg, toPE, values)
		}
		c = encoded
		msg.Value = nil
	} else {
		c = append(c, msg.Payload...)
		if payloadLen >= sharePayloadMin {
			l.last = lastPayload{ok: true, chunk: int32(ci), off: int32(off + pathLen + len(req)), n: int32(payloadLen)}
		}
	}
	l.chunks[ci] = c
	if payloadLen > 0 {
		msg.Payload = c[off+pathLen+len(req) : len(c) : len(c)]
	}
	l.append(msg, toPE, logEntry{chunk: int32(ci), off: int32(off), pathLen: int32(pathLen), requiresLen: int32(len(req)),
		payloadLen: int32(payloadLen), payloadOff: int32(off + pathLen + len(req))})
	if same {
		return msg, payloadLen
	}
	return msg, 0
}

// reach faults chunk c in up to byte end (excluded) before the log
// writes there: a mapped chunk is faulted in a huge page (2 MiB) at a
// time as the log reaches it (logMemory.fault), not when it is mapped, so
// the part of a period's last chunk the period never reaches costs no
// memory and no clearing (a 4 MiB chunk holding 0.4 MiB costs one huge
// page, not two).
func (l *senderLog) reach(c []byte, end int) {
	if l.mem.owner == nil {
		return
	}
	if at := addrOf(c[:1]); at != l.faultedAt {
		l.faultedAt, l.faulted = at, 0
	}
	if end > l.faulted {
		l.faulted = l.mem.fault(c, l.faulted, end)
	}
}

// append adds the entry of msg, whose variable parts e locates.
func (l *senderLog) append(msg Message, toPE PEID, e logEntry) {
	b := l.n / logBlock
	if b == len(l.blocks) {
		l.blocks = append(l.blocks, make([]logEntry, 0, logBlock))
	}
	e.sender, e.srn, e.to, e.key, e.handler = msg.ID.Sender, msg.ID.SRN, msg.To, msg.Key, msg.Handler
	e.order, e.regionSize, e.toPE = msg.Annotation.Order, int32(msg.Annotation.RegionSize), toPE
	l.blocks[b] = append(l.blocks[b], e)
	l.n++
}

// entry is the i-th logged message's fixed part.
func (l *senderLog) entry(i int) *logEntry { return &l.blocks[i/logBlock][i%logBlock] }

// message rebuilds the i-th logged message (for a replay: it allocates
// its path and requirements; its payload points into the log).
func (l *senderLog) message(i int) Message {
	if i < l.released {
		panic(fmt.Sprintf("logging: sender log entry %d was released (%d are)", i, l.released))
	}
	e := l.entry(i)
	m, err := e.rebuild(l.head(e), l.payload(e))
	if err != nil {
		panic(fmt.Sprintf("logging: sender log entry %d: %v", i, err))
	}
	return m
}

// head is entry e's path and requires, in the log.
func (l *senderLog) head(e *logEntry) []byte {
	end := int(e.off) + int(e.pathLen) + int(e.requiresLen)
	return l.chunks[e.chunk][e.off:end:end]
}

// payload is entry e's payload, in the log.
func (l *senderLog) payload(e *logEntry) []byte {
	end := int(e.payloadOff) + int(e.payloadLen)
	return l.chunks[e.chunk][e.payloadOff:end:end]
}

// rebuild makes the message of e from its variable parts: raw, its path
// then its requires, and payload, which the message's payload points to.
func (e *logEntry) rebuild(raw, payload []byte) (Message, error) {
	if len(raw) != int(e.pathLen)+int(e.requiresLen) || len(payload) != int(e.payloadLen) || e.pathLen < 0 || e.requiresLen < 0 || e.payloadLen < 0 {
		return Message{}, fmt.Errorf("entry of %d+%d bytes, want %d+%d+%d", len(raw), len(payload), e.pathLen, e.requiresLen, e.payloadLen)
	}
	path, err := parsePath(raw[:e.pathLen])
	if err != nil {
		return Message{}, err
	}
	m := Message{
		ID: MessageID{Sender: e.sender, SRN: e.srn, CPI: path},
		To: e.to, Handler: e.handler, Key: e.key,
		Annotation: commutative.Annotation{Order: e.order, RegionSize: int(e.regionSize)},
	}
	at := int(e.pathLen)
	req := raw[at : at+int(e.requiresLen)]
	for len(req) > 0 {
		var d Dependency
		var v [4]uint64
		for j := range v {
			x, n := binary.Uvarint(req)
			if n <= 0 {
				return Message{}, fmt.Errorf("bad requirement")
			}
			v[j], req = x, req[n:]
		}
		if v[3] > uint64(len(req)) {
			return Message{}, fmt.Errorf("bad requirement")
		}
		d.Task, d.Trigger.Sender, d.Trigger.SRN = TaskID(v[0]), TaskID(v[1]), v[2]
		if d.Trigger.CPI, err = parsePath(req[:v[3]]); err != nil {
			return Message{}, err
		}
		req = req[v[3]:]
		m.Requires = append(m.Requires, d)
	}
	if e.payloadLen > 0 {
		m.Payload = payload
	}
	return m, nil
}

// parsePath decodes an encoded path (empty: the empty path).
func parsePath(b []byte) (commutative.Path, error) {
	if len(b) == 0 {
		return commutative.Path{}, nil
	}
	return commutative.ParsePath(b)
}
