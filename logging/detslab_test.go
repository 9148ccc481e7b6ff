package logging

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The determinant slab gives distinct records across chunks, keeps each
// record's holders apart from its neighbours' even when they spill past
// the inline ones, and after a reset hands out zeroed records again
// without allocating.
func TestDetSlabRecords(t *testing.T) {
	var s detSlab
	n := 2*detSlabChunk + 3
	recs := make([]*storedDeterminant, n)
	for i := range n {
		d := Determinant{Receiver: TaskID(i), RSN: uint64(i)}
		recs[i], _ = s.get(d, i%2 == 0, PEID(i), PEID(i+1))
	}
	for i, r := range recs {
		// Spill every third record past its inline holders.
		if i%3 == 0 {
			for h := range 5 {
				r.holders = append(r.holders, PEID(100+h))
			}
		}
	}
	for i, r := range recs {
		require.Equal(t, TaskID(i), r.determinant.Receiver)
		require.Equal(t, i%2 == 0, r.createdHere)
		want := []PEID{PEID(i), PEID(i + 1)}
		if i%3 == 0 {
			want = append(want, 100, 101, 102, 103, 104)
		}
		require.Equal(t, want, r.holders, "record %d", i)
	}
	s.reset()
	allocs := testing.AllocsPerRun(1, func() {
		for i := range n {
			r, _ := s.get(Determinant{RSN: uint64(i)}, false, 7)
			if r.createdHere || len(r.holders) != 1 || r.holders[0] != 7 || cap(r.holders) != len(r.inline) {
				t.Fatalf("record %d after reset: %+v", i, r)
			}
		}
		s.reset()
	})
	require.Zero(t, allocs, "a reset slab allocates nothing for as many records as it held")
}

// record returns the record at k, nil if none.
func (s *determinantStore) record(k determinantKey) *storedDeterminant {
	d, _ := s.get(k)
	return d
}
