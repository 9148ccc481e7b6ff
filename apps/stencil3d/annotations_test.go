package stencil3d

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/actor/actortest"
	"github.com/gochare/gochare/job/inprocess"
)

// TestFacesPassTheAnnotationCheck runs the test configuration on 3 PEs
// with every region of faces re-run in 3 other orders
// (--check-annotations): the job ends as without the check, with the
// reference matched, and every chunk's every iteration was checked.
func TestFacesPassTheAnnotationCheck(t *testing.T) {
	args := []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", "10"}
	res, err := inprocess.Run(context.Background(), App, args, 3, io.Discard, inprocess.WithCheckAnnotations(3))
	if err != nil || res.Status != 0 {
		t.Fatalf("status %d, error %v; output:\n%q", res.Status, err, res.Output)
	}
	if !contains(res.Output, "reference: match") {
		t.Errorf("no reference match; output:\n%q", res.Output)
	}
	var checked uint64
	for _, st := range res.Stats {
		checked += st.RegionsChecked
	}
	if want := uint64(64 * 10); checked != want {
		t.Errorf("%d regions checked, want %d (64 chunks, 10 iterations)", checked, want)
	}
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}

// TestFaceHandlerCommutesOnOneChunk is the same check as a unit test of
// one task: a chunk that has begun gets the six faces of iteration 0, of
// distinct random values, in all 720 orders, and every order leaves the
// same packed chunk (actortest.CheckCommutative).
func TestFaceHandlerCommutesOnOneChunk(t *testing.T) {
	cfg := Config{Grid: [3]int{8, 8, 8}, Chunk: [3]int{4, 4, 4}, Iterations: 3}
	j := actor.NewJob()
	declare(j, cfg, time.Now)
	c := newChunk(cfg)
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var faces []any
	for s := range Side(NumSides) {
		values := make([]float64, c.block.FaceLen(s))
		for i := range values {
			values[i] = rng.Float64()
		}
		faces = append(faces, &Face{Iteration: 0, Halo: haloOf(s), Values: floatBytes(values)})
	}
	actortest.CheckCommutative(t, j, chunksCollection, "face", actor.Idx(1, 0, 1), c, faceKey(0), faces...)
}

func floatBytes(values []float64) []byte {
	out := make([]byte, 0, 8*len(values))
	for _, v := range values {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
	}
	return out
}
