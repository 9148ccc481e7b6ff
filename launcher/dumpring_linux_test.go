package launcher

import (
	"bytes"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// unixPair returns both ends of a Unix stream connection.
func unixPair(t *testing.T) (pe, logger *net.UnixConn) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	require.NoError(t, err)
	defer ln.Close()
	pe, err = net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	require.NoError(t, err)
	logger, err = ln.AcceptUnix()
	require.NoError(t, err)
	t.Cleanup(func() { pe.Close(); logger.Close() })
	return pe, logger
}

// acceptOffer reads a ring offer on the logger's end and maps the ring.
func acceptOffer(t *testing.T, logger *net.UnixConn) (*dumpRing, error) {
	t.Helper()
	rd := newRightsReader(logger)
	defer rd.close()
	var h [dumpHeaderSize]byte
	_, err := io.ReadFull(rd, h[:])
	require.NoError(t, err)
	require.Equal(t, byte(dumpKindRingOffer), h[0])
	return acceptDumpRing(rd, int(uint32(h[17])|uint32(h[18])<<8|uint32(h[19])<<16|uint32(h[20])<<24))
}

// ringPair offers a ring on one end of a socket pair and maps it on the
// other, as a PE and its logger do; both are unmapped when the test ends.
func ringPair(t *testing.T) (pe, logger *dumpRing) {
	t.Helper()
	peEnd, loggerEnd := unixPair(t)
	pe, err := offerDumpRing(peEnd, nil)
	require.NoError(t, err)
	t.Cleanup(pe.unmap)
	logger, err = acceptOffer(t, loggerEnd)
	require.NoError(t, err)
	t.Cleanup(logger.unmap)
	return pe, logger
}

// The ring against a naive model: a place is given while what is placed
// and not consumed, with the end skipped at a wrap, fits in the ring;
// the logger copies out exactly what the PE wrote, also when the PE used
// only the start of its place; positions follow the places.
func TestDumpRing(t *testing.T) {
	pe, logger := ringPair(t)
	d := uint64(len(pe.data))
	type placed struct {
		want []byte
		end  uint64
	}
	var pending []placed
	var head, consumed uint64 // the model's
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 2*d)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	wraps := 0
	for range 5000 {
		if len(pending) == 0 || rng.IntN(3) > 0 {
			n := 1 + rng.IntN(int(d)/3)
			slot, end, ok := pe.alloc(n)
			start := head
			if start%d+uint64(n) > d {
				start += d - start%d
			}
			if start+uint64(n)-consumed > d {
				require.False(t, ok, "a place given in a full ring")
				continue
			}
			require.True(t, ok, "no place in a ring with room")
			if start != head {
				wraps++
			}
			head = start + uint64(n)
			require.Equal(t, head, end)
			used := 1 + rng.IntN(n) // the start of its place
			copy(slot, noise[rng.IntN(int(d)):][:used])
			at, ok := pe.position(slot[:used])
			require.True(t, ok)
			require.Equal(t, start+uint64(used), at)
			pending = append(pending, placed{want: append([]byte(nil), slot[:used]...), end: at})
			continue
		}
		p := pending[0]
		pending = pending[1:]
		got := make([]byte, len(p.want))
		require.NoError(t, logger.take(got, p.end))
		require.Equal(t, p.want, got)
		consumed = p.end
	}
	require.Positive(t, wraps)
	_, ok := pe.position(make([]byte, 10))
	require.False(t, ok, "memory outside the ring")
	require.Error(t, logger.take(make([]byte, 10), 5), "bytes before the ring's start")
	require.Error(t, logger.take(make([]byte, 10), d+5), "bytes across the ring's end")
	_, _, ok = pe.alloc(int(d))
	require.False(t, ok, "a place as large as the ring")
}

// The acknowledgements in the ring's first page against a naive model
// (the latest published, and whether the PE asked for a wake-up since):
// the PE reads the latest, once per publication by its sequence count,
// and the logger learns of a wake-up asked once.
func TestDumpRingAcks(t *testing.T) {
	pe, logger := ringPair(t)
	_, _, _, ok := pe.ack()
	require.False(t, ok, "an acknowledgement before any")
	var model struct {
		published bool
		epoch     uint64
		to        int
		wake      bool
	}
	var lastSeq uint64
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		switch rng.IntN(3) {
		case 0:
			if rng.IntN(5) == 0 {
				model.epoch++
				model.to = 0
			}
			model.to += rng.IntN(100)
			model.published = true
			require.Equal(t, model.wake, logger.publishAck(model.epoch, model.to))
			model.wake = false
		case 1:
			pe.askWake()
			model.wake = true
		case 2:
			seq, epoch, to, ok := pe.ack()
			require.Equal(t, model.published, ok)
			if ok {
				require.Equal(t, model.epoch, epoch)
				require.Equal(t, model.to, to)
				require.GreaterOrEqual(t, seq, lastSeq)
				require.Zero(t, seq%2)
				lastSeq = seq
			}
		}
	}
}

