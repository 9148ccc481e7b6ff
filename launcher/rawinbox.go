package launcher

import "slices"

// rawInbox holds what a logger stream's raw socket gave and its frames
// have not taken yet (in[at:]), for the reader goroutine or the PE's
// polls, whichever holds the link's read lock (dumpClient.readRaw,
// eventLogClient.readRaw).
type rawInbox struct {
	in []byte
	at int
}

// fill reads what socket fd holds without waiting, after making room:
// it drops what was taken, moves the rest to the front, or grows the
// buffer by at least grow bytes. It returns how many bytes came (0 when
// the socket held nothing), io.EOF once the peer closed its side.
func (b *rawInbox) fill(fd uintptr, grow int) (int, error) {
	if b.at > 0 && b.at == len(b.in) {
		b.in, b.at = b.in[:0], 0
	}
	if len(b.in) == cap(b.in) {
		if b.at > 0 {
			b.in = b.in[:copy(b.in, b.in[b.at:])]
			b.at = 0
		} else {
			b.in = slices.Grow(b.in, max(grow, cap(b.in)))
		}
	}
	n, err := readNow(fd, b.in[len(b.in):cap(b.in)])
	b.in = b.in[:len(b.in)+n]
	return n, err
}

// pending is what the frames have not taken yet.
func (b *rawInbox) pending() []byte { return b.in[b.at:] }

// take marks the next n pending bytes taken.
func (b *rawInbox) take(n int) { b.at += n }

// await makes room for a frame of n bytes whose start is pending, so
// that the next fills can complete it.
func (b *rawInbox) await(n int) {
	if n > cap(b.in)-b.at {
		b.in = slices.Grow(b.in, n-(cap(b.in)-b.at))
	}
}
