package stencil3d

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// Kills that hung the job before (a new user's campaign): PE 0, which
// holds the main task, killed in the first checkpoint period, so that its
// tasks come back from the checkpoint of the tasks as created and the main
// task gets Start again. It counted as received and never as sent, and
// quiescence detection never balanced. As
//
//	gochare run stencil3d --pes 4 --ft fulldet --checkpoint-every 10 \
//	    --grid 64,64,64 --chunk 16,16,16 --iterations 60 --json --kill pe=0,at=step:5
//
// with steps 1, 5 and 9 under fulldet and 1 and 5 under partialdet, in
// process (the cause reproduces there), on a smaller grid.
func TestEarlyKillOfPE0Recovers(t *testing.T) {
	args := []string{"--grid", "32,32,32", "--chunk", "8,8,8", "--iterations", "30"}
	clean := apptest.Run(t, App, 4, args)
	for _, c := range []struct {
		kind logging.Kind
		step uint64
	}{{logging.KindFullDet, 1}, {logging.KindFullDet, 5}, {logging.KindFullDet, 9}, {logging.KindPartialDet, 1}, {logging.KindPartialDet, 5}} {
		t.Run(fmt.Sprintf("%v/step %d", c.kind, c.step), func(t *testing.T) {
			res := apptest.Run(t, App, 4, args, inprocess.WithProtocol(c.kind),
				inprocess.WithCheckpointEvery(10), inprocess.WithKill(0, c.step))
			require.Equal(t, clean.Output[:4], res.Output[:4], "results after recovery equal the failure-free ones")
			require.Positive(t, res.Stats[1].Restored+res.Stats[2].Restored+res.Stats[3].Restored, "PE 0's tasks were restored")
		})
	}
}
