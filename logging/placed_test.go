package logging

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// fakeShared is a SharedLogMemory of a few slots that never hands a slot
// out twice: a log that wrote into a chunk after giving it back would
// change bytes a logger may still read (checked against a copy taken
// when the chunk came back).
type fakeShared struct {
	mem      []byte
	slot     int
	next     int
	back     map[int][]byte // offset: the bytes when given back
	refused  int
	released int
}

func (f *fakeShared) Chunk(size int) []byte {
	if size > f.slot || (f.next+1)*f.slot > len(f.mem) {
		f.refused++
		return nil
	}
	off := f.next * f.slot
	f.next++
	return f.mem[off : off : off+f.slot]
}

func (f *fakeShared) Release(c []byte) {
	off, ok := f.Offset(c[:cap(c)])
	if !ok || int(off)%f.slot != 0 || cap(c) != f.slot {
		panic(fmt.Sprintf("a chunk given back that is not a slot (offset %d, %v)", off, ok))
	}
	if _, twice := f.back[int(off)]; twice {
		panic(fmt.Sprintf("slot %d given back twice", off))
	}
	f.back[int(off)] = bytes.Clone(f.mem[off : int(off)+f.slot])
	f.released++
}

func (f *fakeShared) Offset(b []byte) (uint64, bool) {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(f.mem)))
	if cap(b) == 0 || off >= uintptr(len(f.mem)) {
		return 0, false
	}
	return uint64(off), true
}

// untouched checks that no slot given back changed since.
func (f *fakeShared) untouched(t *testing.T) {
	t.Helper()
	for off, was := range f.back {
		require.True(t, bytes.Equal(was, f.mem[off:off+f.slot]), "slot at %d written after it was given back", off)
	}
}

// A log whose chunks are shared with its logger dumps in the placed
// form where its payloads lie in them, and each placed dump expands to
// the very bytes the same log would dump without shared memory (a
// multicast's payload once); once the shared memory has no slot free
// the log's own chunks serve and their payloads travel in the dump. The
// log never writes a chunk it gave back (after a release, or at a
// checkpoint, which gives back every shared chunk).
func TestPlacedDumps(t *testing.T) {
	if !canMap {
		t.Skip("no mapped log memory on this system")
	}
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			const quota = 256 << 10
			slot := QuotaChunk(quota)
			shared := &fakeShared{mem: make([]byte, 12*slot), slot: slot, back: map[int][]byte{}}
			plain := newEngine(kind, Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 1, LogOffHeap: true})
			placed := newEngine(kind, Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 1, LogOffHeap: true, LogShared: shared})
			engines := []*engine{plain, placed}
			for _, e := range engines {
				e.HostTask(7)
				e.HostTask(8)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var ring [][]byte // the placed dumps' buffers
			buffer := func(logger, size int) []byte {
				require.Equal(t, 0, logger)
				b := make([]byte, 0, size)
				ring = append(ring, b)
				return b
			}
			placedDumps, inline := 0, 0
			for period := range 4 {
				for r := range 150 {
					payload := make([]byte, 16+rng.IntN(5000))
					for j := range payload {
						payload[j] = byte(r*7 + j)
					}
					copies := 1 + rng.IntN(3)
					for _, e := range engines {
						ok, err := e.LogRoom()
						require.NoError(t, err)
						require.True(t, ok)
						for k := range copies {
							e.Send(TaskID(7+r%2), 0, Message{To: TaskID(20 + k), Handler: 3, Key: uint64(r), Payload: payload,
								Annotation: commutative.OrderedAnnotation()})
						}
						e.Ready()
						e.Advance()
					}
					want := plain.TakeDumps()
					got := placed.TakeDumpsPlaced(buffer, func(int) bool { return true })
					require.Len(t, got, len(want))
					for i, d := range got {
						w := want[i]
						require.Equal(t, [4]int{w.Logger, int(w.Epoch), w.From, w.To}, [4]int{d.Logger, int(d.Epoch), d.From, d.To})
						b := d.Payload
						if d.Placed {
							placedDumps++
							require.Same(t, unsafe.SliceData(ring[len(ring)-len(got)+i]), unsafe.SliceData(d.Payload), "a placed dump is in the buffer given")
							var err error
							var n int
							b, n, err = ExpandPlaced(nil, d.Payload, shared.mem)
							require.NoError(t, err)
							require.Equal(t, d.To-d.From, n)
							require.Less(t, len(d.Payload), len(b))
						} else {
							inline++
						}
						require.Equal(t, w.Payload, b, "period %d, dump [%d, %d)", period, d.From, d.To)
						for _, e := range engines {
							e.DumpAcked(d.Logger, d.Epoch, d.To)
						}
					}
					shared.untouched(t)
				}
				require.Greater(t, placed.log.released, 0)
				for _, e := range engines {
					cp := e.ExportTask(8)
					e.ImportTask(cp)
					e.Checkpoint()
				}
				require.Zero(t, len(placed.log.mem.owner.maps.held), "a checkpoint gives every shared chunk back")
				shared.untouched(t)
			}
			require.Positive(t, placedDumps)
			require.Positive(t, inline, "the log's own chunks once the shared memory ran out")
			require.Positive(t, shared.refused)
			require.Equal(t, shared.next, shared.released)
		})
	}
}

// ExpandPlaced refuses a place outside the shared memory, an unknown
// tag, a dump cut short, and one that expands to another size than it
// announces.
func TestExpandPlacedRefusesMalformed(t *testing.T) {
	shared := make([]byte, 4096)
	entry, placedOf, expanded, at := placedEntry, placedOf, placedExpanded, placedAt
	good := placedOf(expanded(100), entry(placeTagShared, 100, at(4000-100)))
	out, n, err := ExpandPlaced(nil, good, shared)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = CountDumped(out)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for name, b := range map[string][]byte{
		"outside":   placedOf(expanded(100), entry(placeTagShared, 100, at(4000))),
		"tag":       placedOf(expanded(3), entry(7, 3, []byte{1, 2, 3})),
		"cut":       placedOf(expanded(100), entry(placeTagShared, 100, at(8)[:5])),
		"short":     placedOf(expanded(3), entry(placeTagInline, 3, []byte{1, 2})),
		"size":      placedOf(expanded(100)-1, entry(placeTagShared, 100, at(0))),
		"no header": {1, 2},
	} {
		_, _, err := ExpandPlaced(nil, b, shared)
		require.ErrorIs(t, err, ErrBadDump, name)
	}
}

// placedEntry is a placed entry of tag with a payload of payloadLen
// bytes, tail after its fields (the payload's offset or its bytes).
func placedEntry(tag byte, payloadLen int, tail []byte) []byte {
	b := []byte{tag}
	b = appendDumpedFields(b, [11]uint64{1, 2, 3, 4, 5, 0, 0, 1, 0, 0, uint64(payloadLen) << 1})
	return append(b, tail...)
}

// placedOf is a placed dump of entries announcing size bytes expanded.
func placedOf(size int, entries ...[]byte) []byte {
	b := []byte{byte(size), byte(size >> 8), 0, 0}
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

// placedExpanded is the size of a placedEntry with a payload of n bytes,
// dumped.
func placedExpanded(n int) int { return len(placedEntry(0, n, nil)) - 1 + n }

// placedAt is a payload's offset in the shared memory, as placed.
func placedAt(off uint64) []byte { return []byte{byte(off), byte(off >> 8), 0, 0, 0, 0, 0, 0} }
