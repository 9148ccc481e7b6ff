package leanmd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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

func runInProcess(t *testing.T, args []string, opts ...inprocess.Option) inprocess.Result {
	t.Helper()
	return runInProcessOn(t, 3, args, opts...)
}

func runInProcessOn(t *testing.T, pes int, args []string, opts ...inprocess.Option) inprocess.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr strings.Builder
	res, err := inprocess.Run(ctx, App, args, pes, &stderr, append([]inprocess.Option{inprocess.WithStallTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	if res.Status != 0 {
		t.Fatalf("exit status %d, output:\n%s\nstderr:\n%s", res.Status, strings.Join(res.Output, "\n"), stderr.String())
	}
	return res
}

// A PE dies mid-run (in process) under each protocol: the job ends with
// the failure-free energies, migration count and digest, bitwise; under
// partialdet without a single determinant.
func TestRecoveryInProcessMatchesCleanRun(t *testing.T) {
	for _, c := range recoveryCases() {
		t.Run(c.kind.String(), func(t *testing.T) {
			clean := lastReport(t, runInProcess(t, c.args()).Output)
			res := runInProcess(t, c.args(), inprocess.WithProtocol(c.kind),
				inprocess.WithCheckpointEvery(c.checkpointEvery), inprocess.WithKill(int(c.killPE), c.killStep))
			got := lastReport(t, res.Output)
			got.MsPerStep, clean.MsPerStep = 0, 0
			if got != clean {
				t.Errorf("after a failure: %+v\nfailure-free: %+v", got, clean)
			}
			var determinants, restored int
			for _, s := range res.Stats {
				determinants += s.Protocol.Determinants
				restored += s.Restored + s.RolledBack
			}
			if restored == 0 {
				t.Errorf("no task was restored: the kill did not happen")
			}
			if c.kind == logging.KindPartialDet && determinants != 0 {
				t.Errorf("partialdet created %d determinants, want 0", determinants)
			}
			t.Logf("%v: %d tasks restored or rolled back, %d determinants", c.kind, restored, determinants)
		})
	}
}
