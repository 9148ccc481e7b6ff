package kernel

import (
	"errors"
	"testing"
)

// TestRunsAreBitwiseReproducible runs the same problem twice and compares
// the digests of the final energies.
func TestRunsAreBitwiseReproducible(t *testing.T) {
	cycles := 0 // to the stop time
	if raceDetectorEnabled {
		cycles = 100
	}
	first, err := Run(10, cycles)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Run(10, cycles)
	if err != nil {
		t.Fatal(err)
	}
	if first.Digest != second.Digest || first.FinalOriginEnergy != second.FinalOriginEnergy {
		t.Fatalf("two runs differ: digest %016x vs %016x, e(0) %.17g vs %.17g",
			first.Digest, second.Digest, first.FinalOriginEnergy, second.FinalOriginEnergy)
	}
}

// TestRegionsDoNotChangeResults checks the reference's claim that the
// region layout only changes the work: one region and the default eleven
// give the same bits.
func TestRegionsDoNotChangeResults(t *testing.T) {
	digest := func(regions RegionOptions) uint64 {
		d, err := NewDomain(Config{Chunk: WholeMesh(8), Regions: regions})
		if err != nil {
			t.Fatal(err)
		}
		for !d.Finished(60) {
			if err := d.Step(); err != nil {
				t.Fatal(err)
			}
		}
		return EnergyDigest(d.e)
	}
	single := digest(RegionOptions{Count: 1})
	if reference := digest(ReferenceRegions()); reference != single {
		t.Fatalf("digest with 11 regions %016x, with one %016x", reference, single)
	}
}

// TestRegionLayoutCoversEveryElementOnce checks that the regions
// partition the elements, in increasing order within each region, and
// that the expensive last region repeats the EOS 10·(1+cost) times.
func TestRegionLayoutCoversEveryElementOnce(t *testing.T) {
	d, err := NewSerialDomain(12)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]int, d.numElem)
	for _, region := range d.regions {
		for i, el := range region {
			seen[el]++
			if i > 0 && region[i-1] >= el {
				t.Fatalf("region not in element order at %d", i)
			}
		}
	}
	for el, count := range seen {
		if count != 1 {
			t.Fatalf("element %d is in %d regions", el, count)
		}
	}
	wantReps := []int{1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 20}
	for r, reps := range d.regionReps {
		if reps != wantReps[r] {
			t.Errorf("region %d repeats the EOS %d times, want %d", r, reps, wantReps[r])
		}
	}
}

// TestCRandMatchesCLibrary checks the generator against the first values
// of the GNU C library's rand() after srand(0) (which seeds with 1).
func TestCRandMatchesCLibrary(t *testing.T) {
	want := []uint32{1804289383, 846930886, 1681692777, 1714636915, 1957747793}
	g := newCRand(0)
	for i, w := range want {
		if got := g.next(); got != w {
			t.Fatalf("value %d = %d, want %d", i, got, w)
		}
	}
}

func TestChunkValidation(t *testing.T) {
	bad := []Chunk{
		{MeshSize: 0, Size: [3]int{1, 1, 1}},
		{MeshSize: 4, Size: [3]int{5, 4, 4}},
		{MeshSize: 4, Offset: [3]int{2, 0, 0}, Size: [3]int{3, 4, 4}},
		{MeshSize: 4, Offset: [3]int{-1, 0, 0}, Size: [3]int{1, 4, 4}},
	}
	for _, c := range bad {
		if _, err := NewDomain(Config{Chunk: c}); !errors.Is(err, ErrBadChunk) {
			t.Errorf("chunk %+v: error %v, want ErrBadChunk", c, err)
		}
	}
}

// TestChunkKnowsItsBoundaries checks symmetry planes, free surfaces and
// neighbours of a chunk in the middle of one axis.
func TestChunkKnowsItsBoundaries(t *testing.T) {
	d, err := NewDomain(Config{Chunk: Chunk{MeshSize: 6, Offset: [3]int{0, 2, 3}, Size: [3]int{6, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.symmetryX) != 3*4 || len(d.symmetryY) != 0 || len(d.symmetryZ) != 0 {
		t.Errorf("symmetry node counts x %d y %d z %d, want 12 0 0",
			len(d.symmetryX), len(d.symmetryY), len(d.symmetryZ))
	}
	want := []Direction{{0, 0, -1}, {0, -1, 0}, {0, 1, 0}, {0, -1, -1}, {0, 1, -1}}
	got := d.Neighbours()
	if len(got) != len(want) {
		t.Fatalf("neighbours %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("neighbours %v, want %v", got, want)
		}
	}
	if n := len(d.SharedNodes(Direction{0, 0, -1})); n != 7*3 {
		t.Errorf("z-minus face shares %d nodes, want 21", n)
	}
	if n := len(d.SharedNodes(Direction{0, 1, -1})); n != 7 {
		t.Errorf("edge shares %d nodes, want 7", n)
	}
	if d.SharedNodes(Direction{1, 0, 0}) != nil {
		t.Error("free surface x+ has shared nodes")
	}
	if err := d.Step(); !errors.Is(err, ErrNotWholeMesh) {
		t.Errorf("Step on a chunk: %v, want ErrNotWholeMesh", err)
	}
	// Only the origin chunk holds the deposited energy.
	for _, e := range d.e {
		if e != 0 {
			t.Fatal("a chunk away from the origin holds energy")
		}
	}
}

// TestStepDoesNotAllocate: a cycle works in the domain's preallocated
// arrays only.
func TestStepDoesNotAllocate(t *testing.T) {
	if raceDetectorEnabled {
		t.Skip("the race detector allocates")
	}
	d, err := NewSerialDomain(6)
	if err != nil {
		t.Fatal(err)
	}
	var stepErr error
	allocs := testing.AllocsPerRun(10, func() {
		if err := d.Step(); err != nil {
			stepErr = err
		}
	})
	if stepErr != nil {
		t.Fatal(stepErr)
	}
	if allocs != 0 {
		t.Fatalf("Step allocates %.1f times per cycle", allocs)
	}
}
