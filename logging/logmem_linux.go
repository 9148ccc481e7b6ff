//go:build linux

package logging

import (
	"syscall"
)

const canMap = true

// madvPopulateWrite is MADV_POPULATE_WRITE (not in package syscall).
const madvPopulateWrite = 23

// mapChunk maps size bytes (a multiple of hugePage) of anonymous memory
// aligned on a huge page and returns the aligned chunk and the whole
// region to unmap. With huge, it asks for huge pages and faults the
// chunk in whole; without, it asks for small pages and leaves the chunk
// to be faulted in as it is written (logMemory.fault). A size that is not
// a multiple of hugePage is mapped as it is, with small pages (a huge
// page would cost more memory than the chunk holds).
func mapChunk(size int, huge bool) (chunk, region []byte, ok bool) {
	if size%hugePage != 0 {
		region, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err != nil {
			return nil, nil, false
		}
		return region, region, true
	}
	region, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, nil, false
	}
	off := 0
	if r := addrOf(region) % hugePage; r != 0 {
		off = hugePage - int(r)
	}
	chunk = region[off : off+size : off+size]
	if !huge {
		// Small pages even where transparent huge pages are always on:
		// on a virtual machine whose host takes back the guest's free
		// memory (free page reporting), a huge page comes from a free
		// block the host took back, and writing it first costs the host's
		// faults too; small pages come mostly from smaller free blocks it
		// kept. Faulting 32 MiB in: 45-71 ms of system time with huge
		// pages, 21-27 ms with small ones (docs/benchmarks.md, "pd4").
		_ = syscall.Madvise(chunk, syscall.MADV_NOHUGEPAGE)
		return chunk, region, true
	}
	// Only advice: without transparent huge pages the chunk works with
	// small pages.
	_ = syscall.Madvise(chunk, syscall.MADV_HUGEPAGE)
	populate(chunk)
	return chunk, region, true
}

// populate faults in b's pages, in one call rather than page by page as
// the log writes them: where the kernel has no huge page to give, one
// fault per 4 KiB costs about twice as much (docs/benchmarks.md,
// "Checkpoint cost"). Only advice (Linux 5.14 and later); b starts on a
// page.
func populate(b []byte) {
	_ = syscall.Madvise(b, madvPopulateWrite)
}

// unmap unmaps a region mapChunk returned.
func unmap(region []byte) {
	if err := syscall.Munmap(region); err != nil {
		panic("logging: sender log: munmap: " + err.Error())
	}
}
