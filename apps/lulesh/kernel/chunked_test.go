package kernel

import (
	"math"
	"testing"
)

// chunkGrid is an in-process stand-in for the distributed run: a tensor
// grid of chunks driven phase by phase, with the exchanges done by
// copying between domains in one goroutine.
type chunkGrid struct {
	splits  [3][]int // chunk edge lengths along each axis
	domains map[[3]int]*Domain
	order   [][3]int // chunk positions, z-major
}

func newChunkGrid(t *testing.T, n int, splits [3][]int) *chunkGrid {
	t.Helper()
	g := &chunkGrid{splits: splits, domains: map[[3]int]*Domain{}}
	offsets := [3][]int{}
	for axis := range 3 {
		total := 0
		for _, s := range splits[axis] {
			offsets[axis] = append(offsets[axis], total)
			total += s
		}
		if total != n {
			t.Fatalf("splits along axis %d sum to %d, mesh is %d", axis, total, n)
		}
	}
	for cz := range splits[2] {
		for cy := range splits[1] {
			for cx := range splits[0] {
				pos := [3]int{cx, cy, cz}
				chunk := Chunk{MeshSize: n,
					Offset: [3]int{offsets[0][cx], offsets[1][cy], offsets[2][cz]},
					Size:   [3]int{splits[0][cx], splits[1][cy], splits[2][cz]}}
				d, err := NewDomain(Config{Chunk: chunk, Regions: ReferenceRegions()})
				if err != nil {
					t.Fatal(err)
				}
				g.domains[pos] = d
				g.order = append(g.order, pos)
			}
		}
	}
	g.sumShared(func(d *Domain) []float64 { return d.NodalMass() })
	return g
}

func (g *chunkGrid) neighbour(pos [3]int, dir Direction) *Domain {
	return g.domains[[3]int{pos[0] + dir[0], pos[1] + dir[1], pos[2] + dir[2]}]
}

// sumShared performs the shared-node sum of one nodal field: every chunk
// packs its own values first, then sums.
func (g *chunkGrid) sumShared(field func(*Domain) []float64) {
	packed := map[[3]int]map[Direction][]float64{}
	for _, pos := range g.order {
		d := g.domains[pos]
		packed[pos] = map[Direction][]float64{}
		for _, dir := range d.Neighbours() {
			packed[pos][dir] = d.PackSharedNodes(dir, field(d), nil)
		}
	}
	for _, pos := range g.order {
		d := g.domains[pos]
		d.SumSharedNodes(field(d), func(dir Direction) []float64 {
			from := [3]int{pos[0] + dir[0], pos[1] + dir[1], pos[2] + dir[2]}
			return packed[from][dir.Opposite()]
		})
	}
}

func (g *chunkGrid) step(t *testing.T) {
	t.Helper()
	courant, hydro := math.Inf(1), math.Inf(1)
	for _, pos := range g.order {
		c, h := g.domains[pos].TimeConstraints()
		courant, hydro = min(courant, c), min(hydro, h)
	}
	for _, pos := range g.order {
		d := g.domains[pos]
		d.TimeIncrement(courant, hydro)
		if err := d.NodalForcePhase(); err != nil {
			t.Fatal(err)
		}
	}
	g.sumShared(func(d *Domain) []float64 { fx, _, _ := d.Forces(); return fx })
	g.sumShared(func(d *Domain) []float64 { _, fy, _ := d.Forces(); return fy })
	g.sumShared(func(d *Domain) []float64 { _, _, fz := d.Forces(); return fz })
	for _, pos := range g.order {
		d := g.domains[pos]
		d.NodalMotionPhase()
		if err := d.ElementGradientPhase(); err != nil {
			t.Fatal(err)
		}
	}
	for _, pos := range g.order {
		d := g.domains[pos]
		for _, f := range Faces {
			if across := g.neighbour(pos, f.Direction()); across != nil {
				copy(d.GhostGradients(f), across.PackFaceGradients(f.Opposite(), nil))
			}
		}
	}
	for _, pos := range g.order {
		if err := g.domains[pos].ElementMaterialPhase(); err != nil {
			t.Fatal(err)
		}
	}
}

// energies gathers the element energies into global element order.
func (g *chunkGrid) energies(n int) []float64 {
	e := make([]float64, n*n*n)
	for _, pos := range g.order {
		d := g.domains[pos]
		for el, energy := range d.Energies() {
			e[d.GlobalElement(el)] = energy
		}
	}
	return e
}

// TestChunkedRunMatchesSerial drives several chunkings of a 10³ mesh
// through the phases and exchanges, and checks them against the serial
// kernel and the reference row: same iteration count, e(0) within 1e-10,
// every element's energy close, and shared nodes bitwise identical in
// every chunk that holds them.
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
	chunkings := map[string][3][]int{
		"2x2x2":        {{5, 5}, {5, 5}, {5, 5}},
		"uneven-2x1x3": {{3, 7}, {10}, {2, 4, 4}},
	}
	if raceDetectorEnabled {
		delete(chunkings, "uneven-2x1x3")
	}
	for name, splits := range chunkings {
		t.Run(name, func(t *testing.T) {
			g := newChunkGrid(t, n, splits)
			origin := g.domains[[3]int{}]
			for !origin.Finished(0) {
				g.step(t)
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
	for _, pos := range g.order {
		d := g.domains[pos]
		for _, dir := range d.Neighbours() {
			other := g.neighbour(pos, dir)
			mine, theirs := d.SharedNodes(dir), other.SharedNodes(dir.Opposite())
			for i, n := range mine {
				m := theirs[i]
				if d.x[n] != other.x[m] || d.y[n] != other.y[m] || d.z[n] != other.z[m] ||
					d.xd[n] != other.xd[m] || d.yd[n] != other.yd[m] || d.zd[n] != other.zd[m] {
					t.Fatalf("cycle %d: node %d of chunk %v and node %d of chunk %v differ",
						d.Cycle(), n, pos, m, [3]int{pos[0] + dir[0], pos[1] + dir[1], pos[2] + dir[2]})
				}
			}
		}
	}
}
