package logging

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under a quota, a multicast (one payload to several tasks, sent by one
// handler) is counted and dumped as the log holds it: its payload once.
// Checked against naive versions over random multicasts, acknowledgement
// delays and chunk ends: the quota's memory is at every step at least
// the bytes of the entries not released with each payload the log holds
// counted once (more only for an entry that shares the payload of one
// dumped before it was logged, which counts in full, as its dump carries
// it again), and never past the quota; every dump decodes to the messages sent, its
// first entry carrying its payload; every entry picked out of the run
// alone (PickDumped) decodes to its message; and the bytes dumped are
// those of the entries with each multicast's payload once.
func TestLogQuotaDumpsAMulticastsPayloadOnce(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		const quota = 24 << 10
		e := newEngine(KindPartialDet, Config{PE: 0, PEs: 2, LogQuota: quota, Loggers: 1})
		e.HostTask(1)
		var sent []Message
		var dumps, unacked []DumpBatch
		perMessage, carried := 0, 0
		// heldNaive is the bytes of the entries not released (as
		// messages), each payload the log holds (chunk, offset) once.
		heldNaive := func() int {
			seen := map[[2]int32]bool{}
			n := 0
			for i := e.log.released; i < e.log.len(); i++ {
				en := e.log.entry(i)
				n += e.log.message(i).wireSize()
				if k := [2]int32{en.chunk, en.payloadOff}; seen[k] && en.payloadLen > 0 {
					n -= int(en.payloadLen)
				}
				seen[[2]int32{en.chunk, en.payloadOff}] = true
			}
			return n
		}
		for h := 0; h < 300; h++ {
			ok, err := e.LogRoom()
			require.NoError(t, err)
			if !ok {
				require.NotEmpty(t, unacked, "seed %d: no room and nothing to wait for", seed)
			}
			for !ok {
				d := unacked[0]
				unacked = unacked[1:]
				e.DumpAcked(d.Logger, d.Epoch, d.To)
				ok, err = e.LogRoom()
				require.NoError(t, err)
			}
			// One handler: a multicast of 1-6 messages, now and then a
			// message of its own between two.
			// The first is the largest a handler sends (the log keeps
			// room for the largest burst it has seen).
			payload := make([]byte, 64+rng.IntN(1500))
			copies, first := 1+rng.IntN(6), h == 0
			if first {
				payload, copies = make([]byte, 1564), 6
			}
			for j := range payload {
				payload[j] = byte(rng.Uint32())
			}
			for k := range copies {
				p := payload
				if k > 0 && (first || rng.IntN(8) == 0) {
					p = append([]byte(nil), payload...)
					p[0] += byte(k)
				}
				m := Message{To: TaskID(2 + k), Handler: 3, Key: uint64(h), Payload: p}
				m.ID = e.Send(1, 1, m)
				sent = append(sent, m)
				perMessage += len(p)
				require.GreaterOrEqual(t, e.DumpStats().InMemory, heldNaive(), "seed %d", seed)
				require.LessOrEqual(t, e.DumpStats().InMemory, quota, "seed %d handler %d copy %d: burst %d max %d inflight %d due %d", seed, h, k, e.quota.burst, e.quota.maxBurst, e.quota.d.InFlight(), len(e.dumpsDue))
			}
			e.Ready()
			e.Advance()
			for _, d := range e.TakeDumps() {
				dumps = append(dumps, DumpBatch{Logger: d.Logger, Epoch: d.Epoch, From: d.From, To: d.To, Payload: append([]byte(nil), d.Payload...)})
				unacked = append(unacked, d)
			}
			for len(unacked) > 0 && rng.IntN(3) == 0 {
				e.DumpAcked(unacked[0].Logger, unacked[0].Epoch, unacked[0].To)
				unacked = unacked[1:]
				require.GreaterOrEqual(t, e.DumpStats().InMemory, heldNaive(), "seed %d", seed)
			}
		}
		require.Greater(t, len(dumps), 10)
		var run []byte
		for _, d := range dumps {
			got, err := DecodeDumped(d.Payload)
			require.NoError(t, err)
			require.Len(t, got, d.To-d.From)
			for k, g := range got {
				want := sent[d.From+k]
				require.Equal(t, want.ID, g.Message.ID)
				require.Equal(t, want.To, g.Message.To)
				require.Equal(t, want.Payload, g.Message.Payload)
				if k == 0 || !e.log.sharesPrevious(d.From+k) {
					carried += len(want.Payload)
				}
			}
			run = append(run, d.Payload...)
		}
		to := dumps[len(dumps)-1].To
		for i := range to {
			got, err := DecodeDumped(pickDumpedAll(t, run, []int{i}))
			require.NoError(t, err, "seed %d entry %d", seed, i)
			require.Len(t, got, 1)
			require.Equal(t, sent[i].ID, got[0].Message.ID)
			require.Equal(t, sent[i].Payload, got[0].Message.Payload)
		}
		// Every other entry picked: sharers apart from their payload.
		var need []int
		for i := 1; i < to; i += 2 {
			need = append(need, i)
		}
		got, err := DecodeDumped(pickDumpedAll(t, run, need))
		require.NoError(t, err)
		require.Len(t, got, len(need))
		for k, i := range need {
			require.Equal(t, sent[i].Payload, got[k].Message.Payload)
		}
		require.Less(t, carried, perMessage*3/4, "seed %d: multicasts' payloads dumped once", seed)
		require.Less(t, len(run), perMessage, "seed %d", seed)
	}
}

