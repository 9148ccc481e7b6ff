package launcher

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/jobtls"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %s", what)
		}
		time.Sleep(time.Millisecond) // a poll with a deadline, not a wait for a duration
	}
}

// dumpOf makes a DumpBatch of n one-entry messages from entry from on,
// as a PE's protocol encodes them.
func dumpOf(t *testing.T, logger int, epoch uint64, from, n int) logging.DumpBatch {
	t.Helper()
	p := logging.NewFullDet(logging.Config{PE: 0, PEs: 2, LogQuota: 1 << 10, Loggers: 1})
	q := p.(logging.LogQuota)
	p.HostTask(1)
	// The protocol's dumps (one entry each, with so small a quota; each
	// acknowledged at once, and enough sent after entry from+n that it
	// is dumped), joined from entry from to from+n.
	out := logging.DumpBatch{Logger: logger, Epoch: epoch, From: from, To: from}
	for i := 0; i < from+n+16; i++ {
		p.Send(1, 1, logging.Message{To: 2, Payload: bytes.Repeat([]byte{byte(i)}, 200)})
		p.Advance()
		for _, d := range q.TakeDumps() {
			if d.From == out.To && d.To <= from+n {
				out.Payload = append(out.Payload, d.Payload...)
				out.To = d.To
			}
			q.DumpAcked(0, 0, d.To)
		}
	}
	require.Equal(t, from+n, out.To)
	return out
}

// posted keeps what a dump client posts to its PE: the dumps it gives
// back once written (sent) apart from the rest.
type posted struct {
	mu   sync.Mutex
	evs  []any
	sent [][]byte
}

func (p *posted) post(ev any) {
	p.mu.Lock()
	if s, ok := ev.(scheduler.DumpSent); ok {
		p.sent = append(p.sent, s.Payload)
	} else {
		p.evs = append(p.evs, ev)
	}
	p.mu.Unlock()
}

func (p *posted) sentBack() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.sent...)
}

func (p *posted) all() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]any(nil), p.evs...)
}

// A PE's dumps reach the logger over the authenticated stream (plain and
// TLS), which stores them and acknowledges each cumulatively; a
// stranger (a wrong secret, not the protocol, a malformed dump) is
// refused and logged, and the PE that loses its logger hears of it; a
// run the logger stores comes back on a fetch.
func TestDumpStream(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	creds, err := jobtls.New()
	require.NoError(t, err)
	for _, name := range []string{"plain", "tls"} {
		t.Run(name, func(t *testing.T) {
			var cfg *tls.Config
			if name == "tls" {
				cfg = creds.PE().PeerConfig()
			}
			var logBuf syncBuffer
			log := slog.New(slog.NewTextHandler(&logBuf, nil))
			srv, err := listenDumps(0, 2, "127.0.0.1", secret, cfg, log)
			require.NoError(t, err)
			defer srv.close()
			var got posted
			c := newDumpClient(1, []string{srv.addr()}, secret, cfg, got.post, log)
			defer c.close()
			d := dumpOf(t, 0, 3, 0, 8)
			c.Dump(d)
			// The reader goroutine keeps the acknowledgement for the PE
			// and tells it.
			waitFor(t, "the acknowledgement", func() bool { return len(got.all()) > 0 })
			require.Equal(t, scheduler.DumpAcksPending{}, got.all()[0])
			require.Equal(t, []scheduler.DumpAcked{{Logger: 0, Epoch: 3, To: d.To}}, c.TakeDumpAcks(nil))
			require.Empty(t, c.TakeDumpAcks(nil), "taken once")
			require.Equal(t, len(d.Payload), srv.store.held())
			// The dump's buffer came back to the PE once written.
			waitFor(t, "the buffer given back", func() bool { return len(got.sentBack()) > 0 })
			require.Equal(t, d.Payload, got.sentBack()[0])
			// The run comes back as it went; one the logger does not hold
			// is an error.
			back, err := c.Fetch(0, 3, d.From, d.To)
			require.NoError(t, err)
			require.Equal(t, d.Payload, back)
			_, err = c.Fetch(0, 4, d.From, d.To)
			require.ErrorContains(t, err, "does not hold")
			// Some entries of it: those alone come back, as the PE picks
			// them from the whole run.
			need := []int{d.From + 1, d.From + 2, d.From + 5}
			some, err := c.FetchSome(0, 3, d.From, d.To, need)
			require.NoError(t, err)
			parts, rest, err := logging.PickDumped(nil, d.Payload, d.From, need)
			require.NoError(t, err)
			require.Empty(t, rest)
			require.Len(t, parts, 2)
			require.Equal(t, bytes.Join(parts, nil), some)
			_, err = c.FetchSome(0, 3, d.From, d.To, []int{d.From + 2, d.From + 1})
			require.ErrorContains(t, err, "must increase")

			// A PE with the wrong secret is refused, and the logger says so.
			var bad posted
			stranger := newDumpClient(0, []string{srv.addr()}, []byte("not the secret, not the secret.."), cfg, bad.post, log)
			defer stranger.close()
			stranger.Dump(d)
			waitFor(t, "the stranger's loss of the logger", func() bool { return len(bad.all()) > 0 })
			lost, ok := bad.all()[0].(scheduler.LoggerLost)
			require.True(t, ok)
			require.ErrorIs(t, lost.Why, errDumpRefused)
			waitFor(t, "the refusal in the logger's log", func() bool { return strings.Contains(logBuf.String(), "refused dump connection") })
			require.Equal(t, len(d.Payload), srv.store.held(), "nothing stored from a stranger")

			if cfg == nil {
				// Not the protocol at all.
				nc, err := net.Dial("tcp", srv.addr())
				require.NoError(t, err)
				nc.Write([]byte("GET / HTTP/1.1\r\nHost: logger\r\n\r\n"))
				nc.SetReadDeadline(time.Now().Add(30 * time.Second))
				io.ReadAll(nc) // ends when the logger closes (or resets) it
				nc.Close()
				waitFor(t, "the refusal", func() bool { return strings.Contains(logBuf.String(), "not a gochare logger stream") })
			}

			// A malformed dump from an authenticated PE drops its
			// connection: the PE takes the logger for lost.
			k := c.links[0]
			k.mu.Lock()
			conn := k.conn
			k.mu.Unlock()
			var h [dumpHeaderSize]byte
			h[0] = dumpKindDump
			binary.LittleEndian.PutUint32(h[9:], 5)
			binary.LittleEndian.PutUint32(h[13:], 2) // to below from
			_, err = conn.Write(h[:])
			require.NoError(t, err)
			waitFor(t, "the loss of the logger", func() bool {
				for _, ev := range got.all() {
					if _, ok := ev.(scheduler.LoggerLost); ok {
						return true
					}
				}
				return false
			})
			waitFor(t, "the logger's note", func() bool { return strings.Contains(logBuf.String(), "malformed dump from PE 1") })
		})
	}
}

