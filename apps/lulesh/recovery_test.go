package lulesh

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

func runRecovery(t *testing.T, args []string, opts ...inprocess.Option) (inprocess.Result, Report) {
	t.Helper()
	return runRecoveryOn(t, 3, args, opts...)
}

func runRecoveryOn(t *testing.T, pes int, args []string, opts ...inprocess.Option) (inprocess.Result, Report) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr strings.Builder
	res, err := inprocess.Run(ctx, App, args, pes, &stderr, append([]inprocess.Option{inprocess.WithStallTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	if res.Status != 0 || len(res.Output) == 0 {
		t.Fatalf("exit status %d, output:\n%s\nstderr:\n%s", res.Status, strings.Join(res.Output, "\n"), stderr.String())
	}
	var rep Report
	if err := json.Unmarshal([]byte(res.Output[len(res.Output)-1]), &rep); err != nil {
		t.Fatalf("last line is not the JSON report: %v", err)
	}
	return res, rep
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
	_, clean := runRecovery(t, args)
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		t.Run(kind.String(), func(t *testing.T) {
			res, got := runRecovery(t, args, inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(every), inprocess.WithKill(1, kill))
			got.ElapsedS, got.FOM = clean.ElapsedS, clean.FOM
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
			if kind == logging.KindPartialDet && determinants != 0 {
				t.Errorf("partialdet created %d determinants, want 0", determinants)
			}
			t.Logf("%v: %d tasks restored or rolled back, %d determinants", kind, restored, determinants)
		})
	}
}
