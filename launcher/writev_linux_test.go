package launcher

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// writevAll writes buffers in order, more than one vectored write's worth
// and empty ones included, stops where a full socket takes no more, and
// goes on from there on the next call.
func TestWritevAll(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.SetNonblock(fds[0], true))
	require.NoError(t, syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096))
	w := uintptr(fds[0]) // non-blocking, as a PE's sockets are
	r := os.NewFile(uintptr(fds[1]), "r")
	defer r.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	var bufs [][]byte
	var want []byte
	for i := range 200 {
		b := make([]byte, rng.IntN(3000)*(i%3)) // a third of them empty
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	// The reader starts after the first call, which must stop at the
	// full socket (nobody reads yet): read at once, a fast reader could
	// drain it as the writer fills it, and the test would not see a
	// partial write.
	got := make(chan []byte)
	read := func() {
		b, _ := io.ReadAll(r)
		got <- b
	}
	n, calls := 0, 0
	for n < len(want) {
		if calls == 1 {
			go read()
		}
		// What is left of bufs from byte n on, as writeBuffersNow's
		// caller passes it again after a partial write.
		var rest [][]byte
		skip := n
		for _, b := range bufs {
			if skip >= len(b) {
				skip -= len(b)
				continue
			}
			rest = append(rest, b[skip:])
			skip = 0
		}
		m := writevAll(w, rest)
		require.LessOrEqual(t, m, len(want)-n)
		if calls == 0 {
			require.Less(t, m, len(want), "the first call stops at the full socket")
		}
		n += m
		calls++
	}
	require.Greater(t, calls, 1, "the socket filled at least once")
	require.NoError(t, syscall.Close(fds[0]))
	require.True(t, bytes.Equal(want, <-got), "the bytes arrive in order, none lost or repeated")
}