// The logger keeps one period per PE: a dump of a new period replaces
// the old one, one that starts below what it holds replaces from there.
func TestLoggerStore(t *testing.T) {
	var s loggerStore
	require.Equal(t, 10, s.store(0, 1, 0, 10, make([]byte, 100)))
	require.Equal(t, 20, s.store(0, 1, 10, 20, make([]byte, 100)))
	s.store(1, 1, 0, 5, make([]byte, 7))
	require.Equal(t, 207, s.held())
	require.Equal(t, 4, s.store(0, 2, 0, 4, make([]byte, 40)))
	require.Equal(t, 47, s.held())
	require.Equal(t, 3, s.store(0, 2, 0, 3, make([]byte, 30)))
	require.Equal(t, 37, s.held())
}

// A logger reads dumps into slabs of mapped memory, one PE's period after
// the other in each; the slabs of a period that ended are reused for the
// next, and a dump larger than a quarter slab gets a chunk of its own.
func TestLoggerStoreSlabs(t *testing.T) {
	s := loggerStore{mem: logging.NewDumpMemory()}
	put := func(pe int, epoch uint64, from, to, n int, fill byte) []byte {
		b := s.buffer(pe, epoch, n)
		require.Len(t, b, n)
		for i := range b {
			b[i] = fill
		}
		require.Equal(t, to, s.store(pe, epoch, from, to, b))
		return b
	}
	var want []byte
	for i := range 60 {
		want = append(want, put(0, 1, i, i+1, 100_000, byte(i))...)
	}
	big := put(1, 1, 0, 1, logging.DumpSlab, 7)
	require.Equal(t, len(want)+len(big), s.held())
	got, ok := fetchJoined(&s, 0, 1, 0, 60)
	require.True(t, ok)
	require.Equal(t, want, got)
	got, ok = fetchJoined(&s, 1, 1, 0, 1)
	require.True(t, ok)
	require.Equal(t, big, got)
	slabs := len(s.pes[0].slabs)
	require.Greater(t, slabs, 1)
	require.Len(t, s.pes[1].slabs, 0, "the large dump has a chunk of its own")
	require.Len(t, s.pes[1].own, 1)

	// PE 0's next period: its slabs go to the free list and come back.
	put(0, 2, 0, 1, 100_000, 1)
	require.Len(t, s.free, slabs-1)
	require.Equal(t, 100_000+len(big), s.held())
	_, ok = fetchJoined(&s, 0, 1, 0, 60)
	require.False(t, ok, "the period that ended is gone")
}

