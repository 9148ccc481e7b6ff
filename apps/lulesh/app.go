package lulesh

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// App is the lulesh application, run by `gochare run lulesh`.
var App = appkit.Spec[Config]{
	Name:    appName,
	Summary: "LULESH 2.0 shock hydrodynamics (Sedov blast) on an N³ mesh split into chunks with 26-neighbour node sums",
	Parse:   ParseConfig,
	Declare: func(j *actor.Job, cfg Config) { declare(j, cfg, time.Now) },
	// Cycle c offers step c-1 (see onTimestep), up to the cycle limit;
	// without one the run ends at the stop time, after a number of cycles
	// only the run tells. The stop time may also come before the limit.
	LastStep: func(cfg Config) (uint64, bool) {
		if cfg.Iterations < 1 {
			return 0, false
		}
		return uint64(cfg.Iterations - 1), true
	},
}.App()

// Names of the application, its collection and its reducer, as the
// runtime shows them.
const (
	appName          = "lulesh"
	chunksCollection = "chunks"
	gatherReducer    = "lulesh.energies"
)

// program holds the declarations of one job: its configuration and the
// proxies the handlers send through. It is built identically on every PE
// by Define and is never changed afterwards.
type program struct {
	cfg   Config
	grid  [3]int      // chunks along x, y, z
	shape actor.Shape // of the chunk collection: (x, y, z)

	begin *actor.Proxy[*Begin]
	// sharedNodes and faceGradients are the exchange handlers by region
	// size: a commutative region has a fixed number of messages per
	// handler, and a chunk's neighbour count depends on where it is in
	// the grid, so there is one handler per count that occurs.
	sharedNodes   map[int]*actor.Proxy[*SharedNodes]
	faceGradients map[int]*actor.Proxy[*FaceGradients]
	timestep      *actor.Proxy[*actor.ReductionResult]
	// results is the main element's callback for the final energies.
	results actor.Callback
	gather  actor.Reducer
}

// declare declares the job; now reads the clock of the main element's PE,
// for the elapsed time only.
func declare(j *actor.Job, cfg Config, now func() time.Time) *program {
	grid := cfg.ChunkGrid()
	p := &program{cfg: cfg, grid: grid, shape: actor.Shape{grid[0], grid[1], grid[2]},
		sharedNodes: map[int]*actor.Proxy[*SharedNodes]{}, faceGradients: map[int]*actor.Proxy[*FaceGradients]{}}
	p.gather = j.CustomReducer(gatherReducer, appkit.ConcatBytes)
	p.results = appkit.Main{Clock: now, Begin: p.start, Finish: p.finish}.Declare(j)

	chunks := actor.NewCollection(j, chunksCollection, p.shape, actor.BlockMap,
		func(at actor.Index) *Chunk {
			c := newChunk(cfg, positionOf(at))
			c.resume = p.startForces
			return c
		})
	// A sync point in every cycle, once the time step is used (see
	// onTimestep); the main collection has none.
	chunks.UsesAtSync()
	p.begin = actor.Handle(chunks, "begin", actor.AnnotateOrdered(), p.onBegin,
		actor.KeyBy(func(*Begin) uint64 { return beginKey }))
	// Time-step reduction n starts cycle n+1: its key says so, and a chunk
	// expects it once it has contributed.
	p.timestep = actor.Handle(chunks, "timestep", actor.AnnotateOrdered(), p.onTimestep,
		actor.KeyBy(func(r *actor.ReductionResult) uint64 { return timestepKey(int(r.GetNumber()) + 1) }))
	sharedSizes, faceSizes := regionSizes(grid)
	for _, n := range sharedSizes {
		p.sharedNodes[n] = actor.Handle(chunks, fmt.Sprintf("shared_nodes_%d", n), actor.AnnotateCommutative(n), p.onSharedNodes,
			actor.KeyBy(func(m *SharedNodes) uint64 { return m.Key }),
			actor.WhenComplete(p.onSharedNodesComplete))
	}
	for _, n := range faceSizes {
		p.faceGradients[n] = actor.Handle(chunks, fmt.Sprintf("face_gradients_%d", n), actor.AnnotateCommutative(n), p.onFaceGradients,
			actor.KeyBy(func(m *FaceGradients) uint64 { return m.Key }),
			actor.WhenComplete(p.onFaceGradientsComplete))
	}
	return p
}

func positionOf(at actor.Index) [3]int { return [3]int{int(at[0]), int(at[1]), int(at[2])} }