// Concurrently, a PE never reads an acknowledgement half written, and
// one that asks for a wake-up before it reads the page either sees the
// logger's latest acknowledgement or is woken (the logger sees the
// request): it never waits for one already published.
func TestDumpRingAcksConcurrent(t *testing.T) {
	pe, logger := ringPair(t)
	const n = 20000
	next := make(chan int)         // the PE lets the logger publish i
	wake := make(chan struct{}, 1) // the socket's acknowledgement
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range next {
			// to follows epoch, so that a torn read shows.
			if logger.publishAck(uint64(i), 3*i+1) {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	timeout := time.After(time.Minute)
	for i := 1; i <= n; i++ {
		next <- i
		for {
			pe.askWake()
			_, epoch, to, ok := pe.ack()
			if ok {
				require.Equal(t, 3*int(epoch)+1, to, "a torn acknowledgement")
				require.LessOrEqual(t, epoch, uint64(i))
				if epoch == uint64(i) {
					break
				}
			}
			select {
			case <-wake:
			case <-timeout:
				t.Fatalf("acknowledgement %d published, the PE neither saw it nor was woken", i)
			}
		}
	}
	close(next)
	<-done
}

// A logger maps only a sealed ring of the size announced.
func TestDumpRingRefused(t *testing.T) {
	offer := func(t *testing.T, seal bool, size, announced int) error {
		peEnd, loggerEnd := unixPair(t)
		fd, err := unix.MemfdCreate("test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		require.NoError(t, err)
		defer unix.Close(fd)
		require.NoError(t, unix.Ftruncate(fd, int64(size)))
		if seal {
			_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
			require.NoError(t, err)
		}
		var h [dumpHeaderSize]byte
		h[0] = dumpKindRingOffer
		h[17], h[18], h[19] = byte(announced), byte(announced>>8), byte(announced>>16)
		_, _, err = peEnd.WriteMsgUnix(h[:], unix.UnixRights(fd), nil)
		require.NoError(t, err)
		r, err := acceptOffer(t, loggerEnd)
		r.unmap()
		return err
	}
	require.NoError(t, offer(t, true, dumpRingSize, dumpRingSize))
	require.ErrorContains(t, offer(t, false, dumpRingSize, dumpRingSize), "not sealed")
	require.ErrorContains(t, offer(t, true, dumpRingSize, dumpRingSize+4096), "announced")
	require.ErrorContains(t, offer(t, true, 4096, 4096), "a ring of")
}

// A PE on its logger's host dumps through the ring: a dump encoded there
// (DumpBuffer) and one copied there go as their headers alone, one
// before an encoded one through the socket; the logger stores them all
// and answers a fetch with them; only the buffers of the others come back
// to the PE (the encoded one is the ring's).
func TestDumpThroughSharedMemory(t *testing.T) {
	srv, c, got := dumpPair(t)
	first := dumpOf(t, 0, 3, 0, 4)
	c.Dump(first) // dials
	k := c.links[0]
	waitFor(t, "the link up", k.pollable.Load)
	k.mu.Lock()
	hasRing := k.ring != nil
	k.mu.Unlock()
	require.True(t, hasRing, "a ring on the logger's host")
	var acks []scheduler.DumpAcked
	waitFor(t, "the first acknowledged", func() bool {
		acks = c.TakeDumpAcks(acks)
		return len(acks) > 0 && acks[len(acks)-1].To == first.To
	})
	copied := dumpOf(t, 0, 3, first.To, 30)
	encoded := dumpOf(t, 0, 3, copied.To, 50)
	buf := c.DumpBuffer(0, len(encoded.Payload)+100)
	require.NotNil(t, buf)
	require.Zero(t, len(buf))
	encodedPayload := append(buf, encoded.Payload...)
	require.Equal(t, &buf[:1][0], &encodedPayload[0], "encoded in place")
	// The first goes through the socket (placed after the second, it
	// would be consumed before it), the third is copied into the ring.
	last := dumpOf(t, 0, 3, encoded.To, 20)
	c.DumpAll([]logging.DumpBatch{copied, {Logger: 0, Epoch: 3, From: encoded.From, To: encoded.To, Payload: encodedPayload}, last})
	waitFor(t, "all acknowledged", func() bool {
		acks = c.TakeDumpAcks(acks)
		return acks[len(acks)-1].To == last.To
	})
	require.Equal(t, len(first.Payload)+len(copied.Payload)+len(encoded.Payload)+len(last.Payload), srv.store.held())
	back, err := c.Fetch(0, 3, copied.From, last.To)
	require.NoError(t, err)
	require.Equal(t, slices.Concat(copied.Payload, encoded.Payload, last.Payload), back)
	waitFor(t, "the buffers given back", func() bool { return len(got.sentBack()) == 3 })
	for _, b := range got.sentBack() {
		require.False(t, bytes.Equal(b, encodedPayload) && &b[0] == &encodedPayload[0], "the ring's memory given back")
	}
	k.mu.Lock()
	consumed := *k.ring.consumed()
	k.mu.Unlock()
	require.Positive(t, consumed, "the logger copied out of the ring")
}

// On the logger's host the PE reads its acknowledgements in the ring's
// page; the logger writes one on the socket only when the PE's reader
// goroutine asked for it before it waited, and that wakes the reader,
// which tells the PE (a PE idle or blocked for room).
func TestDumpRingWakesAWaitingPE(t *testing.T) {
	srv, c, got := dumpPair(t)
	first := dumpOf(t, 0, 3, 0, 4)
	c.Dump(first) // dials
	k := c.links[0]
	waitFor(t, "the link up", k.ringAcks.Load)
	var acks []scheduler.DumpAcked
	waitFor(t, "the first acknowledged", func() bool {
		acks = c.TakeDumpAcks(acks)
		return len(acks) > 0 && acks[len(acks)-1].To == first.To
	})
	at := first.To
	for i := range 5 {
		// The PE does not read the page: only the socket's wake-up
		// can tell it.
		before := len(got.all())
		d := dumpOf(t, 0, 3, at, 3+i)
		at = d.To
		c.Dump(d)
		waitFor(t, "told of the acknowledgement", func() bool { return len(got.all()) > before })
		require.IsType(t, scheduler.DumpAcksPending{}, got.all()[before])
		acks = c.TakeDumpAcks(acks[:0])
		require.Equal(t, scheduler.DumpAcked{Logger: 0, Epoch: 3, To: d.To}, acks[len(acks)-1])
		require.False(t, k.unacked.Load())
	}
	require.Positive(t, srv.store.held())
}

// A dump placed in the ring is handed over: the PE acknowledges it at
// once, without the logger, and tells the logger of the dumps handed
// over together, once they fill half of the ring or before anything
// else goes on the connection (a fetch gets them all back); the logger
// acknowledges none of them. Behind a dump through the socket, whose
// acknowledgement is the logger's, no dump is handed over until that
// acknowledgement comes.
func TestDumpsHandedOverInTheRing(t *testing.T) {
	srv, c, got := dumpPair(t)
	first := dumpOf(t, 0, 3, 0, 4)
	c.Dump(first) // dials: through the socket, no ring yet
	k := c.links[0]
	waitFor(t, "the link up", k.ringAcks.Load)
	var acks []scheduler.DumpAcked
	waitFor(t, "the first acknowledged by the logger", func() bool {
		acks = c.TakeDumpAcks(acks[:0])
		return len(acks) > 0 && acks[len(acks)-1].To == first.To
	})
	held := len(first.Payload)
	require.Equal(t, held, srv.store.held())

	// Small dumps: each acknowledged at once, none told yet.
	at := first.To
	var handed [][]byte
	for i := range 5 {
		before := len(got.all())
		d := dumpOf(t, 0, 3, at, 10+i)
		at = d.To
		c.Dump(d)
		handed = append(handed, d.Payload)
		acks = c.TakeDumpAcks(acks[:0])
		require.Equal(t, []scheduler.DumpAcked{{Logger: 0, Epoch: 3, To: d.To}}, acks, "acknowledged by the PE")
		require.IsType(t, scheduler.DumpAcksPending{}, got.all()[before], "a PE that waits is told")
		require.False(t, k.unacked.Load())
	}
	k.mu.Lock()
	untold := k.untoldBytes
	k.mu.Unlock()
	require.Equal(t, len(slices.Concat(handed...)), untold)
	require.Equal(t, held, srv.store.held(), "the logger not told yet")
	// A fetch tells the logger first.
	back, err := c.Fetch(0, 3, first.To, at)
	require.NoError(t, err)
	require.Equal(t, slices.Concat(handed...), back)
	held += len(back)
	require.Equal(t, held, srv.store.held())

	// Dumps past half of the ring: the logger is told of them
	// without a fetch.
	for untold = 0; untold < dumpRingTell; {
		d := dumpOf(t, 0, 3, at, 200)
		at = d.To
		c.Dump(d)
		untold += len(d.Payload)
		acks = c.TakeDumpAcks(acks[:0])
		require.Equal(t, []scheduler.DumpAcked{{Logger: 0, Epoch: 3, To: d.To}}, acks)
	}
	held += untold
	waitFor(t, "the logger told", func() bool { return srv.store.held() == held })

	// Behind a dump through the socket (copied, placed after one
	// encoded in the ring: it would be consumed before it), the logger
	// acknowledges.
	copied := dumpOf(t, 0, 3, at, 30)
	encoded := dumpOf(t, 0, 3, copied.To, 20)
	buf := c.DumpBuffer(0, len(encoded.Payload))
	require.NotNil(t, buf)
	c.DumpAll([]logging.DumpBatch{copied, {Logger: 0, Epoch: 3, From: encoded.From, To: encoded.To, Payload: append(buf, encoded.Payload...)}})
	waitFor(t, "the logger's acknowledgement", func() bool {
		acks = c.TakeDumpAcks(acks[:0])
		return len(acks) > 0 && acks[len(acks)-1].To == encoded.To
	})
	k.mu.Lock()
	require.False(t, k.sockUnacked)
	k.mu.Unlock()
	next := dumpOf(t, 0, 3, encoded.To, 5)
	c.Dump(next)
	acks = c.TakeDumpAcks(acks[:0])
	require.Equal(t, []scheduler.DumpAcked{{Logger: 0, Epoch: 3, To: next.To}}, acks, "handed over again")
	back, err = c.Fetch(0, 3, copied.From, next.To)
	require.NoError(t, err)
	require.Equal(t, slices.Concat(copied.Payload, encoded.Payload, next.Payload), back)
}

// A PE dials the logger it dumps to first (its rank modulo the loggers,
// or the next live one) before its first dump, so that the first dump
// finds the ring and is handed over at once, not sent through the
// socket to wait for the logger's acknowledgement; the other loggers
// are dialed at their first dump.
func TestDumpClientDialsAhead(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var addrs []string
	var srvs []*dumpServer
	for l := range 3 {
		srv, err := listenDumps(l, 5, "127.0.0.1", secret, nil, log)
		require.NoError(t, err)
		t.Cleanup(srv.close)
		srvs = append(srvs, srv)
		addrs = append(addrs, srv.addr())
	}
	addrs[1] = "" // dead before the job began: PE 4 (4 mod 3 = 1) dumps to logger 2
	got := &posted{}
	c := newDumpClient(4, addrs, secret, nil, got.post, log)
	t.Cleanup(c.close)
	c.dialAhead()
	k := c.links[2]
	waitFor(t, "the link up", k.ringAcks.Load)
	for _, l := range []int{0, 1} {
		c.links[l].mu.Lock()
		conn := c.links[l].conn
		c.links[l].mu.Unlock()
		require.Nil(t, conn, "logger %d dialed", l)
	}

	first := dumpOf(t, 2, 3, 0, 4)
	c.Dump(first)
	acks := c.TakeDumpAcks(nil)
	require.Equal(t, []scheduler.DumpAcked{{Logger: 2, Epoch: 3, To: first.To}}, acks, "handed over at once")
	require.Zero(t, srvs[2].store.held(), "the logger not told yet")
	back, err := c.Fetch(2, 3, 0, first.To)
	require.NoError(t, err)
	require.Equal(t, first.Payload, back)
	require.Equal(t, len(first.Payload), srvs[2].store.held())
}

// A PE that hands over three rings' worth of dumps, telling the logger
// at every half ring, gets them all back in order from one fetch, and
// never lets the ring overrun: the logger copies each half out while the
// PE fills the other, or, where it is behind, the dumps go through the
// socket and wait for its acknowledgement.
func TestDumpsHandedOverPastTheRing(t *testing.T) {
	srv, c, _ := dumpPair(t)
	c.dialAhead()
	k := c.links[0]
	waitFor(t, "the link up", k.ringAcks.Load)
	var all [][]byte
	var acks []scheduler.DumpAcked
	entries := dumpOf(t, 0, 3, 0, 40).Payload // about 9 KB; the logger checks their framing and count only
	at, total := 0, 0
	for total < 3*dumpRingSize {
		d := logging.DumpBatch{Logger: 0, Epoch: 3, From: at, To: at + 40, Payload: entries}
		at = d.To
		c.Dump(d)
		all = append(all, d.Payload)
		total += len(d.Payload)
		acks = c.TakeDumpAcks(acks[:0]) // as the PE after a slice
		k.mu.Lock()
		placed := k.ring.head - *k.ring.consumed()
		k.mu.Unlock()
		require.LessOrEqual(t, placed, uint64(dumpRingSize-dumpRingData), "the ring overrun")
	}
	waitFor(t, "the logger told of all but the last half ring", func() bool { return srv.store.held() > total-dumpRingTell })
	back, err := c.Fetch(0, 3, 0, at)
	require.NoError(t, err)
	require.Equal(t, slices.Concat(all...), back)
	require.Equal(t, len(back), srv.store.held())
}
