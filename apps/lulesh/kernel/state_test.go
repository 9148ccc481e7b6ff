package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"
)

// poisonScratch fills the arrays that the packed state leaves out with
// NaN, so that a restored domain that read one of them before writing it
// would produce other bits.
func poisonScratch(d *Domain) {
	if d.sumScratch == nil {
		d.sumScratch = make([]float64, d.numNode)
	}
	for _, a := range [][]float64{d.xdd, d.ydd, d.zdd, d.ql, d.qq, d.vnewClamped,
		d.eos.p, d.eos.e, d.eos.q, d.eos.ss, d.sumScratch} {
		for i := range a {
			a[i] = math.NaN()
		}
	}
}

// restore packs d and unpacks it into a fresh domain of the same chunk
// whose scratch arrays are poisoned, and checks that the fresh domain
// packs to the same bytes.
func restore(t *testing.T, d *Domain) *Domain {
	t.Helper()
	packed, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(packed) != d.StateSize() {
		t.Fatalf("packed state has %d bytes, StateSize says %d", len(packed), d.StateSize())
	}
	fresh, err := NewDomain(Config{Chunk: d.chunk, Regions: ReferenceRegions()})
	if err != nil {
		t.Fatal(err)
	}
	poisonScratch(fresh)
	if err := fresh.UnmarshalBinary(packed); err != nil {
		t.Fatalf("cycle %d: %v", d.cycle, err)
	}
	repacked, err := fresh.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(packed, repacked) {
		t.Fatalf("cycle %d: the restored domain packs to other bytes", d.cycle)
	}
	if fresh.Cycle() != d.Cycle() || fresh.Time() != d.Time() || fresh.DeltaTime() != d.DeltaTime() {
		t.Fatalf("restored cycle %d time %v dt %v, packed cycle %d time %v dt %v",
			fresh.Cycle(), fresh.Time(), fresh.DeltaTime(), d.Cycle(), d.Time(), d.DeltaTime())
	}
	return fresh
}

// stateTestCycles is how far the restore tests run a 10³ mesh: to the
// stop time (231 cycles), or fewer under the race detector.
func stateTestCycles() int {
	if raceDetectorEnabled {
		return 40
	}
	return 0
}