// A dump whose first entry says its payload is the one before, and one
// whose shared payload has another length than the one before, are
// refused.
func TestDecodeDumpedRefusesASharedPayloadWithoutOne(t *testing.T) {
	var l senderLog
	l.add(Message{To: 2, Payload: make([]byte, 100)}, 1, nil)
	l.add(Message{To: 3, Payload: make([]byte, 100)}, 1, nil)
	require.True(t, l.sharesPrevious(1))
	alone := l.appendDumped(nil, 1, true)
	_, err := CountDumped(alone)
	require.ErrorIs(t, err, ErrBadDump)
	_, err = DecodeDumped(alone)
	require.ErrorIs(t, err, ErrBadDump)
	both := l.appendDumped(l.appendDumped(nil, 0, false), 1, true)
	n, err := CountDumped(both)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	got, err := DecodeDumped(both)
	require.NoError(t, err)
	require.Equal(t, got[0].Message.Payload, got[1].Message.Payload)
	l.add(Message{To: 4, Payload: make([]byte, 80)}, 1, nil)
	wrong := l.appendDumped(l.appendDumped(nil, 0, false), 2, true)
	_, err = DecodeDumped(wrong)
	require.ErrorIs(t, err, ErrBadDump)
}

// The logger's walk over dumped entries (dumpedSize, which skips the
// fields before the lengths) agrees with the full read (dumpedFraming) on
// valid dumps and on random damage to them: the same sizes, the same
// refusals.
func TestDumpedSizeAgreesWithTheFullRead(t *testing.T) {
	var l senderLog
	rng := rand.New(rand.NewPCG(3, 4))
	payload := make([]byte, 200)
	for i := range 40 {
		m := Message{ID: MessageID{Sender: TaskID(rng.Uint64() >> uint(rng.IntN(64))), SRN: rng.Uint64() >> uint(rng.IntN(64))},
			To: TaskID(rng.IntN(1 << 20)), Key: rng.Uint64(), Handler: uint32(rng.IntN(300)), Payload: payload}
		if rng.IntN(3) == 0 {
			payload = make([]byte, 64+rng.IntN(300))
			payload[0] = byte(i)
		}
		l.add(m, PEID(rng.IntN(4)), nil)
	}
	var dump []byte
	for i := range l.len() {
		dump = l.appendDumped(dump, i, i > 0 && l.sharesPrevious(i))
	}
	walk := func(b []byte, read func([]byte, bool) (dumpedEntry, error)) []int {
		var sizes []int
		for n := 0; len(b) > 0; n++ {
			f, err := read(b, n > 0)
			if err != nil {
				return append(sizes, -1)
			}
			sizes = append(sizes, f.size)
			b = b[f.size:]
		}
		return sizes
	}
	// dumpedEntrySize, CountDumped's walk, as a read of the framing.
	entrySize := func(b []byte, after bool) (dumpedEntry, error) {
		size, ok := dumpedEntrySize(b, after)
		if !ok {
			return dumpedEntry{}, ErrBadDump
		}
		return dumpedEntry{size: size}, nil
	}
	count := func(b []byte) int {
		n, err := CountDumped(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadDump)
			return -1
		}
		return n
	}
	require.Equal(t, walk(dump, dumpedFraming), walk(dump, dumpedSize))
	require.Equal(t, walk(dump, dumpedFraming), walk(dump, entrySize))
	require.NotContains(t, walk(dump, dumpedSize), -1)
	require.Equal(t, l.len(), count(dump))
	for range 3000 {
		b := append([]byte(nil), dump...)
		for range 1 + rng.IntN(4) {
			switch rng.IntN(3) {
			case 0:
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			case 1:
				b[rng.IntN(len(b))] |= 0x80
			default:
				b = b[:rng.IntN(len(b))]
			}
			if len(b) == 0 {
				break
			}
		}
		require.Equal(t, walk(b, dumpedFraming), walk(b, dumpedSize))
		sizes := walk(b, dumpedFraming)
		require.Equal(t, sizes, walk(b, entrySize))
		if slices.Contains(sizes, -1) {
			require.Equal(t, -1, count(b))
		} else {
			require.Equal(t, len(sizes), count(b))
		}
	}
}

