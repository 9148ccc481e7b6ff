package lulesh

import (
	"bytes"
	"errors"
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
	if err := newChunk(cfg, [3]int{0, 0, 1}).UnmarshalBinary(packed); err == nil {
		t.Error("a chunk unpacked the state of another position")
	}
	if err := newChunk(cfg, [3]int{1, 0, 1}).UnmarshalBinary(packed[:len(packed)-8]); err == nil {
		t.Error("a truncated state was accepted")
	}
	corrupt := bytes.Clone(packed)
	layoutAt := len(chunkMagic) + 1 + 3*4 + 2 + 4 // no received values
	corrupt[layoutAt] ^= 1
	if err := newChunk(cfg, [3]int{1, 0, 1}).UnmarshalBinary(corrupt); !errors.Is(err, errDomainLayout) {
		t.Errorf("state of another domain layout: error %v, want %v", err, errDomainLayout)
	}
	bigger := Config{Size: 4, Chunk: [3]int{4, 2, 2}}
	if err := newChunk(bigger, [3]int{0, 0, 1}).UnmarshalBinary(mustPack(t, newChunk(bigger, [3]int{0, 0, 0}))); err == nil {
		t.Error("a chunk unpacked the state of another position")
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

func TestMainTaskPackRoundTrip(t *testing.T) {
	m := &mainTask{startedAt: 1234567890123, numPEs: 4, finished: true}
	packed, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got mainTask
	if err := got.UnmarshalBinary(packed); err != nil || got != *m {
		t.Errorf("round trip gives %+v, %v; want %+v", got, err, *m)
	}
	if err := got.UnmarshalBinary(packed[1:]); err == nil {
		t.Error("a truncated main element was accepted")
	}
}
