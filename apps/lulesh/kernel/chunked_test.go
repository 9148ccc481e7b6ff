package kernel

import (
	"errors"
	"math"
	"testing"
)

// TestChunkedRunMatchesSerial drives several chunkings of a 10³ mesh
// through the phases and exchanges, and checks them against the serial
// kernel and the reference row: same iteration count, e(0) within 1e-10,
// every element's energy close, and shared nodes bitwise identical in
// every chunk that holds them after every cycle.
func TestChunkedRunMatchesSerial(t *testing.T) {
	const n = 10
	serial, err := NewSerialDomain(n)
	if err != nil {
		t.Fatal(err)
	}
	for !serial.Finished(0) {
		if err := serial.Step(); err != nil {
			t.Fatal(err)
		}
	}
	chunkings := []struct {
		name     string
		chunking Chunking
	}{
		{"2x2x2", Chunking{{5, 5}, {5, 5}, {5, 5}}},
		{"uneven-2x1x3", Chunking{{3, 7}, {10}, {2, 4, 4}}},
	}
	if raceDetectorEnabled {
		chunkings = chunkings[:1]
	}
	for _, tc := range chunkings {
		t.Run(tc.name, func(t *testing.T) {
			g, err := newChunkGrid(n, tc.chunking)
			if err != nil {
				t.Fatal(err)
			}
			origin := g.domains[0]
			for !origin.Finished(0) {
				if err := g.step(); err != nil {
					t.Fatal(err)
				}
				checkSharedNodesAgree(t, g)
			}
			if origin.Cycle() != 231 || origin.Cycle() != serial.Cycle() {
				t.Errorf("chunked run took %d cycles, serial %d, reference 231", origin.Cycle(), serial.Cycle())
			}
			e := g.energies(n)
			if rel := math.Abs(e[0]-27205.311684703469) / 27205.311684703469; rel > 1e-10 {
				t.Errorf("e(0) = %.17g, relative difference to the reference %.3g", e[0], rel)
			}
			worst := 0.0
			for i, se := range serial.e {
				worst = max(worst, math.Abs(e[i]-se)/max(math.Abs(se), 1e-300))
			}
			t.Logf("largest relative energy difference to serial: %.3g", worst)
			if worst > 1e-9 {
				t.Errorf("energies differ from serial by up to %.3g relative", worst)
			}
		})
	}
}

// checkSharedNodesAgree asserts that every node shared by two chunks has
// the same position and velocity, to the bit, in both.
func checkSharedNodesAgree(t *testing.T, g *chunkGrid) {
	t.Helper()
	for i, d := range g.domains {
		for _, dir := range d.Neighbours() {
			j, ok := g.neighbour(i, dir)
			if !ok {
				t.Fatalf("chunk %v lists a neighbour in direction %v that the grid lacks", g.positions[i], dir)
			}
			other := g.domains[j]
			mine, theirs := d.SharedNodes(dir), other.SharedNodes(dir.Opposite())
			for k, n := range mine {
				m := theirs[k]
				if d.x[n] != other.x[m] || d.y[n] != other.y[m] || d.z[n] != other.z[m] ||
					d.xd[n] != other.xd[m] || d.yd[n] != other.yd[m] || d.zd[n] != other.zd[m] {
					t.Fatalf("cycle %d: node %d of chunk %v and node %d of chunk %v differ",
						d.Cycle(), n, g.positions[i], m, g.positions[j])
				}
			}
		}
	}
}

// TestRunChunkedIsReproducibleAndNearSerial checks the exported driver:
// the same chunking gives the same digest twice, and the 50-cycle row of
// the reference table within its tolerance.
func TestRunChunkedIsReproducibleAndNearSerial(t *testing.T) {
	chunking, err := UniformChunking(10, [3]int{2, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	first, err := RunChunked(10, chunking, 50)
	if err != nil {
		t.Fatal(err)
	}
	second, err := RunChunked(10, chunking, 50)
	if err != nil {
		t.Fatal(err)
	}
	if first.Digest != second.Digest {
		t.Fatalf("digests %016x and %016x", first.Digest, second.Digest)
	}
	if first.Iterations != 50 {
		t.Errorf("iterations %d, want 50", first.Iterations)
	}
	if rel := math.Abs(first.FinalOriginEnergy-81047.957518451338) / 81047.957518451338; rel > 1e-10 {
		t.Errorf("e(0) = %.17g, relative difference to the reference %.3g", first.FinalOriginEnergy, rel)
	}
}

func TestUniformChunkingRejectsUnevenCounts(t *testing.T) {
	if _, err := UniformChunking(10, [3]int{3, 1, 1}); !errors.Is(err, ErrBadChunk) {
		t.Errorf("3 chunks of 10: %v, want ErrBadChunk", err)
	}
	if _, _, err := (Chunking{{5, 4}, {10}, {10}}).Chunks(10); !errors.Is(err, ErrBadChunk) {
		t.Errorf("sizes summing to 9: %v, want ErrBadChunk", err)
	}
}
