package logging

import "unsafe"

// Where the determinant store's arrays live. They grow with the
// determinants held since the checkpoint (on LeanMD at 4 PEs FullDet
// holds every determinant of the job on every PE: ~12 MiB of records, and
// the per-task arrays and the unstable list besides), and on the
// heap they counted in the collector's goal as the sender log did
// (logmem.go): the heap grew by twice what they hold, and the PE's
// short-lived allocations kept landing on memory fresh from the kernel
// (docs/benchmarks.md, "fd5 (2026-11-28)": FullDet's PEs took twice the
// page faults of None's). With Config.LogOffHeap the arrays are cut from
// chunks the store maps itself (logMemory: huge pages, unmapped when the
// Protocol is garbage); without, they are ordinary allocations.
//
// Only pointer-free element types go there, and nothing outside the
// Protocol keeps a slice of them (the same condition as the sender log's
// chunks).

// detArena hands out arrays from mapped chunks, or from the heap when
// its memory is the heap's (the zero value).
type detArena struct {
	mem logMemory
	// free is the unused rest of the current chunk.
	free []byte
}

// newDetArena returns an arena that maps its chunks if offHeap, one huge
// page at a time (the last one is faulted in whole, used or not: the
// sender log's 4 MiB would leave 2 MiB unused on average).
func newDetArena(offHeap bool) detArena {
	a := detArena{mem: newLogMemory(offHeap)}
	if a.mapped() {
		a.mem.size = hugePage
	}
	return a
}

// mapped reports whether the arena cuts arrays from mapped memory.
func (a *detArena) mapped() bool { return a.mem.owner != nil }

// bytes returns n bytes, 8-byte aligned, from the current chunk or a new
// one. An array's space is not given back before the Protocol goes: the
// callers grow their arrays by doubling and keep them across
// checkpoints, so the space left behind is at most what they hold.
func (a *detArena) bytes(n int) []byte {
	n = (n + 7) &^ 7
	if n > cap(a.free) {
		a.free = a.mem.chunk(n)[:0]
	}
	b := a.free[:n:n]
	a.free = a.free[n:n:cap(a.free)]
	return b
}

// arenaMake returns an array of n zero Ts (a pointer-free type) of
// length 0 and capacity n, from a, or from the heap if a's memory is.
func arenaMake[T any](a *detArena, n int) []T {
	if !a.mapped() || n == 0 {
		return make([]T, 0, n)
	}
	var zero T
	b := a.bytes(n * int(unsafe.Sizeof(zero)))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0]
}

// arenaAppend is append(s, v) with s's new array, when it needs one,
// from a (twice its capacity, at least minCap).
func arenaAppend[T any](a *detArena, s []T, v T, minCap int) []T {
	if len(s) == cap(s) {
		grown := arenaMake[T](a, max(2*cap(s), minCap))
		s = append(grown, s...)
	}
	return append(s, v)
}

// detUnstableMin is the smallest capacity of the engine's unstable list.
const detUnstableMin = 1024
