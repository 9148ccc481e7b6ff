package stencil3d

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// filled returns an array for b whose every point holds a distinct value
// encoding its local coordinates: i + 100 j + 10000 k.
func filled(b Block) []float64 {
	t := make([]float64, b.Len())
	for k := 0; k <= b.Z+1; k++ {
		for j := 0; j <= b.Y+1; j++ {
			for i := 0; i <= b.X+1; i++ {
				t[b.At(i, j, k)] = float64(i + 100*j + 10000*k)
			}
		}
	}
	return t
}

func coords(v float64) (i, j, k int) {
	n := int(v)
	return n % 100, n / 100 % 100, n / 10000
}

func TestBlockLayout(t *testing.T) {
	b := Block{3, 4, 5}
	if b.Len() != 5*6*7 || b.Interior() != 60 {
		t.Fatalf("Len %d Interior %d", b.Len(), b.Interior())
	}
	if b.At(1, 0, 0) != 1 || b.At(0, 1, 0) != 5 || b.At(0, 0, 1) != 30 || b.At(4, 5, 6) != b.Len()-1 {
		t.Errorf("At is not i fastest, then j, then k")
	}
}

func TestSides(t *testing.T) {
	for s := range Side(NumSides) {
		if s.Opposite().Opposite() != s || s.Opposite().Axis() != s.Axis() || s.Opposite().Step() != -s.Step() {
			t.Errorf("side %v: opposite %v", s, s.Opposite())
		}
	}
	if XLow.Step() != -1 || XHigh.Step() != 1 || ZHigh.Axis() != 2 || YLow.String() != "-y" {
		t.Errorf("side constants out of order")
	}
}

// TestExtractFaceTakesTheInteriorBoundaryLayer checks, for every side, that
// the face is the layer i == 1 (low) or i == B (high), in order u fastest.
func TestExtractFaceTakesTheInteriorBoundaryLayer(t *testing.T) {
	b := Block{3, 4, 5}
	src := filled(b)
	for s := range Side(NumSides) {
		face := ExtractFace(b, src, s, nil)
		if len(face) != b.FaceLen(s) {
			t.Fatalf("side %v: %d points, want %d", s, len(face), b.FaceLen(s))
		}
		wantLayer := 1
		if s.Step() > 0 {
			wantLayer = b.extent(s.Axis())
		}
		prev := -1.0
		for n, v := range face {
			c := [3]int{}
			c[0], c[1], c[2] = coords(v)
			if c[s.Axis()] != wantLayer {
				t.Fatalf("side %v point %d from layer %d, want %d", s, n, c[s.Axis()], wantLayer)
			}
			for d := range 3 {
				if c[d] < 1 || c[d] > b.extent(d) {
					t.Fatalf("side %v point %d at %v is not interior", s, n, c)
				}
			}
			if v <= prev {
				t.Fatalf("side %v: points not in layout order", s)
			}
			prev = v
		}
	}
}

// TestStoreFaceFillsTheHalo checks that StoreFace writes exactly the face
// halo on its side (no edge, corner or interior point) in ExtractFace order.
func TestStoreFaceFillsTheHalo(t *testing.T) {
	b := Block{3, 4, 5}
	for s := range Side(NumSides) {
		t.Run(s.String(), func(t *testing.T) {
			dst := filled(b)
			face := make([]float64, b.FaceLen(s))
			for n := range face {
				face[n] = -float64(n + 1)
			}
			if err := StoreFace(b, dst, s, face); err != nil {
				t.Fatal(err)
			}
			haloLayer := 0
			if s.Step() > 0 {
				haloLayer = b.extent(s.Axis()) + 1
			}
			original := filled(b)
			written := 0
			for pos, v := range dst {
				if v == original[pos] {
					continue
				}
				written++
				c := [3]int{}
				c[0], c[1], c[2] = coords(original[pos])
				if c[s.Axis()] != haloLayer {
					t.Fatalf("wrote point %v outside halo layer %d", c, haloLayer)
				}
				for d := range 3 {
					if d != s.Axis() && (c[d] < 1 || c[d] > b.extent(d)) {
						t.Fatalf("wrote edge or corner point %v", c)
					}
				}
			}
			if written != len(face) {
				t.Errorf("wrote %d points, want %d", written, len(face))
			}
			// Reading the halo back as if it were an interior layer gives the
			// face in order: the halo and the layer share their ordering.
			var got []float64
			visitLayer(b, s, haloLayer, func(_, pos int) { got = append(got, dst[pos]) })
			for n := range face {
				if got[n] != face[n] {
					t.Fatalf("halo point %d = %v, want %v", n, got[n], face[n])
				}
			}
		})
	}
	if err := StoreFace(b, filled(b), XLow, make([]float64, 3)); err == nil {
		t.Errorf("StoreFace accepted a face of the wrong size")
	}
}

