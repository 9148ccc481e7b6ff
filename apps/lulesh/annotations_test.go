package lulesh

import (
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
)

// TestRegionsPassTheAnnotationCheck runs a small problem in 8 chunks on 3
// PEs with every commutative region (shared nodes, face gradients) re-run
// in 3 other orders (--check-annotations): the job reports what it
// reports without the check, bit for bit, and regions were checked.
func TestRegionsPassTheAnnotationCheck(t *testing.T) {
	args := []string{"--size", "6", "--chunk", "3,3,3", "--iterations", "5", "--json"}
	plain := apptest.Run(t, App, 3, args)
	checked := apptest.Run(t, App, 3, args, inprocess.WithCheckAnnotations(3))
	want, got := apptest.LastJSON[Report](t, plain.Output), apptest.LastJSON[Report](t, checked.Output)
	want.ElapsedS, got.ElapsedS, want.FOM, got.FOM = 0, 0, 0, 0
	if got != want {
		t.Errorf("with the check:\n%+v\nwithout:\n%+v", got, want)
	}
	var regions, plainRegions uint64
	for _, st := range checked.Stats {
		regions += st.RegionsChecked
	}
	for _, st := range plain.Stats {
		plainRegions += st.RegionsChecked
	}
	if regions == 0 || plainRegions != 0 {
		t.Errorf("%d regions checked with the check, %d without", regions, plainRegions)
	}
	t.Logf("%d regions checked", regions)
}