func indexOf(pos [3]int) actor.Index { return actor.Idx(pos[0], pos[1], pos[2]) }

func step(pos [3]int, dir kernel.Direction) [3]int {
	return [3]int{pos[0] + dir[0], pos[1] + dir[1], pos[2] + dir[2]}
}

// neighbourCounts returns how many neighbours (of 26) and how many face
// neighbours (of 6) the chunk at pos has in a grid of chunks.
func neighbourCounts(grid, pos [3]int) (all, faces int) {
	all = 1
	for axis := range 3 {
		options := 1
		if pos[axis] > 0 {
			options++
		}
		if pos[axis] < grid[axis]-1 {
			options++
		}
		all *= options
		faces += options - 1
	}
	return all - 1, faces
}

// regionSizes lists, in increasing order, the neighbour counts and face
// neighbour counts that occur in the grid (0 excluded: a chunk without
// neighbours has no region).
func regionSizes(grid [3]int) (shared, faces []int) {
	seenShared, seenFaces := map[int]bool{}, map[int]bool{}
	for x := range grid[0] {
		for y := range grid[1] {
			for z := range grid[2] {
				all, f := neighbourCounts(grid, [3]int{x, y, z})
				if all > 0 && !seenShared[all] {
					seenShared[all] = true
					shared = append(shared, all)
				}
				if f > 0 && !seenFaces[f] {
					seenFaces[f] = true
					faces = append(faces, f)
				}
			}
		}
	}
	sort.Ints(shared)
	sort.Ints(faces)
	return shared, faces
}

// fail reports an error of the physics (the reference aborts there) or
// of the protocol and ends the job with status 1.
func fail(ctx actor.Context, err error) {
	ctx.Printf("error: %v", err)
	ctx.Exit(1)
}

// start begins the run: every chunk sends its nodal masses.
func (p *program) start(ctx actor.Context) { p.begin.Broadcast(ctx, &Begin{}) }

// onBegin sums the nodal masses of shared nodes: this chunk's share goes
// to every neighbour, and theirs come back as a region of key massKey.
func (p *program) onBegin(c *Chunk, ctx actor.Context, _ *Begin) {
	c.expectStage(stageCreated, "Begin")
	c.stage = stageMass
	if !p.sendShared(c, ctx, massKey, c.domain.NodalMass()) {
		p.contributeTimestep(c, ctx)
	}
}

// sendShared expects the region of key and sends this chunk's values of
// fields on the nodes it shares with each neighbour. It reports whether
// the chunk has neighbours (whether a region will come).
func (p *program) sendShared(c *Chunk, ctx actor.Context, key uint64, fields ...[]float64) bool {
	neighbours := c.domain.Neighbours()
	if len(neighbours) == 0 {
		return false
	}
	ctx.Expect(key)
	for _, dir := range neighbours {
		to := step(c.position, dir)
		all, _ := neighbourCounts(p.grid, to)
		back := dir.Opposite()
		p.sharedNodes[all].Send(ctx, indexOf(to), &SharedNodes{
			Key:   key,
			FromX: int32(back[0]), FromY: int32(back[1]), FromZ: int32(back[2]),
			Values: c.packShared(dir, fields...),
		})
	}
	return true
}

// onSharedNodes is the per-message handler of a shared-node exchange: it
// keeps the neighbour's values in their own slot and nothing else, so the
// messages of a region commute.
func (p *program) onSharedNodes(c *Chunk, ctx actor.Context, m *SharedNodes) {
	components := 3
	if m.Key == massKey {
		c.expectStage(stageMass, "nodal masses")
		components = 1
	} else {
		c.expectStage(stageForces, "forces")
		if m.Key != forcesKey(c.domain.Cycle()) {
			panic(fmt.Sprintf("lulesh: chunk %v received forces of key %d in cycle %d", c.position, m.Key, c.domain.Cycle()))
		}
	}
	from := kernel.Direction{int(m.FromX), int(m.FromY), int(m.FromZ)}
	if err := c.storeShared(from, m.Values, components); err != nil {
		panic(err)
	}
}

// onSharedNodesComplete adds the received values in the fixed order of
// kernel.Domain.SumSharedNodes and goes on with the cycle.
func (p *program) onSharedNodesComplete(c *Chunk, ctx actor.Context, key uint64) {
	if key == massKey {
		c.sumShared(c.domain.NodalMass(), 0)
		c.clearReceived()
		p.contributeTimestep(c, ctx)
		return
	}
	fx, fy, fz := c.domain.Forces()
	c.sumShared(fx, 0)
	c.sumShared(fy, 1)
	c.sumShared(fz, 2)
	c.clearReceived()
	p.afterForces(c, ctx)
}

