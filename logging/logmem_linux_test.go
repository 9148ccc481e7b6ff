package logging

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A mapped chunk is faulted in a huge page at a time as the log reaches
// it, not when it is mapped: a period that logs 1 MiB into a 4 MiB chunk
// leaves the chunk's second huge page untouched, and the log faults that
// one in, whole, once a message reaches it. A DumpMemory chunk is faulted
// in the same way, as its user fills it (DumpMemory.Fault).
func TestMappedChunkFaultsInAsTheLogReachesIt(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	defer unix.Munmap(probe)
	if err := unix.Madvise(probe, madvPopulateWrite); err != nil {
		t.Skipf("no MADV_POPULATE_WRITE here: %v", err)
	}

	l := &senderLog{mem: newLogMemory(true)}
	pageSize := os.Getpagesize()
	// resident counts the pages of c[from:to] in memory.
	resident := func(c []byte, from, to int) int {
		vec := make([]byte, (to-from)/pageSize)
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, addrOf(c[from:to:to]), uintptr(to-from), uintptr(unsafe.Pointer(&vec[0])))
		require.Zero(t, errno, "mincore")
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	payload := make([]byte, 1<<20+1000)
	for i := range payload {
		payload[i] = byte(i*13 + 1)
	}
	add := func(srn uint64) {
		l.forget()
		got, _ := l.add(Message{ID: MessageID{Sender: 1, SRN: srn}, To: 2, Payload: payload}, 1, nil)
		require.Equal(t, payload, got.Payload)
	}

	add(1)
	require.Len(t, l.chunks, 1)
	c := l.chunks[0]
	require.Equal(t, mappedChunk, cap(c))
	require.Equal(t, hugePage/pageSize, resident(c, 0, hugePage), "the huge page the log reached is faulted in whole")
	require.Zero(t, resident(c, hugePage, mappedChunk), "the huge page the log has not reached costs no memory")

	add(2) // the log reaches 2 MiB and 2000 bytes
	require.Equal(t, mappedChunk/pageSize, resident(c, 0, mappedChunk), "the second huge page is faulted in once a message reaches it")

	// A period that reuses the chunk finds it faulted in.
	l.reset()
	add(3)
	require.Same(t, &c[:1][0], &l.chunks[0][:1][0])
	require.Equal(t, mappedChunk/pageSize, resident(c, 0, mappedChunk))
	require.Equal(t, payload, l.message(0).Payload)

	// A DumpMemory chunk is faulted in as its user fills it (Fault), a
	// huge page at a time.
	dumps := NewDumpMemory()
	d := dumps.Chunk(1)
	require.Equal(t, mappedChunk, len(d))
	require.Zero(t, resident(d, 0, len(d)), "a dump chunk is not faulted in when mapped")
	require.Equal(t, hugePage, dumps.Fault(d, 0, 1000))
	require.Equal(t, hugePage/pageSize, resident(d, 0, hugePage), "the huge page reached is faulted in whole")
	require.Zero(t, resident(d, hugePage, len(d)))
	require.Equal(t, hugePage, dumps.Fault(d, hugePage, hugePage), "nothing more to fault in")
	require.Equal(t, 2*hugePage, dumps.Fault(d, hugePage, hugePage+1))
	require.Equal(t, 2*hugePage/pageSize, resident(d, 0, len(d)))
	dumps.Release(d)
}
