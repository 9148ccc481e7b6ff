package stencil3d

import (
	"github.com/gochare/gochare/actor"
	"slices"

	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Chunk is one task of the chunk collection: a block of the grid with its
// halo, and where it is in the iteration.
//
// Its methods are the task's state machine, without the runtime: begin,
// storeFace for each face of the current iteration, then completeIteration
// once all six are in; the handlers in app.go call them and do the sends.
type Chunk struct {
	// Fixed by the configuration; not part of the packed state.
	block      Block
	iterations uint64
	// resume continues the run after a sync point (set by the program).
	resume func(*Chunk, actor.Context)

	started  bool
	finished bool
	// iteration is the number of sweeps done: the faces being collected
	// are those of this iteration.
	iteration uint64
	// received has bit s set once the halo on Side s of the current
	// iteration is stored.
	received uint8
	// temperature is the chunk's array, halo included (Block.At layout).
	temperature []float64
	// layers is where Step keeps the new values of two layers of the
	// array until it copies them into temperature. Step writes every point
	// of it before reading it, so it is not packed.
	layers []float64
	// halos holds the faces of the current iteration received so far (bit
	// s of received), not yet written into temperature's halo: Step writes
	// them row by row as it sweeps, and packing writes them first (flush),
	// so the packed state is that of a chunk that stored them at once.
	halos [NumSides][]byte
	// outgoing holds the faces of iteration outgoingFor taken by Step from
	// the new array, for the sends of that iteration; nil when none.
	outgoing     *[NumSides][]byte
	outgoingFor  uint64
	outgoingBufs [NumSides][]byte
	// faceBufs are the buffers Step writes the outgoing faces into. The
	// faces are given to the neighbours (Proxy.Give), buffers included,
	// so each iteration's come from the faces received the iteration
	// before: the face received for the halo on side s has the size of
	// this chunk's face on side s, and once Step has read it, it is this
	// chunk's own. A buffer that is missing (the first iteration, or the
	// received face went elsewhere) is allocated. Not packed.
	faceBufs [NumSides][]byte
	// inbox holds the messages of the faces in halos; spare the messages
	// whose faces Step has read, for this chunk's next sends (with a
	// buffer of the next faceBufs). Not packed.
	inbox, spare [NumSides]*Face
}

// allSides is the received mask of a complete ghost exchange.
const allSides = 1<<NumSides - 1

func newChunk(cfg Config) *Chunk {
	b := cfg.Block()
	return &Chunk{
		block:       b,
		iterations:  uint64(cfg.Iterations),
		temperature: make([]float64, b.Len()),
		layers:      make([]float64, 2*StepLayers(b)),
	}
}

// ResumeFromSync continues after a sync point the runtime took (a
// checkpoint), or after the chunk was restored from one.
func (c *Chunk) ResumeFromSync(ctx actor.Context) { c.resume(c, ctx) }

// begin applies the boundary condition before the first iteration.
func (c *Chunk) begin() error {
	if c.started {
		return errors.New("stencil3d: chunk began twice")
	}
	c.started = true
	ApplyBoundary(c.block, c.temperature)
	return nil
}

// storeFace stores the face of the given iteration received for the halo
// on side s.
func (c *Chunk) storeFace(iteration uint64, s Side, face []byte) error {
	switch {
	case !c.started || c.finished:
		return fmt.Errorf("stencil3d: face %v of iteration %d reached a chunk that is not iterating (started %v, finished %v)",
			s, iteration, c.started, c.finished)
	case iteration != c.iteration:
		return fmt.Errorf("stencil3d: face %v of iteration %d reached a chunk at iteration %d", s, iteration, c.iteration)
	case s < 0 || s >= NumSides:
		return fmt.Errorf("stencil3d: face for invalid side %d", int(s))
	case c.received&(1<<s) != 0:
		return fmt.Errorf("stencil3d: face %v of iteration %d received twice", s, iteration)
	}
	if len(face) != 8*c.block.FaceLen(s) {
		return fmt.Errorf("stencil3d: face %v of chunk %v has %d bytes, want %d (8 per point)", s, c.block, len(face), 8*c.block.FaceLen(s))
	}
	c.halos[s] = face
	c.received |= 1 << s
	return nil
}

// flush writes the faces received and not yet swept into the halo.
func (c *Chunk) flush() {
	for s := range Side(NumSides) {
		if c.halos[s] == nil {
			continue
		}
		if err := StoreFaceBytes(c.block, c.temperature, s, c.halos[s]); err != nil {
			panic(err) // storeFace checked the length
		}
		c.halos[s] = nil
	}
}

// takeFaces returns the faces Step took for the current iteration, if any,
// and forgets them: each is sent once.
func (c *Chunk) takeFaces() *[NumSides][]byte {
	f := c.outgoing
	c.outgoing = nil
	if f == nil || c.outgoingFor != c.iteration {
		return nil
	}
	return f
}

// completeIteration sweeps the chunk once all six faces of the iteration
// are stored, swaps the arrays, applies the boundary condition and moves
// to the next iteration. It reports whether that was the last one.
func (c *Chunk) completeIteration(iteration uint64) (last bool, err error) {
	if iteration != c.iteration || c.received != allSides {
		return false, fmt.Errorf("stencil3d: completion of iteration %d at iteration %d with faces %06b", iteration, c.iteration, c.received)
	}
	// Step sweeps the array in place and applies the boundary condition;
	// it also clears the array's halo, which held this iteration's faces.
	// No sweep reads that halo before the next faces overwrite it, but it
	// is packed: cleared, it makes the packed state the same whatever
	// happened to the chunk. Unless this is the last iteration, Step takes
	// the faces of the next one as well.
	var faces *[NumSides][]byte
	if c.iteration+1 < c.iterations {
		faces = &c.faceBufs
	}
	if err := Step(c.block, c.temperature, c.layers, &c.halos, faces); err != nil {
		return false, err
	}
	c.halos = [NumSides][]byte{}
	if faces != nil {
		c.outgoingBufs = c.faceBufs
		faces = &c.outgoingBufs
	}
	c.recycle()
	c.iteration++
	c.received = 0
	c.finished = c.iteration == c.iterations
	c.outgoing, c.outgoingFor = faces, c.iteration
	return c.finished, nil
}

// keep records m, whose face storeFace took for the halo on side s: its
// buffer and the message itself are the chunk's once Step has read the
// face (recycle).
func (c *Chunk) keep(s Side, m *Face) { c.inbox[s] = m }

// recycle, once Step has read the received faces, makes their buffers
// the next faceBufs and their messages spare ones.
func (c *Chunk) recycle() {
	for s, m := range c.inbox {
		c.faceBufs[s] = nil
		if m != nil {
			c.faceBufs[s], m.Values = m.GetValues(), nil
			c.spare[s] = m
		}
	}
	c.inbox = [NumSides]*Face{}
}

// message returns an empty message for this chunk's face on side s: a
// spare one (recycle), or a new one.
func (c *Chunk) message(s Side) *Face {
	m := c.spare[s]
	c.spare[s] = nil
	if m == nil {
		return &Face{}
	}
	m.Reset() // whatever a decoder left in it (unknown fields)
	return m
}

// clearHalo zeroes the halo of a chunk's array: its faces, edges and
// corners.
func clearHalo(b Block, t []float64) {
	for k := 0; k <= b.Z+1; k++ {
		for j := 0; j <= b.Y+1; j++ {
			row := b.At(0, j, k)
			if k == 0 || k == b.Z+1 || j == 0 || j == b.Y+1 {
				clear(t[row : row+b.X+2])
				continue
			}
			t[row], t[row+b.X+1] = 0, 0
		}
	}
}

// result returns the chunk's sum and hash.
func (c *Chunk) result() ChunkResult { return Summarize(c.block, c.temperature) }

// Packed form of a Chunk, little-endian:
//
//	"S3DC" version(1)
//	block X, Y, Z (uint32 each)
//	flags (bit 0 started, bit 1 finished), received mask (1 byte each)
//	iteration (uint64)
//	temperature, Block.Len() float64 bits (uint64 each)
const (
	chunkMagic       = "S3DC"
	chunkVersion     = 1
	chunkHeaderBytes = len(chunkMagic) + 1 + 3*4 + 2 + 8

	flagStarted  = 1 << 0
	flagFinished = 1 << 1
)

// MarshalBinary packs the chunk's state for checkpoint and migration.
func (c *Chunk) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, chunkHeaderBytes+8*len(c.temperature)))
}