// contributeTimestep contributes the chunk's Courant and hydro limits to
// the min reduction that every chunk receives.
func (p *program) contributeTimestep(c *Chunk, ctx actor.Context) {
	c.stage = stageTimestep
	ctx.Expect(timestepKey(c.domain.Cycle() + 1))
	courant, hydro := c.domain.TimeConstraints()
	ctx.Contribute(actor.Min, actor.Value{Floats: []float64{courant, hydro}}, p.timestep.All())
}

// onTimestep starts a cycle with the global time constraints: time
// increment, nodal forces, and their exchange.
func (p *program) onTimestep(c *Chunk, ctx actor.Context, r *actor.ReductionResult) {
	c.expectStage(stageTimestep, "the time step")
	if r.GetReducer() != actor.Min.Name() || len(r.GetFloats()) != 2 {
		panic(fmt.Sprintf("lulesh: time-step reduction by %q with %d floats, want min of 2", r.GetReducer(), len(r.GetFloats())))
	}
	d := c.domain
	d.TimeIncrement(r.Floats[0], r.Floats[1])
	if p.cfg.Progress > 0 && d.Cycle()%p.cfg.Progress == 0 && c.position == [3]int{} {
		ctx.Printf("cycle = %d, time = %e, dt = %e", d.Cycle(), d.Time(), d.DeltaTime())
	}
	// The sync point at the end of cycle Cycle()-1 (the setup is cycle
	// 0): every chunk has used the reduction result, so no message of the
	// job is in flight, the regions of the cycle are closed and the
	// chunk's whole state is its domain (time, dt and cycle included).
	// When the runtime takes it, the cycle goes on in ResumeFromSync.
	c.stage = stageSync
	if ctx.AtSync(uint64(d.Cycle() - 1)) {
		return
	}
	p.startForces(c, ctx)
}

// startForces computes the nodal forces of the cycle whose time step is
// set and sends them to the neighbours.
func (p *program) startForces(c *Chunk, ctx actor.Context) {
	c.expectStage(stageSync, "the resumption of its cycle")
	d := c.domain
	if err := d.NodalForcePhase(); err != nil {
		fail(ctx, fmt.Errorf("chunk %v, cycle %d: %w", c.position, d.Cycle(), err))
		return
	}
	c.stage = stageForces
	fx, fy, fz := d.Forces()
	if !p.sendShared(c, ctx, forcesKey(d.Cycle()), fx, fy, fz) {
		p.afterForces(c, ctx)
	}
}

// afterForces moves the nodes, computes the element kinematics and
// gradients, and sends the face gradients.
func (p *program) afterForces(c *Chunk, ctx actor.Context) {
	d := c.domain
	d.NodalMotionPhase()
	if err := d.ElementGradientPhase(); err != nil {
		fail(ctx, fmt.Errorf("chunk %v, cycle %d: %w", c.position, d.Cycle(), err))
		return
	}
	c.stage = stageGradients
	c.gradientFaces = 0
	key := gradientsKey(d.Cycle())
	sent := false
	for _, f := range kernel.Faces() {
		if !d.HasNeighbour(f.Direction()) {
			continue
		}
		if !sent {
			ctx.Expect(key)
			sent = true
		}
		to := step(c.position, f.Direction())
		_, faces := neighbourCounts(p.grid, to)
		p.faceGradients[faces].Send(ctx, indexOf(to), &FaceGradients{
			Key:    key,
			Face:   int32(f.Opposite()),
			Values: d.PackFaceGradients(f, nil),
		})
	}
	if !sent {
		p.afterGradients(c, ctx)
	}
}

// onFaceGradients is the per-message handler of the gradient exchange:
// it fills the ghost slots of its own face and nothing else.
func (p *program) onFaceGradients(c *Chunk, ctx actor.Context, m *FaceGradients) {
	c.expectStage(stageGradients, "face gradients")
	if m.Key != gradientsKey(c.domain.Cycle()) {
		panic(fmt.Sprintf("lulesh: chunk %v received gradients of key %d in cycle %d", c.position, m.Key, c.domain.Cycle()))
	}
	if err := c.storeGradients(kernel.Face(m.Face), m.Values); err != nil {
		panic(err)
	}
}

func (p *program) onFaceGradientsComplete(c *Chunk, ctx actor.Context, _ uint64) {
	p.afterGradients(c, ctx)
}

