package launcher

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writeBuffersNow writes as much of bufs, in order, as the socket takes
// without waiting, in vectored writes, and returns how much that was (as
// writeNow): a PE's dumps taken together go out in one system call, so
// that the logger wakes once for them.
func writeBuffersNow(raw syscall.RawConn, bufs [][]byte) int {
	n := 0
	raw.Write(func(fd uintptr) bool {
		n = writevAll(fd, bufs)
		return true // never wait
	})
	return n
}

// moreToRead reports whether socket raw holds bytes not read yet
// (SIOCINQ): a logger that has stored a dump acknowledges it only once
// it has read the dumps that came with it.
func moreToRead(raw syscall.RawConn) bool {
	n := 0
	raw.Control(func(fd uintptr) {
		_, _, errno := syscall.RawSyscall(syscall.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&n)))
		if errno != 0 {
			n = 0
		}
	})
	return n > 0
}
