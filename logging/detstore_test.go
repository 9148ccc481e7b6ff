package logging

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The determinant store agrees with a map keyed by (receiver, RSN) under
// additions in order, with gaps and out of order, and across resets: the
// same records found, the same highest RSN per task, the same records
// listed in (receiver, RSN) order; a task marked dense holds every RSN
// from its first on. Odd seeds spread over enough tasks
// (identities as the scheduler makes them, a collection in the top bits)
// for the table of tasks to grow.
func TestDeterminantStoreAgreesWithMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := newDeterminantStore()
		naive := map[determinantKey]Determinant{}
		next := map[TaskID]uint64{}
		tasks := 6
		if seed%2 == 1 {
			tasks = 400
		}
		taskOf := func(i int) TaskID { return TaskID(uint64(i%3)<<48 | uint64(i)) }
		for step := range 3000 {
			task := taskOf(rng.IntN(tasks))
			var rsn uint64
			switch op := rng.IntN(10); {
			case op < 6: // the next reception
				next[task]++
				rsn = next[task]
			case op < 8: // a gap (PartialDet)
				next[task] += 1 + uint64(rng.IntN(5))
				rsn = next[task]
			default: // out of order: an earlier position
				rsn = 1 + uint64(rng.IntN(int(next[task])+3))
			}
			k := determinantKey{task, rsn}
			if _, ok := naive[k]; !ok {
				d := Determinant{Message: MessageID{Sender: task + 100, SRN: uint64(step)}, Receiver: task, RSN: rsn}
				naive[k] = d
				r, _ := s.add(s.of(d.Receiver), d, 1)
				require.Equal(t, d, s.determinant(r))
				next[task] = max(next[task], rsn)
			}
			probe := determinantKey{taskOf(rng.IntN(tasks + 1)), uint64(rng.IntN(int(next[task]) + 4))}
			want, wok := naive[probe]
			got, gok := s.get(probe)
			require.Equal(t, wok, gok, "seed %d step %d %v", seed, step, probe)
			if wok {
				require.Equal(t, want, s.determinant(got))
			}
			if step%500 == 499 {
				var keys []determinantKey
				last := map[TaskID]uint64{}
				for k := range naive {
					keys = append(keys, k)
					last[k.receiver] = max(last[k.receiver], k.rsn)
				}
				slices.SortFunc(keys, func(a, b determinantKey) int {
					if a.receiver != b.receiver {
						return int(a.receiver) - int(b.receiver)
					}
					return int(a.rsn) - int(b.rsn)
				})
				var listed []determinantKey
				for d := range s.all() {
					listed = append(listed, determinantKey{d.receiver, d.rsn})
				}
				require.Equal(t, keys, listed)
				require.Equal(t, len(naive), s.len())
				require.Zero(t, uintptr(unsafe.Pointer(&s.tasks[0]))%64, "the table of tasks starts a cache line")
				for _, slot := range s.tasks {
					if td := slot.t; slot.used && td.dense {
						for i, e := range td.entries {
							require.Equal(t, td.first+uint64(i), e.rsn, "seed %d step %d: task %d marked dense", seed, step, slot.task)
						}
					}
				}
				for i := range tasks + 1 {
					require.Equal(t, last[taskOf(i)], s.lastRSN(taskOf(i)))
				}
			}
			if step%1000 == 999 {
				s.reset()
				clear(naive)
				clear(next)
			}
		}
	}
}

// record returns the record at k, nil if none.
func (s *determinantStore) record(k determinantKey) *storedDeterminant {
	d, _ := s.get(k)
	return d
}
