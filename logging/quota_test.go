package logging

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// With a quota the engine dumps the oldest entries, frees them once a
// logger acknowledges, refuses a handler while the log is full and a dump
// is on its way, and a dump decodes to the messages that were sent.
func TestEngineLogQuota(t *testing.T) {
	const quota = 64 << 10
	p := NewFullDet(Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 2})
	q := p.(LogQuota)
	p.HostTask(7)
	var sent []Message
	send := func(i int) {
		payload := make([]byte, 1000+i%100)
		for j := range payload {
			payload[j] = byte(i * j)
		}
		m := Message{To: 9, Handler: 3, Key: uint64(i), Payload: payload,
			Annotation: commutative.Annotation{Order: commutative.Order(i % 2)}}
		id := p.Send(7, 0, m)
		m.ID = id
		sent = append(sent, m)
	}
	var dumps []DumpBatch
	blocked := false
	for i := 0; i < 400 && !blocked; i++ {
		ok, err := q.LogRoom()
		require.NoError(t, err)
		if !ok {
			blocked = true
			break
		}
		send(i)
		p.Advance()
		dumps = append(dumps, q.TakeDumps()...)
	}
	require.True(t, blocked, "the log filled its quota with no acknowledgement")
	require.NotEmpty(t, dumps)
	st := q.DumpStats()
	require.LessOrEqual(t, st.InMemory, quota)
	require.LessOrEqual(t, st.HighWater, quota)
	// Every dump goes to the preferred logger (PE 1 of 2 loggers: 1), in
	// log order, without a gap, and decodes to what was sent.
	next := 0
	for _, d := range dumps {
		require.Equal(t, 1, d.Logger)
		require.Equal(t, next, d.From)
		got, err := DecodeDumped(d.Payload)
		require.NoError(t, err)
		require.Len(t, got, d.To-d.From)
		for k, e := range got {
			want := sent[d.From+k]
			require.Equal(t, PEID(0), e.ToPE)
			require.Equal(t, want.ID, e.Message.ID)
			require.Equal(t, want.Key, e.Message.Key)
			require.Equal(t, want.Payload, e.Message.Payload)
			require.Equal(t, want.Annotation, e.Message.Annotation)
		}
		next = d.To
	}
	// An acknowledgement of the wrong logger changes nothing; the right
	// one frees the memory and gives room.
	q.DumpAcked(0, 0, next)
	ok, _ := q.LogRoom()
	require.False(t, ok)
	q.DumpAcked(1, 0, next)
	ok, err := q.LogRoom()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, next, p.(*FullDet).log.released)
	require.Greater(t, q.DumpStats().Dumped, 0)

	// A recovery that must resend a released entry says so.
	p.FailureNotice([]PEID{0}, []Relocation{{Task: 9, PE: 1}})
	require.ErrorIs(t, q.DumpedEntryNeeded(), ErrDumpedEntryNeeded)

	// Both loggers dead: a full log is an error.
	q.DumpLoggerFailed(1)
	q.DumpLoggerFailed(0)
	for i := 0; i < 400; i++ {
		ok, err := q.LogRoom()
		if err != nil {
			require.ErrorIs(t, err, ErrNoLoggerLeft)
			return
		}
		require.True(t, ok)
		send(i)
		p.Advance()
	}
	t.Fatal("no error with the quota full and no logger")
}

// The dumps due are pressing (to be sent before the caller's transmit)
// once they hold a quarter of the window, and not before: each dump sent
// on its own costs a write, a read and an acknowledgement.
func TestDumpsPressing(t *testing.T) {
	const quota = 1 << 20
	p := NewFullDet(Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 1})
	q := p.(LogQuota)
	require.False(t, q.DumpsPressing())
	p.HostTask(7)
	e := p.(*FullDet).engine
	window := e.quota.d.cfg.Window
	require.Greater(t, window, e.quota.d.cfg.Batch)
	for i := 0; i < 2000; i++ {
		ok, err := q.LogRoom()
		require.NoError(t, err)
		require.True(t, ok, "nothing is acknowledged, but the window is not full yet")
		p.Send(7, 0, Message{To: 9, Handler: 3, Key: uint64(i), Payload: make([]byte, 1000)})
		p.Advance()
		due := 0
		for _, d := range e.dumpsDue {
			due += d.Bytes
		}
		require.Equal(t, 4*due >= window, q.DumpsPressing(), "%d bytes due, window %d", due, window)
		if q.DumpsPressing() {
			require.NotEmpty(t, q.TakeDumps())
			require.False(t, q.DumpsPressing())
			return
		}
	}
	t.Fatal("the dumps due never pressed")
}

