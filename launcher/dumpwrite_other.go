//go:build !linux

package launcher

import "syscall"

// writeBuffersNow is not called on this system (rawConnOf gives no
// socket).
func writeBuffersNow(syscall.RawConn, [][]byte) int { return 0 }

// moreToRead is not called on this system (rawConnOf gives no socket).
func moreToRead(syscall.RawConn) bool { return false }