// fetchJoined is s.fetch with the runs joined.
func fetchJoined(s *loggerStore, pe int, epoch uint64, from, to int) ([]byte, bool) {
	parts, size, d, ok := s.fetch(pe, epoch, from, to)
	if !ok {
		return nil, false
	}
	defer s.done(d)
	out := bytes.Join(parts, nil)
	if len(out) != size {
		panic("loggerStore.fetch: size differs from its runs'")
	}
	return out, true
}

// A fetch reads the runs where the logger stores them: a period that
// ends while a fetch writes them out keeps its slabs until the fetch is
// done, and only then do they go back to the free list.
func TestLoggerStoreFetchPinsSlabs(t *testing.T) {
	s := loggerStore{mem: logging.NewDumpMemory()}
	for i := range 3 {
		b := s.buffer(0, 1, 1000)
		for j := range b {
			b[j] = byte(i)
		}
		s.store(0, 1, i, i+1, b)
	}
	parts, size, d, ok := s.fetch(0, 1, 0, 3)
	require.True(t, ok)
	require.Equal(t, 3000, size)
	require.Len(t, parts, 3)
	// The next period begins: the fetched runs must stay as they were.
	nb := s.buffer(0, 2, 1000)
	for j := range nb {
		nb[j] = 0xff
	}
	s.store(0, 2, 0, 1, nb)
	require.Empty(t, s.free, "a slab under a fetch is not reused")
	for i, p := range parts {
		require.Equal(t, bytes.Repeat([]byte{byte(i)}, 1000), p)
	}
	s.done(d)
	require.Len(t, s.free, 1, "the slab goes back once the fetch is done")
	_, _, _, ok = s.fetch(0, 1, 0, 3)
	require.False(t, ok)
}

// A fetch's list of entries goes as (skip, count) pairs and comes back
// as it went; a list past the fetch's range, or empty, is refused.
func TestFetchNeedEncoding(t *testing.T) {
	for _, need := range [][]int{{10}, {10, 11, 12}, {12, 14, 15, 16, 29}, {19, 29}} {
		b := encodeNeed(10, need)
		got, err := decodeNeed(10, 30, b)
		require.NoError(t, err)
		require.Equal(t, need, got)
		require.LessOrEqual(t, len(b), maxNeedBytes*len(need))
	}
	_, err := decodeNeed(10, 30, encodeNeed(10, []int{29, 30}))
	require.ErrorContains(t, err, "past the range")
	_, err = decodeNeed(10, 30, nil)
	require.Error(t, err)
	_, err = decodeNeed(10, 30, []byte{0, 0})
	require.Error(t, err, "a count of 0")
	_, err = decodeNeed(10, 30, []byte{0x80})
	require.Error(t, err)
}

// dumpPair starts a logger's dump server for 2 PEs and PE 1's client of
// it, both closed at the end of the test; got records what the client
// posts.
func dumpPair(t *testing.T) (*dumpServer, *dumpClient, *posted) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := listenDumps(0, 2, "127.0.0.1", secret, nil, log)
	require.NoError(t, err)
	t.Cleanup(srv.close)
	got := &posted{}
	c := newDumpClient(1, []string{srv.addr()}, secret, nil, got.post, log)
	t.Cleanup(c.close)
	return srv, c, got
}

