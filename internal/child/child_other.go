//go:build unix && !linux

package child

import "syscall"

// Attr returns the attributes of a child process in its own process
// group. This system cannot have the child killed when its parent dies:
// a killed launcher may leave its children running.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
