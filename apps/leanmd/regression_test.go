package leanmd

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// Kills that hung the job before (a new user's campaign): a PE killed
// before the first periodic checkpoint, or with the default flags (no
// periodic checkpoint at all), brings its cells back as created; the
// survivors' computes resend the forces of step 1 at once, and a restored
// cell took them before its Begin. Keys now order a cell's messages. As
//
//	gochare run leanmd --pes 3 --ft partialdet --checkpoint-every 10 \
//	    --cells 3,3,3 --steps 30 --atoms 40 --json --kill pe=1,at=step:5
//
// (steps 5 and 8), and with the default flags --kill pe=1,at=step:15 on 3
// PEs and pe=2,at=step:20 on 4, in process (the cause reproduces there),
// smaller under the race detector.
func TestEarlyKillRecovers(t *testing.T) {
	steps, atoms := 30, 40
	if raceDetector {
		steps, atoms = 12, 10
	}
	args := []string{"--cells", "3,3,3", "--steps", fmt.Sprint(steps), "--atoms", fmt.Sprint(atoms), "--json"}
	clean := apptest.LastJSON[Report](t, apptest.Run(t, App, 3, args).Output)
	for _, c := range []struct {
		pes             int
		checkpointEvery uint64
		pe              int
		step            uint64
	}{{3, 10, 1, 5}, {3, 10, 1, 8}, {3, 0, 1, uint64(steps / 2)}, {4, 0, 2, uint64(2 * steps / 3)}} {
		t.Run(fmt.Sprintf("pes=%d,checkpoint-every=%d,kill=%d@%d", c.pes, c.checkpointEvery, c.pe, c.step), func(t *testing.T) {
			res := apptest.Run(t, App, c.pes, args, inprocess.WithProtocol(logging.KindPartialDet),
				inprocess.WithCheckpointEvery(c.checkpointEvery), inprocess.WithKill(c.pe, c.step))
			got := apptest.LastJSON[Report](t, res.Output)
			got.MsPerStep, got.PEs = clean.MsPerStep, clean.PEs
			if got != clean {
				t.Errorf("after a failure: %+v\nfailure-free: %+v", got, clean)
			}
			if apptest.Sum(res).Restored == 0 {
				t.Error("no task was restored: the kill did not happen")
			}
		})
	}
}
