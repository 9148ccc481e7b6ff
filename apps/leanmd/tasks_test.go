package leanmd

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd/md"
)

func testProgram(t *testing.T, args ...string) *program {
	t.Helper()
	opts, err := ParseOptions(args)
	if err != nil {
		t.Fatal(err)
	}
	return &program{opts: opts, geo: md.NewGeometry(opts.Config)}
}

func TestCellPackRoundTrip(t *testing.T) {
	p := testProgram(t)
	c := p.newCell(actor.Idx(1, 2, 0))
	c.started, c.step, c.migrated = true, 40, 17
	c.pos, c.vel = md.InitialAtoms(p.opts.Config, &p.geo, c.cell)
	c.forceSlots[3] = &Forces{Step: 40, Slot: 3, Forces: md.AppendFloats(nil, c.pos), PotentialEnergy: -1.5e-17}
	c.migrantSlots[70] = &Migrants{Step: 40, Slot: 70, Atoms: []float64{1, 2, 3, 4, 5, 6}}
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back := p.newCell(actor.Idx(1, 2, 0))
	if err := back.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if back.started != c.started || back.step != c.step || back.migrated != c.migrated ||
		!slices.Equal(back.pos, c.pos) || !slices.Equal(back.vel, c.vel) {
		t.Errorf("unpacked cell differs: step %d migrated %d, %d atoms", back.step, back.migrated, len(back.pos)/3)
	}
	for s := range c.forceSlots {
		if !proto.Equal(back.forceSlots[s], c.forceSlots[s]) || !proto.Equal(back.migrantSlots[s], c.migrantSlots[s]) {
			t.Errorf("slot %d differs after unpacking", s)
		}
	}
	if again, _ := back.MarshalBinary(); !slices.Equal(again, data) {
		t.Error("packing the unpacked cell gives other bytes")
	}
	if err := p.newCell(actor.Idx(0, 0, 0)).UnmarshalBinary([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage unpacked without error")
	}
}

func TestComputePackRoundTrip(t *testing.T) {
	p := testProgram(t)
	c := p.newCompute(actor.Idx(2, 0, 1, 5))
	c.step = 9
	c.received[1] = &Positions{Step: 9, Cell: int32(c.partnerID), Coordinates: md.AppendFloats(nil, []float64{1, 2, 3})}
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back := p.newCompute(actor.Idx(2, 0, 1, 5))
	if err := back.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if back.step != 9 || back.received[0] != nil || !proto.Equal(back.received[1], c.received[1]) {
		t.Errorf("unpacked compute: step %d, received %v", back.step, back.received)
	}
}

func TestParseOptions(t *testing.T) {
	opts, err := ParseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := md.Config{Cells: [3]int{3, 3, 3}, KAway: [3]int{2, 2, 1}, AtomsPerCell: 75, Steps: 200, MigrateEvery: 20}
	if opts.Config != want || opts.JSON || opts.CellMap != "block" {
		t.Errorf("defaults %+v", opts)
	}
	opts, err = ParseOptions([]string{"--cells", "5,5,3", "--kaway", "1,1,1", "--atoms", "40", "--steps", "7", "--migrate-every", "0", "--json", "--cell-map", "round-robin"})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Cells != [3]int{5, 5, 3} || opts.KAway != [3]int{1, 1, 1} || opts.AtomsPerCell != 40 || opts.Steps != 7 ||
		opts.MigrateEvery != 0 || !opts.JSON || opts.CellMap != "round-robin" {
		t.Errorf("parsed %+v", opts)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--cells", "5,5"}, "X,Y,Z"},
		{[]string{"--cells", "5,0,3"}, "at least 1"},
		{[]string{"--cells", "2,3,3"}, "more than the k-away"},
		{[]string{"--steps", "0"}, "steps"},
		{[]string{"--cell-map", "random"}, "block or round-robin"},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := ParseOptions(c.args)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseOptions(%q) = %v, want an ErrUsage saying %q", c.args, err, c.says)
		}
	}
}

// TestPlacement checks that every point of the compute shape is a compute
// of the half shell and starts on the PE of its own cell.
func TestPlacement(t *testing.T) {
	for _, cellMap := range []string{"block", "round-robin"} {
		p := testProgram(t, "--cells", "5,5,3", "--cell-map", cellMap)
		j := actor.NewJob()
		if err := App.Define(j, []string{"--cells", "5,5,3", "--cell-map", cellMap}); err != nil {
			t.Fatal(err)
		}
		cells, computes := j.Collections()[0], j.Collections()[1]
		if computes.Shape.Size() != 75*38 {
			t.Errorf("%d computes, want 75·38", computes.Shape.Size())
		}
		const pes = 4
		for lin := range computes.Shape.Size() {
			i := computes.Shape.At(lin)
			home := cellOf(i)
			k := int(i[3])
			if k >= p.geo.ComputesPerCell() {
				t.Fatalf("compute %v beyond the half shell", i)
			}
			want := cells.Map(cells.Shape.Linear(cellIndex(home)), cells.Shape.Size(), pes)
			if got := computes.Map(lin, computes.Shape.Size(), pes); got != want {
				t.Errorf("%s: compute %v on PE %d, its cell on PE %d", cellMap, i, got, want)
			}
		}
	}
}

func TestCheckReference(t *testing.T) {
	good := Report{KineticInitial: referenceKineticInitial, PotentialInitial: referencePotentialInitial,
		KineticFinal: referenceKineticFinal * (1 + 1e-12), PotentialFinal: referencePotentialFinal, AtomsMigrated: 834}
	if v, ok := CheckReference(referenceConfig, good); !ok || !v.Applicable {
		t.Errorf("reference values rejected: %+v", v)
	}
	bad := good
	bad.PotentialFinal *= 1 + 1e-8
	if v, ok := CheckReference(referenceConfig, bad); ok || !strings.Contains(v.Problem, "final potential") {
		t.Errorf("off energy accepted: %+v", v)
	}
	bad = good
	bad.AtomsMigrated = 833
	if v, ok := CheckReference(referenceConfig, bad); ok || !strings.Contains(v.Problem, "migrated") {
		t.Errorf("off migration count accepted: %+v", v)
	}
	other := referenceConfig
	other.Steps = 100
	if v, ok := CheckReference(other, good); ok || v.Applicable {
		t.Errorf("reference applied to another configuration: %+v", v)
	}
}
