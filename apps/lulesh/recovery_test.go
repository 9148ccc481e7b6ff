package lulesh

import (
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// runRecovery runs the app in process on pes PEs with opts and returns the
// result and its JSON report.
func runRecovery(t *testing.T, pes int, args []string, opts ...inprocess.Option) (inprocess.Result, Report) {
	t.Helper()
	res := apptest.Run(t, App, pes, args, opts...)
	return res, apptest.LastJSON[Report](t, res.Output)
}

// A PE dies mid-run (in process) under each protocol: the 10³ reference
// row in 5³ chunks on 3 PEs still ends with the failure-free iteration
// count, energies and digest, bitwise; under partialdet without a single
// determinant. Checkpoints at the end of cycles 9, 19, ...; the kill at
// the end of cycle 23 makes the restored chunks re-execute cycles 20-23.
func TestRecoveryInProcessMatchesCleanRun(t *testing.T) {
	iterations, every, kill := "50", uint64(10), uint64(23)
	if raceDetector {
		iterations, every, kill = "8", 3, 4
	}
	args := []string{"--size", "10", "--chunk", "5,5,5", "--iterations", iterations, "--json"}
	_, clean := runRecovery(t, 3, args)
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		t.Run(kind.String(), func(t *testing.T) {
			res, got := runRecovery(t, 3, args, inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every), inprocess.WithKill(1, kill))
			got.ElapsedS, got.FOM = clean.ElapsedS, clean.FOM
			if got != clean {
				t.Errorf("after a failure: %+v\nfailure-free: %+v", got, clean)
			}
			sum := apptest.RequireRecovered(t, res)
			if kind == logging.KindPartialDet && sum.Determinants != 0 {
				t.Errorf("partialdet created %d determinants, want 0", sum.Determinants)
			}
			t.Logf("%v: %d tasks restored or rolled back, %d determinants", kind, sum.Restored+sum.RolledBack, sum.Determinants)
		})
	}
}
