package kernel

import (
	"fmt"
	"math"
	"time"
)

// Chunking splits the global mesh into a tensor grid of chunks: the chunk
// edge lengths along x, y and z, each list summing to the mesh size.
type Chunking [3][]int

// UniformChunking splits an n³ mesh into counts[0]·counts[1]·counts[2]
// equal chunks; each count must divide n.
func UniformChunking(n int, counts [3]int) (Chunking, error) {
	var c Chunking
	for axis, count := range counts {
		if count < 1 || n%count != 0 {
			return Chunking{}, fmt.Errorf("%w: %d chunks do not divide %d elements along axis %d",
				ErrBadChunk, count, n, axis)
		}
		for range count {
			c[axis] = append(c[axis], n/count)
		}
	}
	return c, nil
}

// Chunks lists the chunks of an n³ mesh with their grid positions, z
// slowest and x fastest.
func (c Chunking) Chunks(n int) (chunks []Chunk, positions [][3]int, err error) {
	var offsets [3][]int
	for axis := range 3 {
		total := 0
		for _, size := range c[axis] {
			offsets[axis] = append(offsets[axis], total)
			total += size
		}
		if total != n {
			return nil, nil, fmt.Errorf("%w: chunk sizes along axis %d sum to %d, mesh is %d",
				ErrBadChunk, axis, total, n)
		}
	}
	for cz := range c[2] {
		for cy := range c[1] {
			for cx := range c[0] {
				chunks = append(chunks, Chunk{
					MeshSize: n,
					Offset:   [3]int{offsets[0][cx], offsets[1][cy], offsets[2][cz]},
					Size:     [3]int{c[0][cx], c[1][cy], c[2][cz]},
				})
				positions = append(positions, [3]int{cx, cy, cz})
			}
		}
	}
	return chunks, positions, nil
}

// chunkGrid drives the chunks of one run in a single goroutine, phase by
// phase, doing the exchanges by copying between domains. A distributed
// run that uses SumSharedNodes and the ghost gradients computes the same
// bits as this grid for the same chunking.
type chunkGrid struct {
	domains   []*Domain
	positions [][3]int
	index     map[[3]int]int // grid position to index in domains
	packed    []map[Direction][]float64
	gradients []float64 // face gradients in transit
	// between, if set, is called at each phase boundary of step (where a
	// distributed run may checkpoint or migrate a chunk); tests use it.
	between func(boundary gridBoundary) error
}

// gridBoundary names a point between two phases of a cycle.
type gridBoundary int

const (
	afterNodalForces    gridBoundary = iota // before the force sums
	afterForceSums                          // before NodalMotionPhase
	afterGradients                          // before the ghost gradients
	afterGhostGradients                     // before ElementMaterialPhase
	afterCycle                              // before the next time step
	numGridBoundaries
)

func (g *chunkGrid) reachBoundary(b gridBoundary) error {
	if g.between == nil {
		return nil
	}
	return g.between(b)
}

func newChunkGrid(n int, chunking Chunking) (*chunkGrid, error) {
	chunks, positions, err := chunking.Chunks(n)
	if err != nil {
		return nil, err
	}
	g := &chunkGrid{positions: positions, index: map[[3]int]int{}}
	for i, chunk := range chunks {
		d, err := NewDomain(Config{Chunk: chunk, Regions: ReferenceRegions()})
		if err != nil {
			return nil, err
		}
		g.domains = append(g.domains, d)
		g.index[positions[i]] = i
		g.packed = append(g.packed, map[Direction][]float64{})
	}
	g.sumShared(func(d *Domain) []float64 { return d.NodalMass() })
	return g, nil
}

// neighbour is the index of chunk i's neighbour in direction dir, if any.
func (g *chunkGrid) neighbour(i int, dir Direction) (int, bool) {
	pos := g.positions[i]
	j, ok := g.index[[3]int{pos[0] + dir[0], pos[1] + dir[1], pos[2] + dir[2]}]
	return j, ok
}

// sumShared sums one nodal field over shared nodes: every chunk packs its
// own values first, then each sums what its neighbours packed.
func (g *chunkGrid) sumShared(field func(*Domain) []float64) {
	for i, d := range g.domains {
		for _, dir := range d.Neighbours() {
			g.packed[i][dir] = d.PackSharedNodes(dir, field(d), g.packed[i][dir][:0])
		}
	}
	for i, d := range g.domains {
		d.SumSharedNodes(field(d), func(dir Direction) []float64 {
			from, ok := g.neighbour(i, dir)
			if !ok {
				return nil
			}
			return g.packed[from][dir.Opposite()]
		})
	}
}

func (g *chunkGrid) step() error {
	courant, hydro := math.Inf(1), math.Inf(1)
	for _, d := range g.domains {
		c, h := d.TimeConstraints()
		courant, hydro = min(courant, c), min(hydro, h)
	}
	for _, d := range g.domains {
		d.TimeIncrement(courant, hydro)
		if err := d.NodalForcePhase(); err != nil {
			return err
		}
	}
	if err := g.reachBoundary(afterNodalForces); err != nil {
		return err
	}
	g.sumShared(func(d *Domain) []float64 { fx, _, _ := d.Forces(); return fx })
	g.sumShared(func(d *Domain) []float64 { _, fy, _ := d.Forces(); return fy })
	g.sumShared(func(d *Domain) []float64 { _, _, fz := d.Forces(); return fz })
	if err := g.reachBoundary(afterForceSums); err != nil {
		return err
	}
	for _, d := range g.domains {
		d.NodalMotionPhase()
		if err := d.ElementGradientPhase(); err != nil {
			return err
		}
	}
	if err := g.reachBoundary(afterGradients); err != nil {
		return err
	}
	for i, d := range g.domains {
		for _, f := range Faces() {
			across, ok := g.neighbour(i, f.Direction())
			if !ok {
				continue
			}
			g.gradients = g.domains[across].PackFaceGradients(f.Opposite(), g.gradients[:0])
			ghosts := d.GhostGradients(f)
			if len(g.gradients) != len(ghosts) {
				return fmt.Errorf("kernel: face %v of chunk %v: %d gradients for %d ghost slots",
					f, g.positions[i], len(g.gradients), len(ghosts))
			}
			copy(ghosts, g.gradients)
		}
	}
	if err := g.reachBoundary(afterGhostGradients); err != nil {
		return err
	}
	for _, d := range g.domains {
		if err := d.ElementMaterialPhase(); err != nil {
			return err
		}
	}
	return g.reachBoundary(afterCycle)
}

// energies gathers the element energies in global element order.
func (g *chunkGrid) energies(n int) []float64 {
	e := make([]float64, n*n*n)
	for _, d := range g.domains {
		for el, energy := range d.Energies() {
			e[d.GlobalElement(el)] = energy
		}
	}
	return e
}

// RunChunked runs the Sedov problem on an n³ mesh split by chunking, all
// chunks in this goroutine with in-memory exchanges, to the stop time or
// maxIterations cycles (<= 0: no limit). Its digest is what a distributed
// run with the same chunking must produce.
func RunChunked(n int, chunking Chunking, maxIterations int) (Result, error) {
	g, err := newChunkGrid(n, chunking)
	if err != nil {
		return Result{}, err
	}
	first := g.domains[0]
	start := time.Now()
	for !first.Finished(maxIterations) {
		if err := g.step(); err != nil {
			return Result{}, fmt.Errorf("cycle %d: %w", first.Cycle()+1, err)
		}
	}
	return Summarise(n, first.Cycle(), g.energies(n), time.Since(start)), nil
}
