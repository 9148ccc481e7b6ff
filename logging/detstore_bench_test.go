package logging

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStoreReceived stores determinants arriving at one PE of four
// as they do on LeanMD at 4 PEs: ~400 receivers, envelopes of 40
// determinants of receivers drawn at random, each determinant arriving
// twice (from its creator, then relayed by a third PE, one envelope
// later), and between envelopes a write over 2 MiB, as a run of the
// kernels evicts the caches. It reports the time per arrival, the
// eviction left out; every 150,000 determinants a checkpoint empties the
// store, as the default policy does.
func BenchmarkStoreReceived(b *testing.B) {
	const (
		tasks    = 400
		perEnv   = 40
		perReset = 150_000
	)
	e := newEngine(KindFullDet, Config{PE: 0, PEs: 4})
	rng := rand.New(rand.NewPCG(1, 2))
	evict := make([]byte, 2<<20)
	next := make([]uint64, tasks)
	srn := uint64(0)
	fresh := make([]Determinant, perEnv)
	var relayed []Determinant
	stored := 0
	newEnvelope := func() {
		for i := range fresh {
			task := rng.IntN(tasks)
			next[task]++
			srn++
			fresh[i] = Determinant{
				Message:  MessageID{Sender: TaskID(1<<48 | uint64(rng.IntN(tasks))), SRN: srn},
				Receiver: TaskID(1<<48 | uint64(task)),
				RSN:      next[task],
			}
		}
	}
	newEnvelope()
	b.ResetTimer()
	for range b.N {
		e.storeReceived(fresh, 1)
		e.storeReceived(relayed, 2)
		b.StopTimer()
		relayed = append(relayed[:0], fresh...)
		if stored += perEnv; stored >= perReset {
			e.Checkpoint()
			clear(next)
			relayed = relayed[:0]
			stored = 0
		}
		newEnvelope()
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*perEnv), "ns/arrival")
}
