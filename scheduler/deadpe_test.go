package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// forgettingNet records which peers the PE told its transport to forget.
type forgettingNet struct {
	recordingNet
	forgot []int
}

func (n *forgettingNet) Forget(peer int) { n.forgot = append(n.forgot, peer) }

// Once a PE is told that another one failed, it has its transport forget
// that PE and ignores whatever still comes from it: a PE declared dead
// that comes back (a stopped process continued, a partition healed)
// delivers nothing. Its batches are not counted as bad input either. The
// same batch from a live PE is delivered.
func TestBatchesFromAFailedPEAreIgnored(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			net := &forgettingNet{recordingNet: recordingNet{sent: map[int][][]byte{}}}
			// Six workers on three PEs: 0 and 1 on PE 0, 2 and 3 on
			// PE 1, 4 and 5 on PE 2.
			pe, err := New(Config{Rank: 1, Size: 3, JobID: 42, App: ringApp(6, 1, actor.BlockMap), Protocol: kind, Net: net, Control: nopControl{}})
			require.NoError(t, err)
			// A begin for worker 3 from worker 0 (PE 0) or 4 (PE 2).
			beginFrom := func(pe int, worker int, generation uint64) []byte {
				env := goodMessage(t)
				env.From = int32(pe)
				env.Message.Id.Sender = TaskID(1, worker)
				b, err := proto.Marshal(&wire.Batch{Job: 42, Generation: generation, Envelopes: []*wire.Envelope{env}})
				require.NoError(t, err)
				return b
			}
			pe.Event(job.Recover{Generation: 1, Failed: []int{0}})
			runPosted(pe, &net.recordingNet)
			require.Equal(t, []int{0}, net.forgot, "the transport forgets the failed PE")
			for _, generation := range []uint64{0, 1, 2} {
				pe.Receive(0, beginFrom(0, 0, generation))
				runPosted(pe, &net.recordingNet)
			}
			st := pe.Stats()
			require.Zero(t, st.Delivered, "nothing from the failed PE is handled")
			require.Zero(t, st.Dropped, "a failed PE's batches are no bad input")
			pe.Receive(2, beginFrom(2, 4, 1))
			runPosted(pe, &net.recordingNet)
			require.Equal(t, uint64(1), pe.Stats().Delivered, "the same begin from a live PE is handled")
		})
	}
}
