package logging

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUnackedEnvelopesAgreesWithMap drives unackedEnvelopes with random
// sends, acknowledgements (in any order, repeated, unknown), failures and
// checkpoints, and compares what each acknowledgement takes with a map
// from number to slots.
func TestUnackedEnvelopesAgreesWithMap(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		var u unackedEnvelopes
		type sent struct {
			to    PEID
			slots []uint32
		}
		naive := map[uint64]sent{}
		next := uint32(0)
		for step := range 3000 {
			switch op := r.IntN(10); {
			case op < 5:
				from := len(u.slots)
				var slots []uint32
				for range 1 + r.IntN(4) {
					next++
					u.slots = append(u.slots, next)
					slots = append(slots, next)
				}
				to := PEID(r.IntN(4))
				n := u.add(to, from)
				naive[n] = sent{to, slots}
			case op < 9:
				n := r.Uint64N(u.last+3) + 1
				want, ok := naive[n]
				delete(naive, n)
				got := slices.Clone(u.take(n))
				u.advance()
				if !ok && got != nil || ok && !slices.Equal(got, want.slots) {
					t.Fatalf("seed %d step %d: take(%d) = %v, want %v (%v)", seed, step, n, got, want.slots, ok)
				}
			case op == 9 && r.IntN(20) == 0:
				u.reset()
				clear(naive)
			default:
				failed := PEID(r.IntN(4))
				u.dropTo(func(p PEID) bool { return p == failed })
				for n, s := range naive {
					if s.to == failed {
						delete(naive, n)
					}
				}
			}
		}
	}
}
