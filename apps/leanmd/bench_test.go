package leanmd

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// BenchmarkForwardPath runs LeanMD 3×3×3 (2-away, 1,331 tasks) at 75
// atoms per cell for 10 steps on 4 PEs in this process, once per
// protocol: the forward-path cost of each protocol on the runtime alone
// (no network). Compare the ns/op across sub-benchmarks, or on a shared
// machine the CPU time (user+system of this process) per run.
func BenchmarkForwardPath(b *testing.B) {
	args := []string{"--cells", "3,3,3", "--atoms", "75", "--steps", "10", "--json"}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		b.Run(fmt.Sprint(kind), func(b *testing.B) {
			cpu0 := cpuTime()
			batches := 0
			for i := 0; i < b.N; i++ {
				res, err := inprocess.Run(context.Background(), App, args, 4, io.Discard,
					inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(5))
				if err != nil || res.Status != 0 {
					b.Fatal(err, res.Status)
				}
				for _, st := range res.Stats {
					batches += int(st.BatchesSent)
				}
			}
			b.ReportMetric(float64(batches)/float64(b.N), "batches/op")
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecovery runs the same job as BenchmarkForwardPath for 20
// steps with a checkpoint every 10 and PE 1 killed at step 15, once per
// protocol; compare with the failure-free runs for the cost of recovery.
func BenchmarkRecovery(b *testing.B) {
	args := []string{"--cells", "3,3,3", "--atoms", "75", "--steps", "20", "--json"}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet} {
		for _, kill := range []bool{false, true} {
			b.Run(fmt.Sprintf("%v/kill=%v", kind, kill), func(b *testing.B) {
				opts := []inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(10)}
				if kill {
					opts = append(opts, inprocess.WithKill(1, 15))
				}
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					res, err := inprocess.Run(context.Background(), App, args, 4, io.Discard, opts...)
					if err != nil || res.Status != 0 {
						b.Fatal(err, res.Status)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
