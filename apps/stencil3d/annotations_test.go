package stencil3d

import (
	"context"
	"io"
	"testing"

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
