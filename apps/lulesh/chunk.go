package lulesh

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// stage is where a chunk is in its cycle: what it waits for.
type stage uint8

const (
	// stageCreated: before Begin.
	stageCreated stage = iota
	// stageMass: waiting for the neighbours' nodal masses (setup).
	stageMass
	// stageTimestep: contributed its time constraints, waiting for the
	// global minimum.
	stageTimestep
	// stageForces: waiting for the neighbours' forces on shared nodes.
	stageForces
	// stageGradients: waiting for the neighbours' face gradients.
	stageGradients
	// stageDone: contributed its final energies.
	stageDone
	// stageSync: used the time step of its cycle and waits at the sync
	// point before the cycle's forces (appended last: a stage's number is
	// packed).
	stageSync
	numStages
)

func (s stage) String() string {
	names := [...]string{"created", "mass", "timestep", "forces", "gradients", "done", "sync"}
	if s < numStages {
		return names[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Message keys: they fix the order in which a chunk handles its messages
// (a task expects key 0 when created). Begin is key 0, the nodal-mass sum
// key 1; cycle c (c >= 1, counted after its time increment) starts with
// the time-step result of key 3c-1, then uses 3c for its forces and
// 3c+1 for its face gradients.
const (
	beginKey = 0
	massKey  = 1
)

func timestepKey(cycle int) uint64  { return 3*uint64(cycle) - 1 }
func forcesKey(cycle int) uint64    { return 3 * uint64(cycle) }
func gradientsKey(cycle int) uint64 { return 3*uint64(cycle) + 1 }

// numSlots is the number of neighbour directions, the chunk itself
// included (kernel's direction slots: (dz+1)·9 + (dy+1)·3 + dx+1).
const numSlots = 27

func directionSlot(dir kernel.Direction) int { return (dir[2]+1)*9 + (dir[1]+1)*3 + dir[0] + 1 }

// Chunk is one task of the chunk collection: a kernel.Domain covering a
// box of the mesh, where it is in its cycle, and the neighbours' shared
// node values received in the open exchange.
//
// Its methods are the task's state machine without the runtime; the
// handlers in app.go call them and do the sends.
type Chunk struct {
	// Fixed by the configuration and the index; not packed.
	position [3]int
	chunk    kernel.Chunk
	// resume continues the cycle after a sync point (set by the program
	// that declares the collection; nil for a chunk made on its own).
	resume func(*Chunk, actor.Context)

	domain *kernel.Domain
	stage  stage
	// received holds, per direction slot, the values the neighbour in
	// that direction sent for the open shared-node exchange (nil: not
	// yet received).
	received [numSlots][]float64
	// gradientFaces has bit f set once the ghost gradients of face f of
	// the open gradient exchange are stored.
	gradientFaces uint8
}

// newChunk builds the chunk at grid position pos of the configuration.
func newChunk(cfg Config, pos [3]int) *Chunk {
	c := &Chunk{position: pos, chunk: kernel.Chunk{
		MeshSize: cfg.Size,
		Offset:   [3]int{pos[0] * cfg.Chunk[0], pos[1] * cfg.Chunk[1], pos[2] * cfg.Chunk[2]},
		Size:     cfg.Chunk,
	}}
	d, err := kernel.NewDomain(kernel.Config{Chunk: c.chunk, Regions: kernel.ReferenceRegions()})
	if err != nil {
		// Validate accepted the configuration, so every chunk fits.
		panic(fmt.Sprintf("lulesh: chunk %v: %v", pos, err))
	}
	c.domain = d
	return c
}

// ResumeFromSync continues after a sync point the runtime took (a
// checkpoint), or after the chunk was restored from one: with the cycle's
// forces, exactly as the time-step handler would have gone on.
func (c *Chunk) ResumeFromSync(ctx actor.Context) { c.resume(c, ctx) }

// expectStage panics if the chunk is not at stage want: a message reached
// it out of the protocol's order.
func (c *Chunk) expectStage(want stage, what string) {
	if c.stage != want {
		panic(fmt.Sprintf("lulesh: chunk %v received %s at stage %v, want %v (cycle %d)",
			c.position, what, c.stage, want, c.domain.Cycle()))
	}
}

// storeShared keeps the values the neighbour in direction from sent for
// the open shared-node exchange.
func (c *Chunk) storeShared(from kernel.Direction, values []float64, components int) error {
	if !c.domain.HasNeighbour(from) {
		return fmt.Errorf("lulesh: chunk %v received shared nodes from direction %v, where it has no neighbour", c.position, from)
	}
	slot := directionSlot(from)
	if c.received[slot] != nil {
		return fmt.Errorf("lulesh: chunk %v received shared nodes from direction %v twice", c.position, from)
	}
	if want := components * len(c.domain.SharedNodes(from)); len(values) != want {
		return fmt.Errorf("lulesh: chunk %v received %d values from direction %v, want %d", c.position, len(values), from, want)
	}
	c.received[slot] = values
	return nil
}

// sumShared adds the received component-th part of every neighbour's
// values into field (kernel.Domain.SumSharedNodes: in the global order of
// the chunks, so every holder of a node computes the same bits).
func (c *Chunk) sumShared(field []float64, component int) {
	c.domain.SumSharedNodes(field, func(dir kernel.Direction) []float64 {
		values := c.received[directionSlot(dir)]
		n := len(c.domain.SharedNodes(dir))
		if values == nil || len(values) < (component+1)*n {
			panic(fmt.Sprintf("lulesh: chunk %v sums shared nodes without the values from direction %v", c.position, dir))
		}
		return values[component*n : (component+1)*n]
	})
}

// storeGradients fills the ghost slots of face f with the gradients of
// the neighbour across it.
func (c *Chunk) storeGradients(f kernel.Face, values []float64) error {
	if f < kernel.XMinus || f > kernel.ZPlus || !c.domain.HasNeighbour(f.Direction()) {
		return fmt.Errorf("lulesh: chunk %v received gradients for face %d, which has no neighbour", c.position, int(f))
	}
	if c.gradientFaces&(1<<f) != 0 {
		return fmt.Errorf("lulesh: chunk %v received gradients for face %v twice", c.position, f)
	}
	ghosts := c.domain.GhostGradients(f)
	if len(values) != len(ghosts) {
		return fmt.Errorf("lulesh: chunk %v received %d gradients for face %v, which has %d ghost slots", c.position, len(values), f, len(ghosts))
	}
	copy(ghosts, values)
	c.gradientFaces |= 1 << f
	return nil
}

// clearReceived forgets the values of the exchange just summed.
func (c *Chunk) clearReceived() {
	for i := range c.received {
		c.received[i] = nil
	}
}

// packShared returns this chunk's own values for its neighbour in
// direction dir: the given fields one after the other.
func (c *Chunk) packShared(dir kernel.Direction, fields ...[]float64) []float64 {
	out := make([]float64, 0, len(fields)*len(c.domain.SharedNodes(dir)))
	for _, f := range fields {
		out = c.domain.PackSharedNodes(dir, f, out)
	}
	return out
}

// Packed form of a Chunk, little-endian:
//
//	"LULC" version(2)
//	position x, y, z (uint32 each), stage, gradient face mask (1 byte each)
//	received: a 27-bit mask (uint32), then for each set slot in order
//	   the value count (uint32) and the values (float64 bits)
//	the domain's length (uint64) and its state (kernel.Domain.MarshalBinary)
//
// The position and the chunk geometry are fixed by the configuration and
// the index; the position is packed only to refuse a state unpacked at
// another index (the domain's state checks the geometry itself).
const (
	chunkMagic   = "LULC"
	chunkVersion = 2
)

// errBadChunkState reports a packed chunk that UnmarshalBinary refuses.
var errBadChunkState = errors.New("lulesh: bad packed chunk")

// MarshalBinary packs the chunk's state for checkpoint and migration.
func (c *Chunk) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(nil)
}

// AppendBinary appends what MarshalBinary returns to out (a checkpoint
// packs into memory it reuses).
func (c *Chunk) AppendBinary(out []byte) ([]byte, error) {
	size := len(chunkMagic) + 1 + 3*4 + 2 + 4 + 8 + c.domain.StateSize()
	var mask uint32
	for slot, values := range c.received {
		if values != nil {
			mask |= 1 << slot
			size += 4 + 8*len(values)
		}
	}
	out = slices.Grow(out, size)
	out = append(out, chunkMagic...)
	out = append(out, chunkVersion)
	for _, p := range c.position {
		out = binary.LittleEndian.AppendUint32(out, uint32(p))
	}
	out = append(out, byte(c.stage), c.gradientFaces)
	out = binary.LittleEndian.AppendUint32(out, mask)
	for _, values := range c.received {
		if values == nil {
			continue
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(values)))
		for _, v := range values {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	}
	out = binary.LittleEndian.AppendUint64(out, uint64(c.domain.StateSize()))
	out, err := c.domain.AppendBinary(out)
	if err != nil {
		return nil, fmt.Errorf("lulesh: chunk %v: %w", c.position, err)
	}
	return out, nil
}

// UnmarshalBinary restores a state packed by MarshalBinary into a chunk
// made for the same configuration and position. A refused state leaves
// the chunk as it was.
func (c *Chunk) UnmarshalBinary(data []byte) error {
	header := len(chunkMagic) + 1 + 3*4 + 2 + 4
	if len(data) < header || string(data[:len(chunkMagic)]) != chunkMagic || data[len(chunkMagic)] != chunkVersion {
		return fmt.Errorf("%w: %d bytes that are not %q version %d", errBadChunkState, len(data), chunkMagic, chunkVersion)
	}
	rest := data[len(chunkMagic)+1:]
	var pos [3]int
	for d := range pos {
		pos[d] = int(binary.LittleEndian.Uint32(rest[4*d:]))
	}
	if pos != c.position {
		return fmt.Errorf("%w: chunk %v unpacked into chunk %v", errBadChunkState, pos, c.position)
	}
	st := stage(rest[12])
	if st >= numStages {
		return fmt.Errorf("%w: chunk %v has invalid stage %d", errBadChunkState, pos, st)
	}
	faces := rest[13]
	mask := binary.LittleEndian.Uint32(rest[14:])
	rest = rest[18:]
	if faces>>len(kernel.Faces()) != 0 {
		return fmt.Errorf("%w: chunk %v has invalid gradient face mask %x", errBadChunkState, pos, faces)
	}
	if mask>>numSlots != 0 {
		return fmt.Errorf("%w: chunk %v has invalid received mask %x", errBadChunkState, pos, mask)
	}
	var received [numSlots][]float64
	for slot := range received {
		if mask&(1<<slot) == 0 {
			continue
		}
		if len(rest) < 4 {
			return fmt.Errorf("%w: chunk %v truncated in received values", errBadChunkState, pos)
		}
		n := int(binary.LittleEndian.Uint32(rest))
		rest = rest[4:]
		if n > len(rest)/8 {
			return fmt.Errorf("%w: chunk %v truncated in received values", errBadChunkState, pos)
		}
		values := make([]float64, n)
		for i := range values {
			values[i] = math.Float64frombits(binary.LittleEndian.Uint64(rest[8*i:]))
		}
		received[slot] = values
		rest = rest[8*n:]
	}
	if len(rest) < 8 {
		return fmt.Errorf("%w: chunk %v truncated before its domain", errBadChunkState, pos)
	}
	n := binary.LittleEndian.Uint64(rest)
	rest = rest[8:]
	if n != uint64(len(rest)) {
		return fmt.Errorf("%w: chunk %v has a domain of %d bytes, %d bytes follow", errBadChunkState, pos, n, len(rest))
	}
	if err := c.domain.UnmarshalBinary(rest); err != nil {
		return fmt.Errorf("%w: chunk %v: %w", errBadChunkState, pos, err)
	}
	c.stage, c.received, c.gradientFaces = st, received, faces
	return nil
}