// skipEightFields (word operations) agrees with skipDumpedFields (a
// branch per byte) on random bytes, mostly of 0x80 or more so that long
// and malformed uvarints come up, and on the same with the last byte of
// a 10-byte uvarint above 1.
func TestSkipEightFieldsAgreesWithTheByteWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		b := make([]byte, 16+rng.IntN(24))
		high := rng.IntN(10) // out of 10: how many bytes have the high bit
		for i := range b {
			b[i] = byte(rng.IntN(0x80))
			if rng.IntN(10) < high {
				b[i] |= 0x80
			}
		}
		require.Equal(t, skipDumpedFields(b, 8), skipEightFields(b), "% x", b)
	}
}

// BenchmarkCountDumped is a logger's check of a dump's framing
// (CountDumped) on LeanMD-like dumps: multicasts of 1.5 KB payloads to
// four tasks, a dump a sixteenth of a 436,376-byte quota.
func BenchmarkCountDumped(b *testing.B) {
	var l senderLog
	payload := make([]byte, 1500)
	var dump []byte
	for i := 0; len(dump) < 436376/16; i++ {
		if i%4 == 0 {
			payload = append([]byte(nil), payload...)
			payload[0] = byte(i / 4)
		}
		l.add(Message{ID: MessageID{Sender: TaskID(2<<32 | i%27), SRN: uint64(1000 + i)}, To: TaskID(3<<32 | i%81), Key: uint64(i / 64),
			Handler: uint32(i % 7), Payload: payload}, PEID(i%4), nil)
		dump = l.appendDumped(dump, i, i > 0 && l.sharesPrevious(i))
	}
	want := l.len()
	for _, bc := range []struct {
		name  string
		count func([]byte) (int, error)
	}{
		{"CountDumped", CountDumped},
		{"dumpedSize", func(b []byte) (int, error) { // the walk before dumpedEntrySize
			n := 0
			for ; len(b) > 0; n++ {
				f, err := dumpedSize(b, n > 0)
				if err != nil {
					return 0, err
				}
				b = b[f.size:]
			}
			return n, nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(dump)))
			for b.Loop() {
				if n, err := bc.count(dump); err != nil || n != want {
					b.Fatalf("%d entries, %v; want %d", n, err, want)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*want), "ns/entry")
		})
	}
}

// BenchmarkLogQuotaMulticast logs LeanMD-like multicasts (one payload of
// 1.5 KB to four tasks per handler) under a quota of 436,376 bytes (a
// tenth of LeanMD's high-water mark at 4 PEs), dumping and acknowledging
// as it goes: the engine's cost per message under a quota, and the
// bytes dumped per message.
func BenchmarkLogQuotaMulticast(b *testing.B) {
	e := newEngine(KindPartialDet, Config{PE: 0, PEs: 2, LogQuota: 436376, Loggers: 1})
	e.HostTask(1)
	payload := make([]byte, 1500)
	for i := range payload {
		payload[i] = byte(i)
	}
	dumped := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 4 {
		if ok, err := e.LogRoom(); err != nil || !ok {
			b.Fatalf("no room: %v", err)
		}
		payload[0] = byte(i)
		for k := range 4 {
			e.Send(1, 1, Message{To: TaskID(2 + k), Handler: 3, Key: uint64(i), Payload: payload})
		}
		e.Ready()
		e.Advance()
		for _, d := range e.TakeDumps() {
			dumped += len(d.Payload)
			e.DumpAcked(d.Logger, d.Epoch, d.To)
			e.RecycleDump(d.Payload)
		}
		if e.log.len() >= 60000 {
			e.Checkpoint()
		}
	}
	b.ReportMetric(float64(dumped)/float64(b.N), "dumped-bytes/op")
}

// pickDumpedAll picks the entries need of run, a run of dumps that starts
// at entry 0, and returns the picked parts joined.
func pickDumpedAll(t *testing.T, run []byte, need []int) []byte {
	t.Helper()
	parts, rest, err := PickDumped(nil, run, 0, need)
	require.NoError(t, err)
	require.Empty(t, rest)
	var picked []byte
	for _, p := range parts {
		picked = append(picked, p...)
	}
	return picked
}
