package gen

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// TestGeneratedProgramsPassTheAnnotationCheck runs generated programs
// with every commutative region re-run in 3 other orders
// (--check-annotations): their commutative handlers commute, so each run
// ends with the digest of the run without the check, and regions were
// checked.
func TestGeneratedProgramsPassTheAnnotationCheck(t *testing.T) {
	var regions uint64
	for seed := 1; seed <= 12; seed++ {
		args := []string{"--seed", fmt.Sprint(seed)}
		plain := apptest.Run(t, App, 3, args, inprocess.WithProtocol(logging.KindPartialDet))
		checked := apptest.Run(t, App, 3, args, inprocess.WithProtocol(logging.KindPartialDet), inprocess.WithCheckAnnotations(3))
		if fmt.Sprint(plain.Output) != fmt.Sprint(checked.Output) {
			t.Errorf("seed %d: output with the check %q, without %q", seed, checked.Output, plain.Output)
		}
		for _, st := range checked.Stats {
			regions += st.RegionsChecked
		}
	}
	if regions == 0 {
		t.Errorf("no region checked in 12 programs")
	}
	t.Logf("%d regions checked", regions)
}
