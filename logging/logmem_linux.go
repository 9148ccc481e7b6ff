//go:build linux

package logging

import (
	"syscall"
)

const canMap = true

// madvPopulateWrite is MADV_POPULATE_WRITE (not in package syscall).
const madvPopulateWrite = 23

// mapChunk maps size bytes (a multiple of hugePage) of anonymous memory
// aligned on a huge page, asks for huge pages, and returns the aligned
// chunk and the whole region to unmap. With faultIn it faults the chunk
// in whole; without, the chunk is faulted in as it is written
// (logMemory.fault). A size that is not a multiple of hugePage is mapped
// as it is, with small pages (a huge page would cost more memory than the
// chunk holds).
func mapChunk(size int, faultIn bool) (chunk, region []byte, ok bool) {
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
	// Only advice: without transparent huge pages the chunk works with
	// small pages.
	_ = syscall.Madvise(chunk, syscall.MADV_HUGEPAGE)
	if faultIn {
		populate(chunk)
	}
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
