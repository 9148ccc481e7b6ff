package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
)

// rateApp: tasks tasks, each passes a token hops times along the ring; the
// job ends by quiescence detection. tasks*hops messages in all.
func rateApp(tasks, hops int) actor.App {
	return actor.App{Name: "rate", Define: func(j *actor.Job, args []string) error {
		mains := actor.NewCollection(j, "main", actor.Shape{1}, actor.BlockMap, func(actor.Index) *mainTask { return &mainTask{} })
		ring := actor.NewCollection(j, "ring", actor.Shape{tasks}, actor.BlockMap, func(actor.Index) *worker { return &worker{} })
		var pass *actor.Proxy[*testmsg.Num]
		pass = actor.Handle(ring, "pass", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *testmsg.Num) {
			if m.Key == 0 {
				return
			}
			pass.Send(ctx, actor.Idx((int(ctx.Index()[0])+1)%tasks), &testmsg.Num{Key: m.Key - 1})
		})
		var quiet *actor.Proxy[*actor.Quiescence]
		start := actor.Handle(mains, "start", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, m *actor.Start) {
			ctx.Expect(1)
			pass.Broadcast(ctx, &testmsg.Num{Key: uint64(hops)})
			ctx.StartQuiescence(quiet.At(actor.Idx(0)))
		}, actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
		quiet = actor.Handle(mains, "quiet", actor.AnnotateOrdered(), func(t *mainTask, ctx actor.Context, q *actor.Quiescence) {
			ctx.Exit(0)
		}, actor.KeyBy(func(*actor.Quiescence) uint64 { return 1 }))
		actor.Main(j, start, actor.Idx(0))
		return nil
	}}
}

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
					res, err := RunInProcess(context.Background(), rateApp(tasks*pes, hops), nil, pes, nil)
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
