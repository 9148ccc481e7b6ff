package transport

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTransport measures, for each stack, the round trip (ping-pong)
// and one-way throughput of 64 B, 32 KiB and 256 KiB payloads between two
// endpoints in this process. gochare bench transport measures the same
// between two processes.
func BenchmarkTransport(b *testing.B) {
	logger, _ := newTestLog(b)
	secret := []byte("bench-secret")
	for _, stack := range benchStacks() {
		b.Run(stack, func(b *testing.B) {
			d, err := newBenchDriver(stack, secret, logger)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			e, err := newBenchEcho(stack, secret, logger)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if err := e.Connect(orDash(d.Addr())); err != nil {
				b.Fatal(err)
			}
			if err := d.Connect(e.Addr()); err != nil {
				b.Fatal(err)
			}
			for _, size := range []int{64, 32 << 10, 256 << 10} {
				if _, err := d.PingPong(20, size); err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("pingpong/%s", sizeName(size)), func(b *testing.B) {
					el, err := d.PingPong(b.N, size)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(el)/float64(time.Microsecond)/float64(b.N), "µs/rtt")
				})
				b.Run(fmt.Sprintf("oneway/%s", sizeName(size)), func(b *testing.B) {
					b.SetBytes(int64(size))
					el, err := d.Stream(b.N, size)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)*float64(size)/1e6/el.Seconds(), "MB/s")
					b.ReportMetric(float64(b.N)/el.Seconds(), "msg/s")
				})
			}
		})
	}
}