// AppendBinary appends what MarshalBinary returns to out (a checkpoint
// packs into memory it reuses).
func (c *Chunk) AppendBinary(out []byte) ([]byte, error) {
	c.flush()
	out = slices.Grow(out, chunkHeaderBytes+8*len(c.temperature))
	out = append(out, chunkMagic...)
	out = append(out, chunkVersion)
	for _, e := range [3]int{c.block.X, c.block.Y, c.block.Z} {
		out = binary.LittleEndian.AppendUint32(out, uint32(e))
	}
	var flags byte
	if c.started {
		flags |= flagStarted
	}
	if c.finished {
		flags |= flagFinished
	}
	out = append(out, flags, c.received)
	out = binary.LittleEndian.AppendUint64(out, c.iteration)
	values := out[len(out) : len(out)+8*len(c.temperature)]
	for n, v := range c.temperature {
		binary.LittleEndian.PutUint64(values[8*n:], math.Float64bits(v))
	}
	return out[:len(out)+len(values)], nil
}

// UnmarshalBinary restores a state packed by MarshalBinary into a chunk
// made for the same configuration.
func (c *Chunk) UnmarshalBinary(data []byte) error {
	want := chunkHeaderBytes + 8*c.block.Len()
	if len(data) != want {
		return fmt.Errorf("stencil3d: packed chunk of %d bytes, want %d for chunk %v", len(data), want, c.block)
	}
	if string(data[:len(chunkMagic)]) != chunkMagic || data[len(chunkMagic)] != chunkVersion {
		return fmt.Errorf("stencil3d: packed chunk has header %q, want %q version %d", data[:len(chunkMagic)+1], chunkMagic, chunkVersion)
	}
	rest := data[len(chunkMagic)+1:]
	var packed Block
	for _, e := range []*int{&packed.X, &packed.Y, &packed.Z} {
		*e = int(binary.LittleEndian.Uint32(rest))
		rest = rest[4:]
	}
	if packed != c.block {
		return fmt.Errorf("stencil3d: packed chunk is %v, this job's chunks are %v", packed, c.block)
	}
	flags, received := rest[0], rest[1]
	iteration := binary.LittleEndian.Uint64(rest[2:])
	rest = rest[10:]
	if flags&^(flagStarted|flagFinished) != 0 || received&^allSides != 0 {
		return fmt.Errorf("stencil3d: packed chunk has invalid flags %08b or face mask %08b", flags, received)
	}
	started, finished := flags&flagStarted != 0, flags&flagFinished != 0
	if iteration > c.iterations || finished != (iteration == c.iterations) || (!started && (iteration > 0 || received != 0)) {
		return fmt.Errorf("stencil3d: packed chunk at iteration %d of %d (started %v, finished %v, faces %06b) is inconsistent",
			iteration, c.iterations, started, finished, received)
	}
	if finished && received != 0 {
		return fmt.Errorf("stencil3d: packed finished chunk holds %d faces", bits.OnesCount8(received))
	}
	if len(c.temperature) != c.block.Len() {
		c.temperature = make([]float64, c.block.Len())
	}
	if len(c.layers) != 2*StepLayers(c.block) {
		c.layers = make([]float64, 2*StepLayers(c.block))
	}
	for n := range c.temperature {
		c.temperature[n] = math.Float64frombits(binary.LittleEndian.Uint64(rest[8*n:]))
	}
	c.started, c.finished, c.iteration, c.received = started, finished, iteration, received
	c.halos, c.outgoing, c.inbox = [NumSides][]byte{}, nil, [NumSides]*Face{}
	return nil
}
