//go:build unix

package scheduler

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time of this process so far:
// on a loaded machine a benchmark's CPU time per operation says what the
// code costs, where its wall time mostly says how long it waited.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