func TestDecodeDumpedRefusesMalformed(t *testing.T) {
	for _, b := range [][]byte{{0x80}, {1, 2, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200}} {
		_, err := DecodeDumped(b)
		require.ErrorIs(t, err, ErrBadDump)
		_, err = CountDumped(b)
		require.ErrorIs(t, err, ErrBadDump)
	}
}

// quotaLog sends n messages of about size bytes from task 7 to a task of
// PE 1 (a message to a task of the same PE is not logged) with a
// handler's LogRoom before each, acknowledging every dump at once, and
// returns the dumps.
func quotaLog(t *testing.T, p Protocol, n, size int) []DumpBatch {
	t.Helper()
	q := p.(LogQuota)
	var all []DumpBatch
	for i := range n {
		ok, err := q.LogRoom()
		require.NoError(t, err)
		require.True(t, ok, "message %d: the logger acknowledged every dump", i)
		p.Send(7, 1, Message{To: 9, Handler: 3, Key: uint64(i), Payload: make([]byte, size+i%7)})
		p.Advance()
		for _, d := range q.TakeDumps() {
			all = append(all, d)
			q.DumpAcked(d.Logger, d.Epoch, d.To)
		}
	}
	return all
}

// Under a quota the log's chunks are small and come back from its free
// list as loggers store entries: its memory stays within the quota and
// two chunks however much goes through it, and CountDumped counts what
// DecodeDumped decodes.
func TestLogQuotaMemoryFollowsTheQuota(t *testing.T) {
	const quota = 1 << 20
	p := NewPartialDet(Config{PE: 0, PEs: 2, LogQuota: quota, Loggers: 1, LogOffHeap: true})
	p.HostTask(7)
	dumps := quotaLog(t, p, 4000, 2000) // 8 MB through a 1 MiB quota
	require.NotEmpty(t, dumps)
	for _, d := range dumps {
		n, err := CountDumped(d.Payload)
		require.NoError(t, err)
		require.Equal(t, d.To-d.From, n)
	}
	l := &p.(*PartialDet).log
	chunk := quotaChunk(quota)
	require.Equal(t, 64<<10, chunk)
	require.LessOrEqual(t, l.memBytes(), quota+2*chunk)
	if canMap {
		require.LessOrEqual(t, l.mem.mappedBytes(), quota+2*chunk)
	}
	require.NotEmpty(t, l.free, "released chunks are kept for reuse")
	st := p.(LogQuota).DumpStats()
	require.LessOrEqual(t, st.HighWater, quota)
	require.Greater(t, st.Dumped, 7_000_000)
}