// Dumps queued together go out in one vectored write, and the logger
// acknowledges the last of them (an acknowledgement is cumulative);
// every dump's buffer comes back, and a fetch is answered with the
// acknowledgement before it.
func TestDumpStreamBatched(t *testing.T) {
	srv, c, got := dumpPair(t)
	all := dumpOf(t, 0, 3, 0, 40)
	entries, err := logging.DecodeDumped(all.Payload)
	require.NoError(t, err)
	require.Len(t, entries, 40)
	// Forty dumps of one entry each, queued at once (before the link
	// is up, so that they go out together).
	k := c.links[0]
	at := 0
	for i := range 40 {
		parts, _, err := logging.PickDumped(nil, all.Payload[at:], i, []int{i})
		require.NoError(t, err)
		k.mu.Lock()
		k.queue = append(k.queue, dumpOut{DumpBatch: logging.DumpBatch{Logger: 0, Epoch: 3, From: i, To: i + 1, Payload: parts[0]}})
		k.mu.Unlock()
		at += len(parts[0])
	}
	c.Fetch(0, 3, 0, 1) // starts the link; the dumps go first
	waitFor(t, "every buffer given back", func() bool { return len(got.sentBack()) == 40 })
	var acks []scheduler.DumpAcked
	waitFor(t, "the acknowledgement of the last", func() bool {
		acks = c.TakeDumpAcks(acks)
		return len(acks) > 0 && acks[len(acks)-1] == scheduler.DumpAcked{Logger: 0, Epoch: 3, To: 40}
	})
	require.Less(t, len(acks), 40, "acknowledgements of dumps that came together are one")
	for _, ev := range got.all() {
		require.IsType(t, scheduler.DumpAcksPending{}, ev)
	}
	back, err := c.Fetch(0, 3, 0, 40)
	require.NoError(t, err)
	require.Equal(t, all.Payload, back)
	require.Equal(t, len(all.Payload), srv.store.held())
}

// Once its link is up, a PE writes a dump itself, as far as the socket
// takes it; the writer sends the rest from where it stopped, and the PE
// reads the acknowledgement itself (TakeDumpAcks) while one is due.
func TestDumpWrittenByThePE(t *testing.T) {
	srv, c, got := dumpPair(t)
	first := dumpOf(t, 0, 3, 0, 4)
	c.Dump(first) // dials
	k := c.links[0]
	waitFor(t, "the link up", k.pollable.Load)
	var acks []scheduler.DumpAcked
	waitFor(t, "the first acknowledged", func() bool {
		acks = c.TakeDumpAcks(acks)
		return len(acks) > 0 && acks[len(acks)-1].To == first.To
	})
	// A dump far larger than the socket's buffer: the PE writes part of
	// it, the writer the rest.
	big := dumpOf(t, 0, 3, first.To, 20000)
	require.Greater(t, len(big.Payload), 2<<20)
	c.Dump(big)
	require.True(t, k.unacked.Load())
	waitFor(t, "the big one acknowledged", func() bool {
		acks = c.TakeDumpAcks(acks)
		return acks[len(acks)-1].To == big.To
	})
	require.False(t, k.unacked.Load())
	require.Equal(t, len(first.Payload)+len(big.Payload), srv.store.held())
	back, err := c.Fetch(0, 3, big.From, big.To)
	require.NoError(t, err)
	require.Equal(t, big.Payload, back)
	waitFor(t, "both buffers given back", func() bool { return len(got.sentBack()) == 2 })
}

// A PE whose logger is on another host dumps over TCP: the entries and
// the acknowledgements go through the socket (no ring), the logger reads
// it without blocking calls once the first frame is in, and the runs come
// back on a fetch.
func TestDumpStreamOverTCP(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := listenDumps(0, 2, "127.0.0.1", secret, nil, log)
	require.NoError(t, err)
	t.Cleanup(srv.close)
	// Another name for the logger's address: no socket on this host
	// answers to it, so the PE dials TCP.
	_, port, err := net.SplitHostPort(srv.addr())
	require.NoError(t, err)
	var got posted
	c := newDumpClient(1, []string{net.JoinHostPort("localhost", port)}, secret, nil, got.post, log)
	t.Cleanup(c.close)
	first := dumpOf(t, 0, 3, 0, 4)
	c.Dump(first) // dials
	k := c.links[0]
	waitFor(t, "the link up", k.pollable.Load)
	k.mu.Lock()
	_, isTCP := k.conn.(*net.TCPConn)
	hasRing := k.ring != nil
	k.mu.Unlock()
	require.True(t, isTCP, "a TCP connection")
	require.False(t, hasRing)
	require.False(t, k.ringAcks.Load())
	var acks []scheduler.DumpAcked
	at, total := first.To, len(first.Payload)
	for i := range 4 {
		d := dumpOf(t, 0, 3, at, 5+i)
		at, total = d.To, total+len(d.Payload)
		c.Dump(d)
		waitFor(t, "acknowledged", func() bool {
			acks = c.TakeDumpAcks(acks)
			return len(acks) > 0 && acks[len(acks)-1].To == d.To
		})
	}
	require.Equal(t, total, srv.store.held())
	back, err := c.Fetch(0, 3, first.To, at)
	require.NoError(t, err)
	entries, err := logging.CountDumped(back)
	require.NoError(t, err)
	require.Equal(t, at-first.To, entries)
}
