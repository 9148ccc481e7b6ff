package child

import "syscall"

// Attr returns the attributes of a child process in its own process
// group, which the kernel kills when the process that started it dies
// (so a killed launcher leaves no orphans).
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
