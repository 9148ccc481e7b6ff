package logging

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// The determinant slab gives distinct records across chunks, each one
// cache line, and after a reset hands out zeroed records again without
// allocating.
func TestDetSlabRecords(t *testing.T) {
	require.Equal(t, uintptr(64), unsafe.Sizeof(storedDeterminant{}), "a record is one cache line")
	require.Equal(t, uintptr(64), unsafe.Sizeof(taskSlot{}), "a slot of the store's table of tasks is one cache line")
	e := newEngine(KindFullDet, Config{PE: 0, PEs: 4})
	require.Zero(t, uintptr(unsafe.Pointer(&e.determinants.tasks[0]))%64, "the table of tasks starts a cache line")
	var s detSlab
	n := 2*detSlabChunk + 3
	recs := make([]*storedDeterminant, n)
	for i := range n {
		r, slot := s.get()
		require.Equal(t, uint32(i), slot)
		require.Zero(t, uintptr(unsafe.Pointer(r))%64, "record %d starts a cache line", i)
		r.receiver, r.holders = TaskID(i), uint64(i)
		recs[i] = r
	}
	for i, r := range recs {
		require.Equal(t, TaskID(i), r.receiver)
		require.Equal(t, uint64(i), r.holders)
		require.Same(t, r, s.at(uint32(i)))
	}
	s.reset()
	allocs := testing.AllocsPerRun(1, func() {
		for i := range n {
			r, slot := s.get()
			if *r != (storedDeterminant{slot: slot}) || slot != uint32(i) {
				t.Fatalf("record %d after reset: %+v", i, r)
			}
			r.holders, r.carried, r.flags = 7, 7, detLogged
		}
		s.reset()
	})
	require.Zero(t, allocs, "a reset slab allocates nothing for as many records as it held")
}

// The determinant store's holder sets (a bit per PE below 64, the others
// in a side table) agree with a plain list of holders, for PEs on both
// sides of 64 and logger PEs, through additions, failures and resets; and
// a record gives back the determinant stored, its path from the table.
func TestDeterminantHoldersAgreeWithList(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pick := func() PEID {
		switch rng.IntN(4) {
		case 0:
			return LoggerPE(rng.IntN(3))
		case 1:
			return PEID(60 + rng.IntN(10)) // both sides of 64
		}
		return PEID(rng.IntN(8))
	}
	paths := []commutative.Path{{}, commutative.Child(MessageID{Sender: 3, SRN: 4}, 1), commutative.Child(MessageID{Sender: 3, SRN: 5}, 0)}
	s := newDeterminantStore()
	naive := map[uint32][]PEID{}
	dets := map[uint32]Determinant{}
	var slots []uint32
	for step := range 20000 {
		switch op := rng.IntN(20); {
		case op < 4 || len(slots) == 0:
			d := Determinant{
				Message:  MessageID{Sender: TaskID(rng.IntN(5)), SRN: uint64(step), CPI: paths[rng.IntN(len(paths))]},
				Receiver: TaskID(rng.IntN(5)), RSN: uint64(step + 1),
				Creator: PEID(rng.IntN(3)), Seq: uint64(rng.IntN(2) * step),
			}
			holders := []PEID{pick(), pick()}
			r, slot := s.add(s.of(d.Receiver), d, holders...)
			require.Equal(t, slot, r.slot)
			slots = append(slots, slot)
			slices.Sort(holders)
			naive[slot] = slices.Compact(holders)
			dets[slot] = d
		case op < 14:
			slot := slots[rng.IntN(len(slots))]
			pe := pick()
			s.addHolder(s.slab.at(slot), pe)
			if !slices.Contains(naive[slot], pe) {
				naive[slot] = append(naive[slot], pe)
				slices.Sort(naive[slot])
			}
		case op < 19:
			failed := []PEID{pick(), pick()}
			isFailed := func(p PEID) bool { return slices.Contains(failed, p) }
			var bits uint64
			for _, p := range failed {
				if uint32(p) < 64 {
					bits |= 1 << uint32(p)
				}
			}
			slot := slots[rng.IntN(len(slots))]
			s.dropHolders(s.slab.at(slot), bits, isFailed)
			naive[slot] = slices.DeleteFunc(naive[slot], isFailed)
		default:
			s.reset()
			clear(naive)
			clear(dets)
			slots = slots[:0]
		}
		for _, slot := range slots {
			r := s.slab.at(slot)
			want := naive[slot]
			require.Equal(t, len(want), int(r.holderCount), "step %d slot %d", step, slot)
			if len(want) == 0 {
				require.Empty(t, s.holderList(r))
			} else {
				require.Equal(t, want, s.holderList(r), "step %d slot %d", step, slot)
			}
			for _, pe := range []PEID{0, 5, 63, 64, 69, LoggerPE(0), LoggerPE(2)} {
				require.Equal(t, slices.Contains(want, pe), s.holds(r, pe), "step %d slot %d pe %d", step, slot, pe)
			}
			require.Equal(t, dets[slot], s.determinant(r))
			require.True(t, s.names(r, dets[slot].Message))
		}
	}
}

// A reception's new determinant is listed in Ready.Determinants with
// Config.ReportDeterminants only; it rides on the next send either way.
func TestReportDeterminantsOptIn(t *testing.T) {
	for _, report := range []bool{false, true} {
		p := NewFullDet(Config{PE: 0, PEs: 3, ReportDeterminants: report})
		p.HostTask(1)
		d := receiveOne(t, p)
		p.Send(1, 2, Message{To: 5})
		r := p.Ready()
		want := Determinant{Message: d.Message.ID, Receiver: 1, RSN: 1}
		if report {
			require.Equal(t, []NewDeterminant{{Determinant: want, Creator: 0}}, r.Determinants)
		} else {
			require.Empty(t, r.Determinants)
		}
		require.Len(t, r.Envelopes, 1)
		require.Equal(t, []Determinant{want}, r.Envelopes[0].Determinants)
		p.Advance()
	}
}
