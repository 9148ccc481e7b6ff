package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gochare/gochare/job/inprocess"
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