// Tasks waiting at a sync point make the idle log dump ahead what their
// resume will log (everything before the first resume), the resume
// (started task by task after a LogRoom each) ends the drain and is
// measured, and the next drain leaves room for that much and an eighth.
func TestLogQuotaDrainsAtASyncPoint(t *testing.T) {
	const quota = 1 << 20
	p := NewPartialDet(Config{PE: 0, PEs: 2, LogQuota: quota, Loggers: 1})
	p.HostTask(7)
	q := p.(LogQuota)
	ackAll := func() int {
		n := 0
		for {
			ds := q.TakeDumps()
			if len(ds) == 0 {
				return n
			}
			for _, d := range ds {
				q.DumpAcked(d.Logger, d.Epoch, d.To)
				n++
			}
		}
	}
	quotaLog(t, p, 50, 2000) // 100 KB: below the threshold (an eighth)
	require.Zero(t, q.DumpStats().Dumped)

	q.AtSync(10)
	require.Positive(t, ackAll(), "before the first resume the drain dumps all")
	require.Zero(t, q.DumpStats().InMemory)

	// A resume of 10 tasks, 80 KB each.
	const perTask = 80_000
	q.ResumeStart()
	for i := range 10 {
		ok, err := q.LogRoom()
		require.NoError(t, err)
		require.True(t, ok, "task %d", i)
		p.Send(7, 1, Message{To: 9, Handler: 3, Key: uint64(1000 + i), Payload: make([]byte, perTask)})
		p.Advance()
		ackAll()
	}
	q.Resumed(10)
	ackAll()
	before := q.DumpStats().InMemory
	require.Positive(t, before)

	// Waiting at the next sync point: the drain leaves the room the
	// resume needs (its bytes and an eighth, and a batch).
	q.AtSync(10)
	dumped := ackAll()
	after := q.DumpStats().InMemory
	need := 10 * perTask * 9 / 8
	require.LessOrEqual(t, after+need, quota, "the resume fits after the drain (before: %d)", before)
	if before+need+quotaChunk(quota) > quota {
		require.Positive(t, dumped)
	}
}

// A dump's buffer given back once sent is filled again by a later dump.
func TestRecycleDump(t *testing.T) {
	p := NewPartialDet(Config{PE: 0, PEs: 2, LogQuota: 1 << 20, Loggers: 1})
	p.HostTask(7)
	q := p.(LogQuota)
	var first []byte
	for i := 0; i < 2000; i++ {
		ok, err := q.LogRoom()
		require.NoError(t, err)
		require.True(t, ok)
		p.Send(7, 1, Message{To: 9, Handler: 3, Key: uint64(i), Payload: make([]byte, 2000)})
		p.Advance()
		for _, d := range q.TakeDumps() {
			n, err := CountDumped(d.Payload)
			require.NoError(t, err)
			require.Equal(t, d.To-d.From, n)
			if first == nil {
				first = d.Payload
			} else if &d.Payload[:1][0] == &first[:1][0] {
				return // reused
			}
			q.DumpAcked(d.Logger, d.Epoch, d.To)
			q.RecycleDump(d.Payload)
		}
	}
	t.Fatal("no dump reused a buffer given back")
}

