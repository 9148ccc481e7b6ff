package leanmd

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// recoveryCase is a small run with a checkpoint period and a kill. The
// message-logging protocols cost much per message on the forward path
// (kilobytes piggybacked on each under fulldet), so the configurations
// are small: 3×3×3 cells, 1-away (14 computes per cell), 10 atoms per
// cell, migration every 10 steps (no atom changes cell this early, but
// the lists are exchanged as regions in the re-executed steps).
type recoveryCase struct {
	kind             logging.Kind
	steps            int
	checkpointEvery  uint64
	killPE, killStep uint64
}

func (c recoveryCase) args() []string {
	return []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10",
		"--steps", fmt.Sprint(c.steps), "--migrate-every", "10", "--json"}
}

// recoveryCases: checkpoints at the end of steps 9, 19 and 29 and a kill
// at step 17 (re-execution from step 10, a migration step) under
// partialdet and none; under fulldet, ten times slower per message, 12
// steps with checkpoints at the end of steps 4 and 9 and a kill at 7.
func recoveryCases() []recoveryCase {
	cases := []recoveryCase{
		{logging.KindPartialDet, 30, 10, 1, 17},
		{logging.KindFullDet, 12, 5, 1, 7},
		{logging.KindNone, 30, 10, 1, 17},
	}
	if raceDetector {
		return []recoveryCase{{logging.KindPartialDet, 8, 3, 1, 4}, {logging.KindNone, 8, 3, 1, 4}}
	}
	return cases
}

// A PE dies mid-run (in process) under each protocol: the job ends with
// the failure-free energies, migration count and digest, bitwise; under
// partialdet without a single determinant.
func TestRecoveryInProcessMatchesCleanRun(t *testing.T) {
	for _, c := range recoveryCases() {
		t.Run(c.kind.String(), func(t *testing.T) {
			clean := apptest.LastJSON[Report](t, apptest.Run(t, App, 3, c.args()).Output)
			res := apptest.Run(t, App, 3, c.args(), inprocess.WithProtocol(c.kind),
				inprocess.WithCheckpointEvery(c.checkpointEvery), inprocess.WithKill(int(c.killPE), c.killStep))
			got := apptest.LastJSON[Report](t, res.Output)
			got.MsPerStep, clean.MsPerStep = 0, 0
			if got != clean {
				t.Errorf("after a failure: %+v\nfailure-free: %+v", got, clean)
			}
			sum := apptest.RequireRecovered(t, res)
			if c.kind == logging.KindPartialDet && sum.Determinants != 0 {
				t.Errorf("partialdet created %d determinants, want 0", sum.Determinants)
			}
			t.Logf("%v: %d tasks restored or rolled back, %d determinants", c.kind, sum.Restored+sum.RolledBack, sum.Determinants)
		})
	}
}
