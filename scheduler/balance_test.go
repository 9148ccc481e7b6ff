package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler/wire"
)

// The first envelope of a batch carries the records the later ones rely
// on. When it is forwarded and a later one is delivered here, this PE must
// have stored (and acknowledged) those records, and the forwarded envelope
// must still carry them to the task's new PE.
func TestForwardedEnvelopeLeavesItsRecordsHere(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			net := &recordingNet{sent: map[int][][]byte{}}
			pe, err := New(Config{Rank: 1, Size: 3, JobID: 42, App: ringApp(6, 1, actor.BlockMap), Protocol: kind, Net: net, Control: nopControl{}})
			require.NoError(t, err)
			// Workers 2 and 3 start on PE 1 (block map of 6 over 3); 3
			// moves to PE 2, and PE 0 does not know yet.
			workers := pe.colls[1]
			_, err = pe.exportTask(workers, 3)
			require.NoError(t, err)
			workers.homeOf[3] = 2
			// PE 0's batch: a message for worker 3 carrying a determinant
			// and a progress record of worker 0, then one for worker 2
			// that relies on them.
			det := &wire.Determinant{Message: &wire.MessageID{Sender: TaskID(1, 5), Srn: 1}, Receiver: TaskID(1, 0), Rsn: 1}
			first := goodMessage(t)
			first.Message.Id = &wire.MessageID{Sender: TaskID(1, 0), Srn: 1}
			first.Determinants = []*wire.Determinant{det}
			first.Carry = 7
			first.Progress = []*wire.Progress{{Task: TaskID(1, 0), Rsn: 1}}
			second := goodMessage(t)
			second.Message.Id = &wire.MessageID{Sender: TaskID(1, 0), Srn: 2}
			second.Message.To = TaskID(1, 2)
			b, err := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{first, second}})
			require.NoError(t, err)
			pe.Receive(0, b)
			runPosted(pe, net)
			require.Zero(t, pe.Stats().Dropped)
			require.Equal(t, uint64(1), pe.Stats().Forwarded)
			require.True(t, pe.proto.HoldsDeterminant(logging.TaskID(det.Receiver), det.Rsn), "the forwarded envelope's determinant is stored here")

			// PE 0 gets the acknowledgement of the records.
			acked := false
			for _, payload := range net.sent[0] {
				var back wire.Batch
				require.NoError(t, proto.Unmarshal(payload, &back))
				for _, w := range back.Envelopes {
					if logging.EnvelopeKind(w.Kind) == logging.EnvelopeAck && w.Carry == 7 && len(w.Progress) == 1 {
						acked = true
					}
				}
			}
			require.True(t, acked, "the records are acknowledged to their sender")

			// PE 2 gets the message, from PE 1, with the records (stored
			// on PE 0 and PE 1 only: not stable with f=2), first in
			// PE 1's batch (worker 2's send to worker 3 follows).
			require.Len(t, net.sent[2], 1)
			var out wire.Batch
			require.NoError(t, proto.Unmarshal(net.sent[2][0], &out))
			require.NotEmpty(t, out.Envelopes)
			got, err := envelopeFromWire(out.Envelopes[0], 1, 2, 3)
			require.NoError(t, err)
			require.Equal(t, logging.PEID(1), got.From)
			require.Equal(t, logging.MessageID{Sender: logging.TaskID(TaskID(1, 0)), SRN: 1}, got.Message.ID)
			require.Contains(t, got.Determinants, logging.Determinant{Message: logging.MessageID{Sender: logging.TaskID(TaskID(1, 5)), SRN: 1}, Receiver: logging.TaskID(TaskID(1, 0)), RSN: 1})
			require.Contains(t, got.Progress, logging.Progress{Task: logging.TaskID(TaskID(1, 0)), RSN: 1})
		})
	}
}

// locate answers where the protocol must resend what a failed PE did not
// forward: the place this PE knows for each task.
func TestLocateIsThePlaceThisPEKnows(t *testing.T) {
	pe, err := New(Config{Rank: 1, Size: 3, JobID: 42, App: ringApp(6, 1, actor.BlockMap), Protocol: logging.KindPartialDet, Net: &recordingNet{sent: map[int][][]byte{}}, Control: nopControl{}})
	require.NoError(t, err)
	require.Equal(t, logging.PEID(1), pe.locate(logging.TaskID(TaskID(1, 3))))
	pe.colls[1].homeOf[3] = 2
	require.Equal(t, logging.PEID(2), pe.locate(logging.TaskID(TaskID(1, 3))))
	require.Equal(t, logging.PEID(2), pe.locate(logging.TaskID(TaskID(systemCollection, 2))))
	require.Equal(t, logging.PEID(-1), pe.locate(logging.TaskID(TaskID(1, 6))))
	require.Equal(t, logging.PEID(-1), pe.locate(logging.TaskID(TaskID(9, 0))))
}
