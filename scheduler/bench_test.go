package scheduler_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// BenchmarkMessageRate measures the scheduler's message rate with 1k and
// 100k tasks per PE, PEs in this process (no network).
func BenchmarkMessageRate(b *testing.B) {
	for _, tasks := range []int{1000, 100000} {
		for _, pes := range []int{1, 2} {
			b.Run(fmt.Sprintf("tasks=%d/pe/pes=%d", tasks, pes), func(b *testing.B) {
				hops := 2_000_000 / tasks
				var total time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					res, err := inprocess.Run(context.Background(), scheduler.RateApp(tasks*pes, hops), nil, pes, nil)
					total += time.Since(t0)
					if err != nil || res.Status != 0 {
						b.Fatal(err, res.Status)
					}
				}
				msgs := float64(tasks*pes*(hops+1)) * float64(b.N)
				b.ReportMetric(msgs/total.Seconds()/1e6, "Mmsg/s")
			})
		}
	}
}

// BenchmarkAllocsPerMessage reports the heap allocations and bytes per
// delivered message of a whole in-process stencil3d job on two PEs (send,
// log, transport, receive, and the application's own encoding, decoding
// and computing), per protocol: what the forward path costs the garbage
// collector beyond checkpoint/restart. allocs/msg and B/msg are the whole
// job's, set-up included (40 iterations); steady-allocs/msg and
// steady-B/msg are those of the messages of iterations 41 to 80 alone:
// the difference between a job of 80 iterations and one of 40, per
// message more.
func BenchmarkAllocsPerMessage(b *testing.B) {
	run := func(b *testing.B, kind logging.Kind, iterations int) (mallocs, bytes, msgs uint64) {
		args := []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", fmt.Sprint(iterations)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := inprocess.Run(context.Background(), stencil3d.App, args, 2, nil, inprocess.WithProtocol(kind))
		runtime.ReadMemStats(&after)
		if err != nil || res.Status != 0 {
			b.Fatal(err, res.Status)
		}
		for _, s := range res.Stats {
			msgs += s.Delivered
		}
		return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc, msgs
	}
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		b.Run(kind.String(), func(b *testing.B) {
			var mallocs, bytes, msgs, longMallocs, longBytes, longMsgs uint64
			for i := 0; i < b.N; i++ {
				m, by, n := run(b, kind, 40)
				mallocs, bytes, msgs = mallocs+m, bytes+by, msgs+n
				m, by, n = run(b, kind, 80)
				longMallocs, longBytes, longMsgs = longMallocs+m, longBytes+by, longMsgs+n
			}
			b.ReportMetric(float64(mallocs)/float64(msgs), "allocs/msg")
			b.ReportMetric(float64(bytes)/float64(msgs), "B/msg")
			more := float64(longMsgs) - float64(msgs)
			b.ReportMetric((float64(longMallocs)-float64(mallocs))/more, "steady-allocs/msg")
			b.ReportMetric((float64(longBytes)-float64(bytes))/more, "steady-B/msg")
		})
	}
}
