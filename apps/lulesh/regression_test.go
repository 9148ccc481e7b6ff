package lulesh

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// Kills that hung the job, or ended it "quiescent but no task called
// Exit", before (a new user's campaign): a PE killed in the first
// checkpoint period brings its chunks back as created, and a restored
// chunk took the time step, resent at once by the reducer's PE, before
// its Begin. Keys now order a chunk's messages. As
//
//	gochare run lulesh --size 12 --chunk 6,6,6 --iterations 60 --json \
//	    --checkpoint-every 10 --pes 4 --ft partialdet --kill pe=3,at=step:5
//
// and pe=0, in process (the cause reproduces there), with fewer cycles
// under the race detector.
func TestEarlyKillRecovers(t *testing.T) {
	iterations := "60"
	if raceDetector {
		iterations = "12"
	}
	args := []string{"--size", "12", "--chunk", "6,6,6", "--iterations", iterations, "--json"}
	_, clean := runRecovery(t, 4, args)
	for _, pe := range []int{3, 0} {
		t.Run(fmt.Sprintf("PE %d", pe), func(t *testing.T) {
			res, got := runRecovery(t, 4, args, inprocess.WithProtocol(logging.KindPartialDet),
				inprocess.WithCheckpointEvery(10), inprocess.WithKill(pe, 5))
			got.ElapsedS, got.FOM = clean.ElapsedS, clean.FOM
			if got != clean {
				t.Errorf("after a failure: %+v\nfailure-free: %+v", got, clean)
			}
			if apptest.Sum(res).Restored == 0 {
				t.Error("no task was restored: the kill did not happen")
			}
		})
	}
}