// afterGradients finishes the cycle (Q, EOS, volumes, time constraints)
// and contributes either to the next time step or, after the last cycle,
// the chunk's energies to the final gather.
func (p *program) afterGradients(c *Chunk, ctx actor.Context) {
	d := c.domain
	if err := d.ElementMaterialPhase(); err != nil {
		fail(ctx, fmt.Errorf("chunk %v, cycle %d: %w", c.position, d.Cycle(), err))
		return
	}
	if !d.Finished(p.cfg.Iterations) {
		p.contributeTimestep(c, ctx)
		return
	}
	c.stage = stageDone
	record := encodeRecord(p.shape.Linear(ctx.Index()), d.Cycle(), d.Energies())
	ctx.Contribute(p.gather, actor.Value{Bytes: record}, p.results)
}

// A record is one chunk's final state, little-endian: its linear index
// in the chunk collection (uint32), its cycle count (uint32), its number
// of elements (uint32) and their energies (float64 bits, local element
// order, x fastest). The reducer concatenates records; the main element
// places them by index, so the result does not depend on the combining
// order.
const recordHeaderBytes = 3 * 4

func encodeRecord(linear, cycle int, energies []float64) []byte {
	out := make([]byte, 0, recordHeaderBytes+8*len(energies))
	out = binary.LittleEndian.AppendUint32(out, uint32(linear))
	out = binary.LittleEndian.AppendUint32(out, uint32(cycle))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(energies)))
	for _, e := range energies {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(e))
	}
	return out
}

// gatherEnergies decodes the records of every chunk into the energies of
// the whole mesh in global element order (x fastest, then y, then z) and
// the common cycle count, checking that each chunk reported once.
func gatherEnergies(cfg Config, data []byte) (energies []float64, cycles int, err error) {
	n, grid := cfg.Size, cfg.ChunkGrid()
	shape := actor.Shape{grid[0], grid[1], grid[2]}
	perChunk := cfg.Chunk[0] * cfg.Chunk[1] * cfg.Chunk[2]
	energies = make([]float64, n*n*n)
	seen := make([]bool, shape.Size())
	cycles = -1
	for len(data) > 0 {
		if len(data) < recordHeaderBytes {
			return nil, 0, fmt.Errorf("lulesh: %d trailing bytes of chunk records", len(data))
		}
		linear := int(binary.LittleEndian.Uint32(data))
		cycle := int(binary.LittleEndian.Uint32(data[4:]))
		count := int(binary.LittleEndian.Uint32(data[8:]))
		data = data[recordHeaderBytes:]
		switch {
		case linear >= len(seen) || seen[linear]:
			return nil, 0, fmt.Errorf("lulesh: chunk record for linear index %d (of %d) is out of range or repeated", linear, len(seen))
		case count != perChunk || len(data) < 8*count:
			return nil, 0, fmt.Errorf("lulesh: chunk record %d has %d energies (%d bytes left), want %d", linear, count, len(data), perChunk)
		case cycles >= 0 && cycle != cycles:
			return nil, 0, fmt.Errorf("lulesh: chunk record %d ended at cycle %d, others at %d", linear, cycle, cycles)
		}
		seen[linear] = true
		cycles = cycle
		pos := positionOf(shape.At(linear))
		for el := range count {
			i, j, k := el%cfg.Chunk[0], el/cfg.Chunk[0]%cfg.Chunk[1], el/(cfg.Chunk[0]*cfg.Chunk[1])
			x, y, z := pos[0]*cfg.Chunk[0]+i, pos[1]*cfg.Chunk[1]+j, pos[2]*cfg.Chunk[2]+k
			energies[(z*n+y)*n+x] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*el:]))
		}
		data = data[8*count:]
	}
	for linear, ok := range seen {
		if !ok {
			return nil, 0, fmt.Errorf("lulesh: no record from chunk %v", shape.At(linear))
		}
	}
	return energies, cycles, nil
}

// finish takes every chunk's energies and returns the report.
func (p *program) finish(_ actor.Context, run appkit.Run) ([]string, int, error) {
	r := run.Results[0]
	if r.GetReducer() != gatherReducer {
		return nil, 1, fmt.Errorf("lulesh: results combined by reducer %q, want %q", r.GetReducer(), gatherReducer)
	}
	energies, cycles, err := gatherEnergies(p.cfg, r.GetBytes())
	if err != nil {
		return nil, 1, err
	}
	lines, status := report(p.cfg, kernel.Summarise(p.cfg.Size, cycles, energies, run.Elapsed), run.PEs)
	return lines, status, nil
}
