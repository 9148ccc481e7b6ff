package launcher

import (
	"encoding/binary"
	"io"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// A chunk of the shared log memory given back is not handed out again
// until every logger it may have been dumped to has consumed its ring up
// to the ring's head when it came back (the fresh slots go first, and
// then nothing), or is gone; the logger maps the memory offered with the
// ring and reads what the PE wrote there.
func TestSharedLogChunkWaitsForItsLoggers(t *testing.T) {
	const quota = 436376
	var links []*dumpLink
	var loggerRings []*dumpRing
	for range 2 {
		pe, logger := ringPair(t)
		links = append(links, &dumpLink{ring: pe})
		loggerRings = append(loggerRings, logger)
	}
	s := newSharedLog(quota, links)
	require.NotNil(t, s)
	require.Equal(t, logging.QuotaChunk(quota), s.slot)
	slots := len(s.mem) / s.slot
	require.GreaterOrEqual(t, slots*s.slot, quota+sharedLogTransit)

	require.Nil(t, s.Chunk(s.slot+1), "larger than a slot")
	c := s.Chunk(s.slot)
	require.Equal(t, 0, len(c))
	require.Equal(t, s.slot, cap(c))
	off, ok := s.Offset(c[:1])
	require.True(t, ok)
	// Dumps that name it placed in both rings, then it comes back.
	_, end0, ok := links[0].ring.alloc(100)
	require.True(t, ok)
	_, end1, ok := links[1].ring.alloc(50)
	require.True(t, ok)
	s.Release(c)
	taken := func() (offs []uint64) {
		for {
			b := s.Chunk(s.slot)
			if b == nil {
				return offs
			}
			o, ok := s.Offset(b[:1])
			require.True(t, ok)
			offs = append(offs, o)
		}
	}
	fresh := taken()
	require.Len(t, fresh, slots-1)
	require.NotContains(t, fresh, off, "a chunk handed out again before its loggers read it")
	loggerRings[0].consume(end0 - 1)
	require.Empty(t, taken())
	loggerRings[0].consume(end0)
	require.Empty(t, taken(), "logger 1 has not read its ring yet")
	loggerRings[1].consume(end1)
	require.Equal(t, []uint64{off}, taken())

	// A gone logger does not hold a chunk back; a logger with no dump
	// in its ring since the last it read neither.
	_, _, ok = links[0].ring.alloc(10)
	require.True(t, ok)
	s.Release(s.mem[fresh[0]:fresh[0]])
	require.Empty(t, taken())
	links[0].gone = io.EOF
	require.Equal(t, []uint64{fresh[0]}, taken())
}

// The log memory offered with the ring: the logger maps it (for
// reading) and sees what the PE writes there.
func TestSharedLogOfferedWithTheRing(t *testing.T) {
	peEnd, loggerEnd := unixPair(t)
	s := newSharedLog(1<<20, nil)
	require.NotNil(t, s)
	ring, err := offerDumpRing(peEnd, s)
	require.NoError(t, err)
	t.Cleanup(ring.unmap)
	rd := newRightsReader(loggerEnd)
	defer rd.close()
	var h [dumpHeaderSize]byte
	_, err = io.ReadFull(rd, h[:])
	require.NoError(t, err)
	require.Equal(t, byte(dumpKindRingOffer), h[0])
	logger, err := acceptDumpRing(rd, int(binary.LittleEndian.Uint32(h[17:])))
	require.NoError(t, err)
	t.Cleanup(logger.unmap)
	size := binary.LittleEndian.Uint64(h[1:])
	require.Equal(t, uint64(len(s.mem)), size)
	mem, err := acceptSharedLog(rd, int(size))
	require.NoError(t, err)
	defer unmapSharedLog(mem)
	c := s.Chunk(s.slot)
	c = append(c, "the payload"...)
	off, _ := s.Offset(c)
	require.Equal(t, "the payload", string(mem[off:off+uint64(len(c))]))
}

// LeanMD under a quota on real PEs with a logger on their host: the
// logs' chunks are shared with the logger and the dumps are placed
// (their payloads named, not copied); a PE SIGKILLed after its dumps
// were handed over, the survivor fetches back from the logger (which
// copied the payloads out of the survivor's log memory) what its
// restored tasks need, and the result is the failure-free run's.
func TestPlacedDumpsOnRealPEs(t *testing.T) {
	peak, want := unboundedPeak(t, quotaArgs)
	quota := peak / 10
	args := append(append([]string(nil), quotaArgs...), "--loggers", "1", "--log-quota", strconv.Itoa(quota), "--kill", "pe=1,at=step:18")
	j := startJob(t, args...)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 .*killed by signal 9`), time.Second)
	st := j.quotaStats(t)
	require.Positive(t, st[0].fetched, j.output())
	m := j.waitLine(t, sharedLogLine, time.Second)
	require.Equal(t, "0", m[1])
	placed, _ := strconv.Atoi(m[5])
	reused, _ := strconv.Atoi(m[3])
	require.Positive(t, placed, "dumps placed")
	require.Positive(t, reused, "slots handed out again")
}

// A placed dump that announces more than a dump may hold (maxDump) is
// refused before the logger's store takes a buffer of that size, and
// the ring is not marked consumed past it.
func TestPlacedDumpTooLargeIsRefused(t *testing.T) {
	pe, logger := ringPair(t)
	b, end, ok := pe.alloc(16)
	require.True(t, ok)
	binary.LittleEndian.PutUint32(b[:4], maxDump+1)
	s := &dumpServer{}
	_, _, err := s.expandPlaced(logger, nil, 0, 1, 16, end)
	require.ErrorIs(t, err, logging.ErrBadDump)
	require.Contains(t, err.Error(), "at most")
	require.Less(t, *logger.consumed(), end)
}