// TestSerialStateContinuesBitwise restores a serial 10³ run at several
// cycles into fresh domains and checks that each continues to the
// uninterrupted run's final digest, time and cycle count.
func TestSerialStateContinuesBitwise(t *testing.T) {
	const n = 10
	maxCycles := stateTestCycles()
	want, err := Run(n, maxCycles)
	if err != nil {
		t.Fatal(err)
	}
	restoreAt := map[int]bool{0: true, 1: true, 17: true, want.Iterations / 2: true, want.Iterations - 1: true}
	d, err := NewSerialDomain(n)
	if err != nil {
		t.Fatal(err)
	}
	var restored []*Domain
	for {
		if restoreAt[d.Cycle()] {
			restored = append(restored, restore(t, d))
		}
		if d.Finished(maxCycles) {
			break
		}
		if err := d.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if len(restored) != len(restoreAt) {
		t.Fatalf("restored at %d cycles, want %d", len(restored), len(restoreAt))
	}
	for _, r := range restored {
		from := r.Cycle()
		for !r.Finished(maxCycles) {
			if err := r.Step(); err != nil {
				t.Fatalf("restored at cycle %d: %v", from, err)
			}
		}
		got, err := r.Result(0)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest || got.Iterations != want.Iterations || r.Time() != d.Time() {
			t.Errorf("restored at cycle %d: digest %016x after %d cycles (time %v), uninterrupted %016x after %d (time %v)",
				from, got.Digest, got.Iterations, r.Time(), want.Digest, want.Iterations, d.Time())
		}
	}
}

// TestChunkedStateContinuesBitwise runs a 2×2×2 chunking of a 10³ mesh
// and, at several cycles, replaces every chunk's domain by a fresh one
// restored from its packed state, each time at another phase boundary
// (where a distributed run may checkpoint or migrate a chunk: with
// unsummed forces, before the ghost gradients, ...). The run must end
// with the uninterrupted chunked run's digest.
func TestChunkedStateContinuesBitwise(t *testing.T) {
	const n = 10
	maxCycles := stateTestCycles()
	chunking := Chunking{{5, 5}, {5, 5}, {5, 5}}
	want, err := RunChunked(n, chunking, maxCycles)
	if err != nil {
		t.Fatal(err)
	}
	g, err := newChunkGrid(n, chunking)
	if err != nil {
		t.Fatal(err)
	}
	restores := map[gridBoundary]int{}
	g.between = func(b gridBoundary) error {
		cycle := g.domains[0].Cycle()
		if cycle%7 != 1 || gridBoundary(cycle/7%int(numGridBoundaries)) != b {
			return nil
		}
		for i, d := range g.domains {
			g.domains[i] = restore(t, d)
		}
		restores[b]++
		return nil
	}
	for _, d := range g.domains {
		if d.Cycle() != 0 {
			t.Fatal("a new grid is past cycle 0")
		}
	}
	for i, d := range g.domains { // after the nodal mass sums
		g.domains[i] = restore(t, d)
	}
	for !g.domains[0].Finished(maxCycles) {
		if err := g.step(); err != nil {
			t.Fatal(err)
		}
	}
	got := Summarise(n, g.domains[0].Cycle(), g.energies(n), 0)
	if got.Digest != want.Digest || got.Iterations != want.Iterations {
		t.Errorf("restored run: digest %016x after %d cycles, uninterrupted %016x after %d",
			got.Digest, got.Iterations, want.Digest, want.Iterations)
	}
	if len(restores) != int(numGridBoundaries) {
		t.Errorf("restored at boundaries %v, want all %d", restores, numGridBoundaries)
	}
}

// TestStateSize checks the documented size of a packed state: the header,
// the scalars, the node and element fields and the gradients with their
// ghost and zero slots, and the checksum.
func TestStateSize(t *testing.T) {
	for _, c := range []Chunk{
		{MeshSize: 32, Offset: [3]int{16, 0, 16}, Size: [3]int{16, 16, 16}},
		{MeshSize: 10, Offset: [3]int{3, 0, 2}, Size: [3]int{7, 10, 4}},
		WholeMesh(1),
	} {
		d, err := NewDomain(Config{Chunk: c, Regions: ReferenceRegions()})
		if err != nil {
			t.Fatal(err)
		}
		sx, sy, sz := c.Size[0], c.Size[1], c.Size[2]
		nodes, elems := (sx+1)*(sy+1)*(sz+1), sx*sy*sz
		gradients := 3*elems + 2*(sy*sz+sx*sz+sx*sy) + 3
		want := 36 + 40 + 8*(10*nodes+12*elems+gradients) + 4
		packed, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if d.StateSize() != want || len(packed) != want {
			t.Errorf("chunk %v: StateSize %d, packed %d bytes, want %d", c.Size, d.StateSize(), len(packed), want)
		}
		t.Logf("packed state of a %d×%d×%d chunk: %d bytes", sx, sy, sz, len(packed))
	}
	d, err := NewDomain(Config{Chunk: Chunk{MeshSize: 32, Size: [3]int{16, 16, 16}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.StateSize(); got != 896952 {
		t.Errorf("16³ chunk: StateSize %d, want 896952", got)
	}
}

// withCRC returns state with its checksum recomputed.
func withCRC(state []byte) []byte {
	out := bytes.Clone(state)
	if len(out) >= stateCRCBytes {
		body := out[:len(out)-stateCRCBytes]
		binary.LittleEndian.PutUint32(out[len(body):], crc32.Checksum(body, stateCRCTable))
	}
	return out
}

// TestUnmarshalRefusesForeignState feeds states that must be refused and
// checks the error and that the receiving domain did not change.
func TestUnmarshalRefusesForeignState(t *testing.T) {
	chunk := Chunk{MeshSize: 6, Offset: [3]int{3, 0, 3}, Size: [3]int{3, 6, 3}}
	src, err := NewDomain(Config{Chunk: chunk})
	if err != nil {
		t.Fatal(err)
	}
	src.TimeIncrement(src.TimeConstraints())
	packed, err := src.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewDomain(Config{Chunk: Chunk{MeshSize: 6, Offset: [3]int{0, 0, 3}, Size: [3]int{3, 6, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	ofOther, err := other.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	serial, err := NewSerialDomain(6)
	if err != nil {
		t.Fatal(err)
	}
	ofSerial, err := serial.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	set := func(at int, b ...byte) []byte {
		out := bytes.Clone(packed)
		copy(out[at:], b)
		return withCRC(out)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic", set(0, 'X')},
		{"version", set(4, 2)},
		{"other offset", ofOther},
		{"other mesh", set(8, 7)},
		{"whole mesh", ofSerial},
		{"truncated in header", packed[:20]},
		{"truncated in scalars", packed[:stateHeaderBytes+12]},
		{"truncated by one value", packed[:len(packed)-8]},
		{"truncated by one byte", packed[:len(packed)-1]},
		{"trailing bytes", append(bytes.Clone(packed), 0)},
		{"trailing value", withCRC(append(bytes.Clone(packed), make([]byte, 8)...))},
		{"flipped bit", func() []byte { b := bytes.Clone(packed); b[len(b)/2] ^= 4; return b }()},
		{"cycle out of range", set(stateHeaderBytes+16, 0, 0, 0, 0, 1, 0, 0, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDomain(Config{Chunk: chunk})
			if err != nil {
				t.Fatal(err)
			}
			before, _ := d.MarshalBinary()
			err = d.UnmarshalBinary(tc.data)
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v, want %v", err, ErrBadState)
			}
			t.Log(err)
			if after, _ := d.MarshalBinary(); !bytes.Equal(before, after) {
				t.Error("a refused state changed the domain")
			}
		})
	}
	d, err := NewDomain(Config{Chunk: chunk})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UnmarshalBinary(packed); err != nil || d.Cycle() != 1 {
		t.Errorf("the untouched state: cycle %d, error %v", d.Cycle(), err)
	}
}

// FuzzDomainUnmarshal feeds arbitrary bytes, and the same bytes with a
// valid checksum, to UnmarshalBinary: it must not panic, must refuse with
// ErrBadState leaving the domain as it was, or accept a state that packs
// back to exactly the same bytes.
func FuzzDomainUnmarshal(f *testing.F) {
	chunk := Chunk{MeshSize: 4, Offset: [3]int{2, 0, 2}, Size: [3]int{2, 1, 2}}
	d, err := NewDomain(Config{Chunk: chunk})
	if err != nil {
		f.Fatal(err)
	}
	d.TimeIncrement(d.TimeConstraints())
	valid, err := d.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	for i := range len(valid) + 1 { // every truncation, the state itself last
		f.Add(valid[:i])
	}
	f.Add(append(bytes.Clone(valid), 0))
	f.Add([]byte("LULD\x01\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, withCRC(data)} {
			d, err := NewDomain(Config{Chunk: chunk})
			if err != nil {
				t.Fatal(err)
			}
			before, err := d.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if err := d.UnmarshalBinary(in); err != nil {
				if !errors.Is(err, ErrBadState) {
					t.Fatalf("error %v does not wrap %v", err, ErrBadState)
				}
				if after, _ := d.MarshalBinary(); !bytes.Equal(before, after) {
					t.Fatal("a refused state changed the domain")
				}
				continue
			}
			after, err := d.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, in) {
				t.Fatal("an accepted state packs back to other bytes")
			}
		}
	})
}
