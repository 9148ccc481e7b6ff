package launcher

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/tls"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/internal/jobtls"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// elRecords are records as a PE's protocol stamps them, a commutative
// path among them.
func elRecords(creator logging.PEID, from uint64) ([]logging.Determinant, []logging.Progress) {
	path := commutative.Child(commutative.MessageID{Sender: 9, SRN: 4}, 2)
	dets := []logging.Determinant{
		{Message: commutative.MessageID{Sender: 3, SRN: 7}, Receiver: 5, RSN: 1, Creator: creator, Seq: from},
		{Message: commutative.MessageID{Sender: 4, SRN: 1, CPI: path}, Receiver: 5, RSN: 2, Creator: creator, Seq: from + 1},
	}
	prog := []logging.Progress{{Task: 5, RSN: 2, Creator: creator, Seq: from + 2}}
	return dets, prog
}

// Records, fetches and answers cross the wire as they were; a frame cut
// short, with a count beyond it, trailing bytes or a bad path is an
// error, not a guess.
func TestEventLogFrames(t *testing.T) {
	dets, prog := elRecords(2, 1)
	var w elWriter
	at := w.begin(elKindRecords)
	w.u64(7)
	w.records(dets, prog)
	w.end(at)
	kind, body, err := readEventLogFrame(bufio.NewReader(bytes.NewReader(w.b)), nil)
	require.NoError(t, err)
	require.Equal(t, byte(elKindRecords), kind)
	r := elReader{b: body}
	require.Equal(t, uint64(7), r.u64())
	gotDets, gotProg := r.records()
	require.NoError(t, r.done())
	require.Equal(t, dets, gotDets)
	require.Equal(t, prog, gotProg)

	for name, b := range map[string][]byte{
		"cut short":      body[:len(body)-3],
		"trailing bytes": append(append([]byte(nil), body...), 1),
		"count beyond":   append(append(append([]byte(nil), body[:8]...), 0xff, 0xff, 0, 0), body[12:]...),
	} {
		r := elReader{b: b}
		r.u64()
		r.records()
		require.ErrorIs(t, r.done(), errEventLogFrame, name)
	}
	bad := append([]byte(nil), body...)
	// The second determinant's path starts after the first determinant
	// and the second's sender and SRN; make its first varint endless.
	off := 8 + 8 + elDeterminantMin + 8 + 8 + 4
	for i := range dets[1].Message.CPI.Len() {
		bad[off+i] = 0xff
	}
	r = elReader{b: bad}
	r.u64()
	r.records()
	require.ErrorIs(t, r.done(), errEventLogFrame, "a path that does not parse")

	_, _, err = readEventLogFrame(bufio.NewReader(bytes.NewReader([]byte{elKindRecords, 0xff, 0xff, 0xff, 0xff})), nil)
	require.ErrorIs(t, err, errEventLogFrame, "a frame beyond the bound")
}

// requireAcks takes c's acknowledgements until the latest of each
// creator are want (sorted by creator), and none beyond. Over a socket
// the reader goroutine gets the first (TakeAcks, which would read them
// itself, is not called before) and tells the PE; from the logger's
// board (a Unix socket) TakeAcks reads them.
func requireAcks(t *testing.T, c *eventLogClient, p *posted, want ...logging.EventLogAck) {
	t.Helper()
	waitFor(t, "acknowledgements read, or a board", func() bool { return c.pending.Load() || c.links[0].board.Load() != nil })
	board := c.links[0].board.Load() != nil
	latest := map[logging.PEID]logging.EventLogAck{}
	var got []logging.EventLogAck
	waitFor(t, "acknowledgements", func() bool {
		for _, a := range c.TakeAcks(nil) {
			if cur, ok := latest[a.Creator]; !ok || cur.UpTo < a.UpTo {
				latest[a.Creator] = a
			}
		}
		got = sortedAcks(slices.Collect(maps.Values(latest)))
		return slices.Equal(got, want)
	})
	require.Equal(t, want, got)
	if !board {
		require.Contains(t, p.all(), scheduler.EventLogAcksPending{})
	}
}