// TestFaceExchangeMatchesPeriodicNeighbour checks the halo mapping on a
// whole-grid view: after one exchange over a 2x1x3 chunk grid, every halo
// point holds the global-grid value of the point it stands for.
func TestFaceExchangeMatchesPeriodicNeighbour(t *testing.T) {
	cfg := Config{Grid: [3]int{6, 4, 9}, Chunk: [3]int{3, 4, 3}, Iterations: 1}
	b := cfg.Block()
	shape := chunkShape(cfg)
	global := func(x, y, z int) float64 {
		x = (x%cfg.Grid[0] + cfg.Grid[0]) % cfg.Grid[0]
		y = (y%cfg.Grid[1] + cfg.Grid[1]) % cfg.Grid[1]
		z = (z%cfg.Grid[2] + cfg.Grid[2]) % cfg.Grid[2]
		return float64(x + 100*y + 10000*z)
	}
	chunks := make([][]float64, shape.Size())
	for c := range chunks {
		at := shape.At(c)
		chunks[c] = make([]float64, b.Len())
		for k := 1; k <= b.Z; k++ {
			for j := 1; j <= b.Y; j++ {
				for i := 1; i <= b.X; i++ {
					chunks[c][b.At(i, j, k)] = global(int(at[0])*b.X+i-1, int(at[1])*b.Y+j-1, int(at[2])*b.Z+k-1)
				}
			}
		}
	}
	for c := range chunks {
		for s := range Side(NumSides) {
			to := shape.Linear(neighbour(shape, shape.At(c), s))
			if err := StoreFace(b, chunks[to], s.Opposite(), ExtractFace(b, chunks[c], s, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for c := range chunks {
		at := shape.At(c)
		for s := range Side(NumSides) {
			layer := 0
			if s.Step() > 0 {
				layer = b.extent(s.Axis()) + 1
			}
			visitLayer(b, s, layer, func(_, pos int) {
				i, j, k := pos%(b.X+2), pos/(b.X+2)%(b.Y+2), pos/((b.X+2)*(b.Y+2))
				want := global(int(at[0])*b.X+i-1, int(at[1])*b.Y+j-1, int(at[2])*b.Z+k-1)
				if chunks[c][pos] != want {
					t.Fatalf("chunk %v halo %v point (%d,%d,%d) = %v, want %v", at, s, i, j, k, chunks[c][pos], want)
				}
			})
		}
	}
}

func TestApplyBoundaryHeatsThreeInteriorFaces(t *testing.T) {
	b := Block{3, 4, 5}
	arr := make([]float64, b.Len())
	ApplyBoundary(b, arr)
	for k := 0; k <= b.Z+1; k++ {
		for j := 0; j <= b.Y+1; j++ {
			for i := 0; i <= b.X+1; i++ {
				interior := i >= 1 && i <= b.X && j >= 1 && j <= b.Y && k >= 1 && k <= b.Z
				want := 0.0
				if interior && (i == 1 || j == 1 || k == 1) {
					want = 255
				}
				if got := arr[b.At(i, j, k)]; got != want {
					t.Fatalf("point (%d,%d,%d) = %v, want %v", i, j, k, got, want)
				}
			}
		}
	}
}

func TestSweepSumsInStencilOrder(t *testing.T) {
	b := Block{1, 1, 1}
	arr := make([]float64, b.Len())
	c := b.At(1, 1, 1)
	// Values chosen so that another summation order rounds differently.
	neighbours := []int{b.At(0, 1, 1), b.At(2, 1, 1), b.At(1, 0, 1), b.At(1, 2, 1), b.At(1, 1, 0), b.At(1, 1, 2), c}
	values := []float64{1e16, 1, -1e16, 1, 3, 0.5, 0.25}
	for n, pos := range neighbours {
		arr[pos] = values[n]
	}
	next := make([]float64, b.Len())
	Sweep(b, arr, next)
	want := (values[0] + values[1] + values[2] + values[3] + values[4] + values[5] + values[6]) * 0.14285714285714285714
	if math.Float64bits(next[c]) != math.Float64bits(want) {
		t.Errorf("sweep = %v, want %v", next[c], want)
	}
	for pos := range next {
		if pos != c && next[pos] != 0 {
			t.Errorf("sweep wrote outside the interior at %d", pos)
		}
	}
}

func TestSummarizeHashesInteriorOnly(t *testing.T) {
	b := Block{2, 1, 1}
	arr := make([]float64, b.Len())
	arr[b.At(1, 1, 1)], arr[b.At(2, 1, 1)] = 1.5, 2
	arr[0] = 99 // halo: ignored
	got := Summarize(b, arr)
	// FNV-1a 64 of the bytes of 1.5 then 2.0, written out by hand.
	h := uint64(0xcbf29ce484222325)
	for _, v := range []float64{1.5, 2} {
		w := math.Float64bits(v)
		for n := range 8 {
			h ^= (w >> (8 * n)) & 0xff
			h *= 0x100000001b3
		}
	}
	if got.Sum != 3.5 || got.FNV1a != h {
		t.Errorf("Summarize = %+v, want sum 3.5 fnv1a %016x", got, h)
	}
	// FNV-1a 64 of no bytes is the offset basis.
	if JobDigest(nil) != 0xcbf29ce484222325 {
		t.Errorf("JobDigest(nil) = %016x", JobDigest(nil))
	}
}

// TestFaceBytesMatchFloatFaces checks the wire form of a face against
// ExtractFace and StoreFace, bit for bit, on every side of an uneven block.
func TestFaceBytesMatchFloatFaces(t *testing.T) {
	b := Block{3, 4, 5}
	src := filled(b)
	for s := range Side(NumSides) {
		floats := ExtractFace(b, src, s, nil)
		prefix := []byte{1, 2, 3}
		wire := AppendFaceBytes(b, src, s, prefix)
		if string(wire[:3]) != string(prefix) || len(wire) != 3+8*len(floats) {
			t.Fatalf("side %v: appended %d bytes after the prefix, want %d", s, len(wire)-3, 8*len(floats))
		}
		for n, v := range floats {
			if got := math.Float64frombits(binary.LittleEndian.Uint64(wire[3+8*n:])); math.Float64bits(got) != math.Float64bits(v) {
				t.Fatalf("side %v point %d: wire %v, want %v", s, n, got, v)
			}
		}
		want, got := filled(b), filled(b)
		for n := range floats {
			floats[n] = -floats[n]
		}
		if err := StoreFace(b, want, s.Opposite(), floats); err != nil {
			t.Fatal(err)
		}
		var neg []byte
		for _, v := range floats {
			neg = binary.LittleEndian.AppendUint64(neg, math.Float64bits(v))
		}
		if err := StoreFaceBytes(b, got, s.Opposite(), neg); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("side %v: StoreFaceBytes wrote another array than StoreFace", s)
		}
	}
	if err := StoreFaceBytes(b, filled(b), XLow, make([]byte, 8*b.FaceLen(XLow)-1)); err == nil {
		t.Errorf("StoreFaceBytes accepted a face of the wrong size")
	}
}

// naiveSweep is the plain transcription of the stencil (flat indices),
// against which Sweep is checked bit for bit and benchmarked.
func naiveSweep(b Block, t, next []float64) {
	sy, sz := b.stride(1), b.stride(2)
	for k := 1; k <= b.Z; k++ {
		for j := 1; j <= b.Y; j++ {
			row := b.At(1, j, k)
			for c := row; c < row+b.X; c++ {
				next[c] = (t[c-1] + t[c+1] + t[c-sy] + t[c+sy] + t[c-sz] + t[c+sz] + t[c]) * oneSeventh
			}
		}
	}
}

// TestSweepMatchesNaiveSweep compares Sweep with naiveSweep bit for bit on
// values whose sums round differently in another order, halo included.
func TestSweepMatchesNaiveSweep(t *testing.T) {
	b := Block{7, 5, 6}
	src := make([]float64, b.Len())
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range src {
		src[n] = rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-30)
	}
	got, want := make([]float64, b.Len()), make([]float64, b.Len())
	Sweep(b, src, got)
	naiveSweep(b, src, want)
	for n := range got {
		if math.Float64bits(got[n]) != math.Float64bits(want[n]) {
			t.Fatalf("point %d: %v, want %v", n, got[n], want[n])
		}
	}
}

// TestStepMatchesItsParts checks the fused, in-place Step against the
// exchange, sweep into a second array, halo clearing, boundary and face
// extraction done one after the other, bit for bit, on random values
// (garbage in t's low halos and in Step's layers), for blocks with sides
// of 1, 2 and more points.
func TestStepMatchesItsParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20)
		}
		return v
	}
	for _, b := range []Block{{7, 5, 6}, {1, 1, 1}, {2, 3, 1}, {1, 4, 2}, {3, 1, 5}, {16, 8, 4}} {
		var halos [NumSides][]byte
		for s := range Side(NumSides) {
			for _, v := range random(b.FaceLen(s)) {
				halos[s] = binary.LittleEndian.AppendUint64(halos[s], math.Float64bits(v))
			}
		}
		src := random(b.Len())
		// The parts, in order.
		wantT, want := slices.Clone(src), random(b.Len())
		for s := range Side(NumSides) {
			if err := StoreFaceBytes(b, wantT, s, halos[s]); err != nil {
				t.Fatal(err)
			}
		}
		Sweep(b, wantT, want)
		clearHalo(b, want)
		ApplyBoundary(b, want)
		// Fused, in place.
		got := slices.Clone(src)
		var faces [NumSides][]byte
		if err := Step(b, got, random(2*StepLayers(b)), &halos, &faces); err != nil {
			t.Fatal(err)
		}
		for n := range got {
			if math.Float64bits(got[n]) != math.Float64bits(want[n]) {
				t.Fatalf("block %v point %d: %v, want %v", b, n, got[n], want[n])
			}
		}
		for s := range Side(NumSides) {
			if w := AppendFaceBytes(b, want, s, nil); !bytes.Equal(faces[s], w) {
				t.Fatalf("block %v: face %v differs from AppendFaceBytes", b, s)
			}
		}
		// Without faces, the same array.
		again := slices.Clone(src)
		if err := Step(b, again, random(2*StepLayers(b)), &halos, nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again, got) {
			t.Fatalf("block %v: Step without faces wrote another array", b)
		}
	}
	// Faces already in t's halo (nil) give the same result.
	b := Block{5, 4, 3}
	var halos [NumSides][]byte
	for s := range Side(NumSides) {
		for _, v := range random(b.FaceLen(s)) {
			halos[s] = binary.LittleEndian.AppendUint64(halos[s], math.Float64bits(v))
		}
	}
	src := random(b.Len())
	want := slices.Clone(src)
	if err := Step(b, want, make([]float64, 2*StepLayers(b)), &halos, nil); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(src)
	for _, s := range []Side{XHigh, YHigh, ZLow} {
		if err := StoreFaceBytes(b, got, s, halos[s]); err != nil {
			t.Fatal(err)
		}
		halos[s] = nil
	}
	if err := Step(b, got, random(2*StepLayers(b)), &halos, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Step with faces already stored wrote another array")
	}
	b = Block{2, 2, 2}
	short := [NumSides][]byte{YLow: make([]byte, 3)}
	if err := Step(b, make([]float64, b.Len()), make([]float64, 2*StepLayers(b)), &short, nil); err == nil {
		t.Errorf("Step accepted faces of the wrong size")
	}
	var none [NumSides][]byte
	if err := Step(b, make([]float64, b.Len()), make([]float64, 2*StepLayers(b)-1), &none, nil); err == nil {
		t.Errorf("Step accepted layers of the wrong size")
	}
}
