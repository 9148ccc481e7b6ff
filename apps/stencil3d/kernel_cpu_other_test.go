//go:build !unix

package stencil3d

import "time"

// processCPU is not measured here; see kernel_cpu_test.go.
func processCPU() (time.Duration, bool) { return 0, false }
