package stencil3d

import (
	"bytes"
	"strings"
	"testing"
)

// exchangeWithSelf feeds a one-chunk grid its own faces, as a periodic
// chunk grid of one chunk does.
func exchangeWithSelf(t *testing.T, c *Chunk) {
	t.Helper()
	for s := range Side(NumSides) {
		face := AppendFaceBytes(c.block, c.temperature, s, nil)
		if err := c.storeFace(c.iteration, s.Opposite(), face); err != nil {
			t.Fatal(err)
		}
	}
}

func runChunk(t *testing.T, c *Chunk, iterations int) {
	t.Helper()
	for range iterations {
		exchangeWithSelf(t, c)
		if _, err := c.completeIteration(c.iteration); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChunkStateMachineMatchesSerial(t *testing.T) {
	cfg := Config{Grid: [3]int{16, 8, 4}, Chunk: [3]int{16, 8, 4}, Iterations: 30}
	c := newChunk(cfg)
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	runChunk(t, c, cfg.Iterations)
	if !c.finished {
		t.Errorf("chunk not finished after %d iterations", cfg.Iterations)
	}
	if want, _ := Reference(cfg); !sameResult(c.result(), want) {
		t.Errorf("result %+v, want %+v", c.result(), want)
	}
}

func TestChunkRefusesOutOfProtocolFaces(t *testing.T) {
	cfg := Config{Grid: [3]int{4, 4, 4}, Chunk: [3]int{4, 4, 4}, Iterations: 2}
	c := newChunk(cfg)
	face := make([]byte, 8*16)
	if err := c.storeFace(0, XLow, face); err == nil {
		t.Errorf("face accepted before begin")
	}
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	if err := c.begin(); err == nil {
		t.Errorf("second begin accepted")
	}
	if err := c.storeFace(1, XLow, face); err == nil {
		t.Errorf("face of iteration 1 accepted at iteration 0")
	}
	if err := c.storeFace(0, XLow, face); err != nil {
		t.Fatal(err)
	}
	if err := c.storeFace(0, XLow, face); err == nil {
		t.Errorf("second -x face of one iteration accepted")
	}
	if _, err := c.completeIteration(0); err == nil {
		t.Errorf("iteration completed with one face")
	}
}

// TestChunkPackRoundTrip packs a chunk in the middle of a ghost exchange,
// unpacks it into a fresh chunk, and checks that both finish identically.
func TestChunkPackRoundTrip(t *testing.T) {
	cfg := Config{Grid: [3]int{16, 8, 4}, Chunk: [3]int{16, 8, 4}, Iterations: 30}
	original := newChunk(cfg)
	if err := original.begin(); err != nil {
		t.Fatal(err)
	}
	runChunk(t, original, 7)
	// Half of iteration 7's faces are in.
	for _, s := range []Side{XHigh, YLow, ZHigh} {
		if err := original.storeFace(7, s, AppendFaceBytes(original.block, original.temperature, s.Opposite(), nil)); err != nil {
			t.Fatal(err)
		}
	}
	packed, err := original.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := newChunk(cfg)
	if err := restored.UnmarshalBinary(packed); err != nil {
		t.Fatal(err)
	}
	repacked, _ := restored.MarshalBinary()
	if !bytes.Equal(packed, repacked) {
		t.Fatalf("unpack then pack changed the state")
	}
	if restored.iteration != 7 || restored.received != original.received || !restored.started || restored.finished {
		t.Errorf("restored iteration %d faces %06b started %v finished %v", restored.iteration, restored.received, restored.started, restored.finished)
	}
	for _, c := range []*Chunk{original, restored} {
		for _, s := range []Side{XLow, YHigh, ZLow} {
			if err := c.storeFace(7, s, AppendFaceBytes(c.block, c.temperature, s.Opposite(), nil)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.completeIteration(7); err != nil {
			t.Fatal(err)
		}
		runChunk(t, c, cfg.Iterations-8)
	}
	want, _ := Reference(cfg)
	if !sameResult(original.result(), want) || !sameResult(restored.result(), want) {
		t.Errorf("original %+v restored %+v, want %+v", original.result(), restored.result(), want)
	}

	finished, _ := restored.MarshalBinary()
	again := newChunk(cfg)
	if err := again.UnmarshalBinary(finished); err != nil || !again.finished || !sameResult(again.result(), want) {
		t.Errorf("finished chunk round trip: err %v finished %v result %+v", err, again.finished, again.result())
	}
}

func TestChunkUnpackRefusesForeignState(t *testing.T) {
	cfg := Config{Grid: [3]int{8, 8, 8}, Chunk: [3]int{4, 4, 4}, Iterations: 5}
	c := newChunk(cfg)
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	packed, _ := c.MarshalBinary()

	otherBlock := newChunk(Config{Grid: [3]int{8, 8, 8}, Chunk: [3]int{4, 4, 2}, Iterations: 5})
	if err := otherBlock.UnmarshalBinary(packed); err == nil {
		t.Errorf("state of a 4x4x4 chunk unpacked into a 4x4x2 one")
	}
	corrupt := func(edit func([]byte)) []byte {
		b := bytes.Clone(packed)
		edit(b)
		return b
	}
	for name, data := range map[string][]byte{
		"short":          packed[:len(packed)-1],
		"magic":          corrupt(func(b []byte) { b[0] = 'X' }),
		"version":        corrupt(func(b []byte) { b[4] = 9 }),
		"face mask":      corrupt(func(b []byte) { b[18] = 0xff }),
		"iteration":      corrupt(func(b []byte) { b[19] = 6 }),
		"finished early": corrupt(func(b []byte) { b[17] |= flagFinished }),
	} {
		if err := newChunk(cfg).UnmarshalBinary(data); err == nil || !strings.HasPrefix(err.Error(), "stencil3d: ") {
			t.Errorf("%s: UnmarshalBinary = %v, want a stencil3d error", name, err)
		}
	}
}

// A chunk's next faces go out in the messages and buffers of the faces it
// received (recycle): once Step has read them, each received face's
// buffer holds the chunk's face on that side, and its message carries it,
// reset.
func TestChunkRecyclesReceivedFaces(t *testing.T) {
	cfg, err := ParseConfig([]string{"--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "3"})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(cfg)
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	var got [NumSides]*Face
	for s := range Side(NumSides) {
		got[s] = &Face{Iteration: 0, Halo: haloOf(s), Values: make([]byte, 8*c.block.FaceLen(s))}
		if err := c.storeFace(0, s, got[s].Values); err != nil {
			t.Fatal(err)
		}
		c.keep(s, got[s])
	}
	bufs := [NumSides][]byte{}
	for s := range got {
		bufs[s] = got[s].Values
	}
	if _, err := c.completeIteration(0); err != nil {
		t.Fatal(err)
	}
	faces := c.takeFaces()
	if faces == nil {
		t.Fatal("no faces for iteration 1")
	}
	for s := range Side(NumSides) {
		m := c.message(s)
		if m != got[s] || m.Values != nil || m.Iteration != 0 || m.Halo != 0 {
			t.Errorf("side %v: message %p (%v), want the one received, reset", s, m, m)
		}
		want := AppendFaceBytes(c.block, c.temperature, s, nil)
		if string(faces[s]) != string(want) {
			t.Errorf("side %v: face is not the chunk's", s)
		}
		if &faces[s][0] == &bufs[s][0] {
			t.Errorf("side %v: this iteration's face was written into a buffer Step was reading", s)
		}
		if &c.faceBufs[s][0] != &bufs[s][0] {
			t.Errorf("side %v: the next faces do not go into the received buffer", s)
		}
	}
}
