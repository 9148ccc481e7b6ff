package scheduler

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// recyclingNet is a partsRecorder that also takes payloads back
// (recycler), as the TCP transport does.
type recyclingNet struct {
	partsRecorder
	recycled [][]byte
}

func (n *recyclingNet) Recycle(p []byte) { n.recycled = append(n.recycled, p) }

// buddyBatch is the batch a PE sent its buddy: the head it copied, then
// the body it sent from its own memory, joined as the receiver gets them.
func buddyBatch(t *testing.T, net *recyclingNet, to int) (batch, body []byte) {
	t.Helper()
	require.NotEmpty(t, net.parts[to], "a buddy copy was sent")
	last := net.parts[to][len(net.parts[to])-1]
	return append(bytes.Clone(last[0]), last[1]...), last[1]
}

// A checkpoint encodes into the buffer of the epoch the last commit made
// obsolete, once the Net released what was sent from it, and not before;
// what goes to the buddy is that encoding, which decodes as the
// checkpoint of its epoch, and keeps its bytes while the store holds it.
// The buddy's copy points into the payload it received, which goes back
// to its Net once a commit replaced it, and not before.
func TestCheckpointReusesItsMemory(t *testing.T) {
	nets := [2]*recyclingNet{}
	pes := [2]*PE{}
	for r := range pes {
		nets[r] = &recyclingNet{partsRecorder: partsRecorder{recordingNet: recordingNet{sent: map[int][][]byte{}}, parts: map[int][][2][]byte{}}}
		pe, err := New(Config{Rank: r, Size: 2, JobID: 42, App: ringApp(6, 1, actor.BlockMap), Protocol: logging.KindPartialDet, Net: nets[r], Control: nopControl{}})
		require.NoError(t, err)
		pes[r] = pe
	}
	var bodies, payloads [][]byte
	take := func(epoch uint64) {
		t.Helper()
		for r, pe := range pes {
			pe.Event(job.TakeCheckpoint{Epoch: epoch})
			batch, body := buddyBatch(t, nets[r], 1-r)
			if r == 0 {
				bodies = append(bodies, body)
				payloads = append(payloads, batch)
			}
			var b wire.Batch
			require.NoError(t, proto.Unmarshal(batch, &b))
			require.Equal(t, wire.CheckpointKind_CHECKPOINT_BUDDY, b.CheckpointKind)
			cp, err := migrate.UnmarshalPECheckpoint(b.Checkpoint)
			require.NoError(t, err)
			require.Equal(t, epoch, cp.Epoch)
			require.NotEmpty(t, cp.Tasks, "PE %d's tasks", r)
			pes[1-r].Receive(r, batch)
		}
		for _, pe := range pes {
			pe.Event(job.CommitCheckpoint{Epoch: epoch})
		}
	}
	take(1)
	require.Empty(t, nets[1].recycled, "the buddy copy of epoch 1 is the committed one")
	take(2)
	require.Len(t, nets[1].recycled, 1, "the commit of epoch 2 gave back the copy of epoch 1")
	take(3) // the Net holds every body: new buffers
	require.Len(t, nets[1].recycled, 2, "the commits of epochs 2 and 3 gave back the copies of 1 and 2")
	require.Same(t, &payloads[0][0], &nets[1].recycled[0][0], "epoch 1's payload came back first")
	require.Same(t, &payloads[1][0], &nets[1].recycled[1][0])
	for i, a := range bodies {
		for _, b := range bodies[i+1:] {
			require.False(t, overlaps(a, b), "a body the Net holds is not written again")
		}
	}
	nets[0].released = true
	take(4)
	require.True(t, overlaps(bodies[3], bodies[1]), "epoch 4 is encoded into epoch 2's buffer, obsolete since epoch 3 committed")
	// Epoch 3, committed, and the buddy's copy of it, kept their bytes.
	cp, err := migrate.UnmarshalPECheckpoint(bodies[2])
	require.NoError(t, err)
	require.Equal(t, uint64(3), cp.Epoch)
	own, ok := pes[0].store.Own(4)
	require.True(t, ok)
	epoch, buddy, ok := pes[1].store.Buddy(0)
	require.True(t, ok)
	require.Equal(t, uint64(4), epoch)
	require.Len(t, buddy, len(own))
	for i := range own {
		require.Equal(t, own[i].Task, buddy[i].Task)
		require.True(t, overlaps(own[i].Task, bodies[3]), "the store's own records point into the encoding")
		require.True(t, overlaps(buddy[i].Task, payloads[3]), "the buddy's records point into the payload")
	}
}