// sortedAcks sorts acknowledgements by creator.
func sortedAcks(acks []logging.EventLogAck) []logging.EventLogAck {
	slices.SortFunc(acks, func(a, b logging.EventLogAck) int { return cmp.Compare(a.Creator, b.Creator) })
	return acks
}

func answersOf(p *posted) []scheduler.EventLogAnswer {
	var out []scheduler.EventLogAnswer
	for _, ev := range p.all() {
		if a, ok := ev.(scheduler.EventLogAnswer); ok {
			out = append(out, a)
		}
	}
	return out
}

func lostOf(p *posted) []scheduler.LoggerLost {
	var out []scheduler.LoggerLost
	for _, ev := range p.all() {
		if a, ok := ev.(scheduler.LoggerLost); ok {
			out = append(out, a)
		}
	}
	return out
}

// A PE's records reach the logger over the authenticated stream (plain
// and TLS), and is acknowledged in reply: to the PE with every other
// creator's acknowledgement it has not had, to the PEs that send no
// batch there, and to a PE that connects later; a fetch names the failed PEs, whose later
// batches the logger drops, and is answered with the task's records; a
// stranger is refused; a logger that goes away is reported lost and the
// fetches due to it are answered empty.
func TestEventLogStream(t *testing.T) {
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
			srv, err := listenDumps(0, 3, "127.0.0.1", secret, cfg, log)
			require.NoError(t, err)
			defer srv.close()
			var got0, got1 posted
			c0 := newEventLogClient(0, []string{srv.addr()}, secret, cfg, got0.post, log)
			defer c0.close()
			c1 := newEventLogClient(1, []string{srv.addr()}, secret, cfg, got1.post, log)
			defer c1.close()
			dets, prog := elRecords(0, 1)
			c0.Log(logging.EventLogBatch{Logger: 0, Epoch: 4, Creator: 0, Determinants: dets, Progress: prog})
			want := logging.EventLogAck{Logger: 0, Epoch: 4, Creator: 0, UpTo: 3}
			requireAcks(t, c0, &got0, want)
			// PE 1, which sent no batch here (with several loggers it
			// may send them to another), hears of PE 0's records too.
			requireAcks(t, c1, &got1, want)
			if localLoggerAddr(srv.addr()) != "" {
				srv.events.mu.Lock()
				nc := srv.events.peers[0].nc
				srv.events.mu.Unlock()
				if tc, ok := nc.(*tls.Conn); ok {
					nc = tc.NetConn()
				}
				require.IsType(t, (*net.UnixConn)(nil), nc, "a PE on the logger's host connects through its Unix socket")
				if cfg == nil {
					require.NotNil(t, c0.links[0].board.Load(), "and reads the logger's acknowledgement board")
				}
			}
			// PE 1's own batch is acknowledged in reply.
			c1.Log(logging.EventLogBatch{Logger: 0, Epoch: 4, Creator: 1, Determinants: []logging.Determinant{
				{Message: commutative.MessageID{Sender: 5, SRN: 1}, Receiver: 7, RSN: 1, Creator: 1, Seq: 1}}})
			want1 := logging.EventLogAck{Logger: 0, Epoch: 4, Creator: 1, UpTo: 1}
			requireAcks(t, c1, &got1, want1)
			require.Empty(t, c1.TakeAcks(nil), "taken once")
			// PE 0 hears of PE 1's in the reply to its next batch; a reply
			// carries what the PE has not had only.
			more, _ := elRecords(0, 4)
			c0.Log(logging.EventLogBatch{Logger: 0, Epoch: 4, Creator: 0, Determinants: more[:1]})
			want = logging.EventLogAck{Logger: 0, Epoch: 4, Creator: 0, UpTo: 4}
			requireAcks(t, c0, &got0, want, want1)
			// A PE that connects now gets what was acknowledged.
			var got2 posted
			c2 := newEventLogClient(2, []string{srv.addr()}, secret, cfg, got2.post, log)
			defer c2.close()
			requireAcks(t, c2, &got2, want, want1)

			// PE 0 failed: PE 1 fetches its task 5, which closes PE 0's
			// stream; what PE 0 sends after is dropped.
			c1.Fetch(logging.EventLogFetch{Logger: 0, PE: 1, Epoch: 4, Recovery: 1, Tasks: []logging.TaskID{5, 6}, Failed: []logging.PEID{0}})
			waitFor(t, "the answer", func() bool { return len(answersOf(&got1)) > 0 })
			ans := answersOf(&got1)[0]
			require.Equal(t, 0, ans.Logger)
			require.Len(t, ans.Envelopes, 2)
			e := ans.Envelopes[0]
			require.Equal(t, logging.Envelope{Kind: logging.EnvelopeRecovery, From: logging.LoggerPE(0), To: 1, Task: 5, Epoch: 1,
				Determinants: dets, Progress: prog}, e)
			require.Empty(t, ans.Envelopes[1].Determinants, "nothing held of task 6")
			late, _ := elRecords(0, 4)
			c0.Log(logging.EventLogBatch{Logger: 0, Epoch: 4, Creator: 0, Determinants: late})
			waitFor(t, "the failed PE's batch dropped", func() bool { return srv.events.stats().Stale == 1 })
			for _, a := range c1.TakeAcks(nil) {
				require.LessOrEqual(t, a.UpTo, want.UpTo, "no acknowledgement of a failed PE's batch")
			}

			// A PE with the wrong secret is refused, and the logger says so.
			var bad posted
			stranger := newEventLogClient(1, []string{srv.addr()}, []byte("not the secret, not the secret.."), cfg, bad.post, log)
			defer stranger.close()
			waitFor(t, "the stranger's loss of the logger", func() bool { return len(lostOf(&bad)) > 0 })
			require.ErrorIs(t, lostOf(&bad)[0].Why, errDumpRefused)
			waitFor(t, "the refusal in the logger's log", func() bool { return strings.Contains(logBuf.String(), "does not know the job secret") })

			// A logger that breaks the format with a fetch due (one with
			// no Unix socket: the PE connects over TCP): the PE takes it
			// for lost, and the fetch is answered empty; a fetch
			// after is answered empty at once.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				c, _, _, err := acceptLoggerConn(nc, cfg, secret, 0, 3, eventLogStream)
				if err != nil {
					nc.Close()
					return
				}
				accepted <- c
			}()
			var got3 posted
			c3 := newEventLogClient(2, []string{ln.Addr().String()}, secret, cfg, got3.post, log)
			defer c3.close()
			fake := <-accepted
			defer fake.Close()
			c3.Fetch(logging.EventLogFetch{Logger: 0, PE: 2, Epoch: 4, Recovery: 2, Tasks: []logging.TaskID{5}, Failed: []logging.PEID{0, 1}})
			kind, body, err := readEventLogFrame(bufio.NewReader(fake), nil)
			require.NoError(t, err)
			require.Equal(t, byte(elKindFetch), kind)
			fr := elReader{b: body}
			require.Equal(t, uint64(4), fr.u64())
			require.Equal(t, uint32(2), fr.u32())
			require.Equal(t, 2, fr.count(4), "the failed PEs travel with the fetch")
			_, err = fake.Write([]byte{9, 0, 0, 0, 0})
			require.NoError(t, err)
			waitFor(t, "the loss of the logger", func() bool { return len(lostOf(&got3)) > 0 })
			require.ErrorIs(t, lostOf(&got3)[0].Why, errEventLogFrame)
			waitFor(t, "the fetch answered", func() bool { return len(answersOf(&got3)) > 0 })
			c3.Fetch(logging.EventLogFetch{Logger: 0, PE: 2, Epoch: 4, Recovery: 3, Tasks: []logging.TaskID{5}})
			waitFor(t, "the second fetch answered", func() bool { return len(answersOf(&got3)) == 2 })
			for _, a := range answersOf(&got3) {
				require.Equal(t, scheduler.EventLogAnswer{Logger: 0}, a)
			}
		})
	}
}
