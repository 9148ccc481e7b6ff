package stencil3d

import (
	"math"
	"testing"

	"github.com/gochare/gochare/apps/appkit"
)

// TestSerialMatchesReferenceTable runs every row of the reference table on
// a grid of one chunk, and checks the value bit for bit.
func TestSerialMatchesReferenceTable(t *testing.T) {
	for key, want := range referenceResults {
		if key.Chunk.Interior() > 16*16*16 && testing.Short() {
			t.Logf("skipping chunk %v in short mode", key.Chunk)
			continue
		}
		cfg := Config{
			Grid:       [3]int{key.Chunk.X, key.Chunk.Y, key.Chunk.Z},
			Chunk:      [3]int{key.Chunk.X, key.Chunk.Y, key.Chunk.Z},
			Iterations: key.Iterations,
		}
		got := SolveSerial(cfg)
		if len(got) != 1 || !sameResult(got[0], want) {
			t.Errorf("chunk %v, %d iterations: got %+v, want sum %s fnv1a %016x",
				key.Chunk, key.Iterations, got, appkit.FormatExact(want.Sum), want.FNV1a)
		}
	}
}

// TestSerialChunksAgreeAcrossDecompositions runs reference rows over chunk
// grids 1, 2 and 3 wide in different dimensions: every chunk must end with
// the reference value (the ghost exchange keeps translation symmetry).
func TestSerialChunksAgreeAcrossDecompositions(t *testing.T) {
	for _, cfg := range []Config{
		{Grid: [3]int{64, 64, 64}, Chunk: [3]int{16, 16, 16}, Iterations: 10},
		{Grid: [3]int{32, 16, 48}, Chunk: [3]int{16, 16, 16}, Iterations: 10},
		{Grid: [3]int{32, 16, 8}, Chunk: [3]int{16, 8, 4}, Iterations: 30},
		{Grid: [3]int{16, 24, 4}, Chunk: [3]int{16, 8, 4}, Iterations: 30},
	} {
		want, ok := Reference(cfg)
		if !ok {
			t.Fatalf("no reference for %+v", cfg)
		}
		for n, got := range SolveSerial(cfg) {
			if !sameResult(got, want) {
				t.Errorf("grid %v chunk %v: chunk %d = %+v, want %+v", cfg.Grid, cfg.Chunk, n, got, want)
			}
		}
	}
}

func TestSerialDiffersWithIterations(t *testing.T) {
	one := Config{Grid: [3]int{4, 4, 4}, Chunk: [3]int{4, 4, 4}, Iterations: 1}
	two := one
	two.Iterations = 2
	a, b := SolveSerial(one)[0], SolveSerial(two)[0]
	if sameResult(a, b) || math.IsNaN(a.Sum) {
		t.Errorf("1 and 2 iterations give %+v and %+v", a, b)
	}
}

// TestJobDigestGolden pins the job digests that the output shows, which
// integration tests compare against: they depend on the chunk grid, the
// chunk size and the iteration count, never on the number of PEs.
func TestJobDigestGolden(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Grid: [3]int{64, 64, 64}, Chunk: [3]int{16, 16, 16}, Iterations: 10}, "job digest 077a2f83cdb16c25"},
		{Config{Grid: [3]int{64, 64, 64}, Chunk: [3]int{16, 16, 16}, Iterations: 100}, "job digest 930c1576c77bc0a5"},
		{Config{Grid: [3]int{16, 16, 16}, Chunk: [3]int{16, 16, 16}, Iterations: 10}, "job digest 75da0f680115a01f"},
		{Config{Grid: [3]int{32, 16, 8}, Chunk: [3]int{16, 8, 4}, Iterations: 30}, "job digest 1bb9c77b34bd56a5"},
	} {
		if testing.Short() && tc.cfg.Iterations > 30 {
			continue
		}
		if got := serialDigest(tc.cfg); got != tc.want {
			t.Errorf("grid %v chunk %v, %d iterations: %s, want %s", tc.cfg.Grid, tc.cfg.Chunk, tc.cfg.Iterations, got, tc.want)
		}
	}
}
