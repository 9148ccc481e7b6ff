package lulesh

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// advance runs cycles of a chunk that covers the whole mesh.
func advance(t *testing.T, c *Chunk, cycles int) {
	t.Helper()
	for range cycles {
		if err := c.domain.Step(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPackUnpackContinuesBitwise packs a chunk in the middle of a run,
// unpacks it into a fresh chunk, and checks that both continue to the
// same bits and that the unpacked chunk packs to the same bytes.
func TestPackUnpackContinuesBitwise(t *testing.T) {
	cfg := Config{Size: 6, Chunk: [3]int{6, 6, 6}}
	original := newChunk(cfg, [3]int{})
	advance(t, original, 7)
	original.stage = stageGradients
	original.gradientFaces = 0b100101
	original.received[directionSlot(kernel.Direction{1, 0, -1})] = []float64{1.5, -2, 3}
	packed, err := original.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	restored := newChunk(cfg, [3]int{})
	if err := restored.UnmarshalBinary(packed); err != nil {
		t.Fatal(err)
	}
	repacked, err := restored.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(packed, repacked) {
		t.Fatal("the unpacked chunk packs to other bytes")
	}
	if restored.stage != stageGradients || restored.gradientFaces != 0b100101 || restored.domain.Cycle() != 7 ||
		len(restored.received[directionSlot(kernel.Direction{1, 0, -1})]) != 3 {
		t.Fatalf("restored stage %v faces %06b cycle %d", restored.stage, restored.gradientFaces, restored.domain.Cycle())
	}

	advance(t, original, 10)
	advance(t, restored, 10)
	a, b := kernel.EnergyDigest(original.domain.Energies()), kernel.EnergyDigest(restored.domain.Energies())
	if a != b || original.domain.Time() != restored.domain.Time() {
		t.Errorf("after 10 more cycles: digest %016x time %v, restored %016x time %v", a, original.domain.Time(), b, restored.domain.Time())
	}
}

func TestUnpackRefusesForeignState(t *testing.T) {
	cfg := Config{Size: 4, Chunk: [3]int{2, 2, 2}}
	packed, err := newChunk(cfg, [3]int{1, 0, 1}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := newChunk(cfg, [3]int{0, 0, 1}).UnmarshalBinary(packed); !errors.Is(err, errBadChunkState) {
		t.Errorf("a chunk unpacked the state of another position: error %v", err)
	}
	if err := newChunk(cfg, [3]int{1, 0, 1}).UnmarshalBinary(packed[:len(packed)-8]); !errors.Is(err, errBadChunkState) {
		t.Errorf("a truncated state: error %v", err)
	}
	domainAt := len(chunkMagic) + 1 + 3*4 + 2 + 4 + 8 // no received values
	corrupt := bytes.Clone(packed)
	corrupt[domainAt] ^= 1 // the domain's magic
	if err := newChunk(cfg, [3]int{1, 0, 1}).UnmarshalBinary(corrupt); !errors.Is(err, errBadChunkState) || !errors.Is(err, kernel.ErrBadState) {
		t.Errorf("state with a corrupt domain: error %v, want %v and %v", err, errBadChunkState, kernel.ErrBadState)
	}
	// Same position, another chunk geometry: the domain refuses it.
	bigger := Config{Size: 4, Chunk: [3]int{4, 2, 2}}
	if err := newChunk(bigger, [3]int{0, 0, 1}).UnmarshalBinary(mustPack(t, newChunk(cfg, [3]int{0, 0, 1}))); !errors.Is(err, kernel.ErrBadState) {
		t.Errorf("a chunk unpacked the state of another geometry: error %v", err)
	}

	// A refused state leaves the chunk as it was.
	c := newChunk(cfg, [3]int{1, 0, 1})
	c.stage = stageForces
	c.received[directionSlot(kernel.Direction{-1, 0, 0})] = []float64{4}
	before := mustPack(t, c)
	src := newChunk(cfg, [3]int{1, 0, 1})
	src.stage = stageGradients
	src.gradientFaces = 1
	foreign := mustPack(t, src)
	foreign[len(foreign)-1] ^= 0x80 // the domain's checksum
	if err := c.UnmarshalBinary(foreign); !errors.Is(err, kernel.ErrBadState) {
		t.Fatalf("a state with a bad checksum: error %v", err)
	}
	if !bytes.Equal(before, mustPack(t, c)) {
		t.Error("a refused state changed the chunk")
	}
}

// grid drives the chunks of a configuration through the protocol of
// app.go without the runtime: the same Chunk methods, with messages
// delivered by hand. Between two deliveries of an exchange, every chunk
// can be replaced by one restored from its packed state.
type grid struct {
	cfg    Config
	chunks map[[3]int]*Chunk
	order  [][3]int
}

func newGrid(cfg Config) *grid {
	g := &grid{cfg: cfg, chunks: map[[3]int]*Chunk{}}
	counts := cfg.ChunkGrid()
	for z := range counts[2] {
		for y := range counts[1] {
			for x := range counts[0] {
				pos := [3]int{x, y, z}
				g.chunks[pos] = newChunk(cfg, pos)
				g.order = append(g.order, pos)
			}
		}
	}
	return g
}

// restoreAll replaces every chunk by a fresh chunk of the same position
// that unpacked its state, and checks that it packs to the same bytes.
func (g *grid) restoreAll(t *testing.T) {
	t.Helper()
	for _, pos := range g.order {
		packed := mustPack(t, g.chunks[pos])
		fresh := newChunk(g.cfg, pos)
		if err := fresh.UnmarshalBinary(packed); err != nil {
			t.Fatalf("chunk %v: %v", pos, err)
		}
		if !bytes.Equal(packed, mustPack(t, fresh)) {
			t.Fatalf("chunk %v: the unpacked chunk packs to other bytes", pos)
		}
		g.chunks[pos] = fresh
	}
}

// exchangeShared sends every chunk's values of fields to its neighbours
// and stores them, restoring every chunk when half of the messages are
// delivered if checkpoint is set.
func (g *grid) exchangeShared(t *testing.T, checkpoint bool, fields func(*Chunk) [][]float64) {
	t.Helper()
	type message struct {
		to     [3]int
		from   kernel.Direction
		values []float64
	}
	var messages []message
	for _, pos := range g.order {
		c := g.chunks[pos]
		for _, dir := range c.domain.Neighbours() {
			messages = append(messages, message{step(pos, dir), dir.Opposite(), c.packShared(dir, fields(c)...)})
		}
	}
	components := len(fields(g.chunks[g.order[0]]))
	for i, m := range messages {
		if checkpoint && i == len(messages)/2 {
			g.restoreAll(t)
		}
		if err := g.chunks[m.to].storeShared(m.from, m.values, components); err != nil {
			t.Fatal(err)
		}
	}
}

func (g *grid) exchangeGradients(t *testing.T, checkpoint bool) {
	t.Helper()
	type message struct {
		to     [3]int
		face   kernel.Face
		values []float64
	}
	var messages []message
	for _, pos := range g.order {
		d := g.chunks[pos].domain
		for _, f := range kernel.Faces() {
			if d.HasNeighbour(f.Direction()) {
				messages = append(messages, message{step(pos, f.Direction()), f.Opposite(), d.PackFaceGradients(f, nil)})
			}
		}
	}
	for i, m := range messages {
		if checkpoint && i == len(messages)/2 {
			g.restoreAll(t)
		}
		if err := g.chunks[m.to].storeGradients(m.face, m.values); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPackUnpackInOpenExchangesContinuesBitwise runs a 2×2×2 chunking of
// the 10³ mesh through the chunk protocol and restores every chunk from
// its packed state in the middle of exchanges (half of the shared-node
// or gradient messages delivered) and at cycle ends; the final energies
// must be bitwise those of kernel.RunChunked.
func TestPackUnpackInOpenExchangesContinuesBitwise(t *testing.T) {
	iterations := 40
	if raceDetector {
		iterations = 8
	}
	cfg := Config{Size: 10, Chunk: [3]int{5, 5, 5}}
	want := chunkedDigest(t, cfg.Size, cfg.Chunk, iterations)
	g := newGrid(cfg)
	for _, c := range g.chunks {
		c.stage = stageMass
	}
	g.exchangeShared(t, true, func(c *Chunk) [][]float64 { return [][]float64{c.domain.NodalMass()} })
	for _, c := range g.chunks {
		c.sumShared(c.domain.NodalMass(), 0)
		c.clearReceived()
		c.stage = stageTimestep
	}
	for cycle := 1; ; cycle++ {
		courant, hydro := math.Inf(1), math.Inf(1)
		for _, c := range g.chunks {
			cc, ch := c.domain.TimeConstraints()
			courant, hydro = min(courant, cc), min(hydro, ch)
		}
		for _, c := range g.chunks {
			c.domain.TimeIncrement(courant, hydro)
			if err := c.domain.NodalForcePhase(); err != nil {
				t.Fatal(err)
			}
			c.stage = stageForces
		}
		g.exchangeShared(t, cycle%3 == 1, func(c *Chunk) [][]float64 {
			fx, fy, fz := c.domain.Forces()
			return [][]float64{fx, fy, fz}
		})
		for _, c := range g.chunks {
			fx, fy, fz := c.domain.Forces()
			c.sumShared(fx, 0)
			c.sumShared(fy, 1)
			c.sumShared(fz, 2)
			c.clearReceived()
			c.domain.NodalMotionPhase()
			if err := c.domain.ElementGradientPhase(); err != nil {
				t.Fatal(err)
			}
			c.stage, c.gradientFaces = stageGradients, 0
		}
		g.exchangeGradients(t, cycle%3 == 2)
		finished := false
		for _, c := range g.chunks {
			if err := c.domain.ElementMaterialPhase(); err != nil {
				t.Fatal(err)
			}
			c.stage = stageTimestep
			finished = c.domain.Finished(iterations)
		}
		if finished {
			break
		}
		if cycle%3 == 0 {
			g.restoreAll(t)
		}
	}
	energies := make([]float64, cfg.Size*cfg.Size*cfg.Size)
	for _, c := range g.chunks {
		for el, e := range c.domain.Energies() {
			energies[c.domain.GlobalElement(el)] = e
		}
	}
	if got := kernel.EnergyDigest(energies); got != want.Digest {
		t.Errorf("digest %016x after restores in open exchanges, uninterrupted chunked run %016x", got, want.Digest)
	}
}

func mustPack(t *testing.T, c *Chunk) []byte {
	t.Helper()
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