// A recovery fetches back only the dumped entries its restored tasks
// need: NeedDumped lists them per logger's run, PickDumped picks them
// out of the run without copying, and once Fetched the FailureNotice
// resends exactly them, in log order, with nothing missing.
func TestFetchOnlyNeededEntries(t *testing.T) {
	const quota = 32 << 10
	p := NewFullDet(Config{PE: 1, PEs: 3, LogQuota: quota, Loggers: 1})
	q := p.(LogQuota)
	p.HostTask(7)
	var toNine []Message
	var dumps []DumpBatch
	for i := range 200 {
		to := TaskID(8) // on PE 2, three entries of five; 9 (on PE 0) the others
		if i%5 >= 3 {
			to = 9
		}
		m := Message{To: to, Handler: 3, Key: uint64(i), Payload: make([]byte, 500+i)}
		m.Payload[0] = byte(i)
		m.ID = p.Send(7, PEID(2-2*(int(to)-8)), m)
		if to == 9 {
			toNine = append(toNine, m)
		}
		p.Advance()
		p.Ready()
		dumps = append(dumps, q.TakeDumps()...)
		if len(dumps) > 0 {
			q.DumpAcked(0, 0, dumps[len(dumps)-1].To)
		}
	}
	released := p.(*FullDet).log.released
	require.Greater(t, released, 100, "most of the log is on the logger")
	var run []byte
	for _, d := range dumps {
		run = append(run, d.Payload...)
	}

	// PE 0 failed, task 9 restored here: only the entries to 9 of the
	// logger's run are needed.
	failed, relocs := []PEID{0}, []Relocation{{Task: 9, PE: 1}}
	fetches, err := q.NeedDumped(failed, relocs)
	require.NoError(t, err)
	require.Len(t, fetches, 1)
	f := fetches[0]
	require.Equal(t, Source{From: 0, To: released, Logger: 0}, f.Source)
	require.Less(t, len(f.Need), released/2)
	parts, rest, err := PickDumped(nil, run, 0, f.Need)
	require.NoError(t, err)
	require.Empty(t, rest)
	require.Less(t, len(parts), len(f.Need), "adjacent entries go in one part")
	var picked []byte
	for _, part := range parts {
		picked = append(picked, part...)
	}
	require.Less(t, len(picked), len(run)/2)
	entries, err := DecodeDumped(picked)
	require.NoError(t, err)
	require.Len(t, entries, len(f.Need))
	// Entries that are not the ones needed are refused.
	require.ErrorIs(t, q.Fetched(f.Need[1:], entries[:len(entries)-1]), ErrBadDump)
	q.DropFetched()
	require.NoError(t, q.Fetched(f.Need, entries))

	p.FailureNotice(failed, relocs)
	require.NoError(t, q.DumpedEntryNeeded())
	var resent []Message
	for _, env := range p.Ready().Envelopes {
		if env.Kind == EnvelopeMessage && env.Message.To == 9 {
			resent = append(resent, env.Message)
		}
	}
	require.Len(t, resent, len(toNine))
	for k, m := range resent {
		require.Equal(t, toNine[k].ID, m.ID)
		require.Equal(t, toNine[k].Payload, m.Payload)
	}

	// Entries past a run are left over, one before it is refused, and
	// a run cut inside an entry does not pick.
	var firstHalf []byte
	for _, d := range dumps[:len(dumps)/2] {
		firstHalf = append(firstHalf, d.Payload...)
	}
	end := dumps[len(dumps)/2-1].To
	_, rest, err = PickDumped(nil, firstHalf, 0, f.Need)
	require.NoError(t, err)
	require.NotEmpty(t, rest)
	require.Less(t, len(rest), len(f.Need))
	require.GreaterOrEqual(t, rest[0], end, "the rest starts past the run")
	require.Less(t, f.Need[len(f.Need)-len(rest)-1], end, "and all before it was picked")
	_, _, err = PickDumped(nil, run, 1, []int{0})
	require.ErrorIs(t, err, ErrBadDump)
	_, _, err = PickDumped(nil, run[:len(run)-1], 0, []int{released - 1})
	require.ErrorIs(t, err, ErrBadDump)
}

// TakeDumpsIn encodes each dump into the memory the caller gives for its
// logger, large enough for it, and into the log's own buffer where it
// gives none or too little; the bytes are TakeDumps' either way.
func TestTakeDumpsIn(t *testing.T) {
	run := func(buffer func(logger, size int) []byte) []DumpBatch {
		p := NewFullDet(Config{PE: 0, PEs: 2, LogQuota: 16 << 10, Loggers: 1})
		q := p.(LogQuota)
		p.HostTask(1)
		var out []DumpBatch
		for i := range 200 {
			p.Send(1, 1, Message{To: 2, Key: uint64(i), Payload: bytes.Repeat([]byte{byte(i)}, 300+i)})
			p.Advance()
			for _, d := range q.TakeDumpsIn(buffer) {
				out = append(out, DumpBatch{Logger: d.Logger, Epoch: d.Epoch, From: d.From, To: d.To, Payload: d.Payload})
				q.DumpAcked(d.Logger, d.Epoch, d.To)
			}
		}
		return out
	}
	plain := run(nil)
	require.NotEmpty(t, plain)
	asked := 0
	given := map[*byte]bool{}
	shared := run(func(logger, size int) []byte {
		require.Equal(t, 0, logger)
		asked++
		switch asked % 3 {
		case 0:
			return nil // no room
		case 1:
			return make([]byte, 0, size-1) // too small: not used
		}
		b := make([]byte, 0, size)
		given[unsafe.SliceData(b)] = true
		return b
	})
	require.Equal(t, plain, shared)
	inGiven := 0
	for _, d := range shared {
		if given[unsafe.SliceData(d.Payload)] {
			inGiven++
		}
	}
	require.Equal(t, len(given), inGiven, "every dump given memory encoded there")
	require.Less(t, inGiven, len(shared))
}
