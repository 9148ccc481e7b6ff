package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
)

// The observer is told of every task's creation, of every message sent
// with its identity, and of every message handled; PackTasks gives every
// task's state and changes nothing.
func TestObserveAndPackTasks(t *testing.T) {
	net := &recordingNet{}
	var obs []Observation
	pe, err := New(Config{Rank: 0, Size: 1, JobID: 1, App: ringApp(5, 3, actor.BlockMap), Protocol: logging.KindPartialDet,
		Net: net, Control: nopControl{}, Observe: func(o Observation) {
			o.Message.Payload = append([]byte(nil), o.Message.Payload...)
			obs = append(obs, o)
		}})
	require.NoError(t, err)
	pe.Event(job.Begin{})
	for len(net.posted) > 0 {
		ev := net.posted[0]
		net.posted = net.posted[1:]
		pe.Event(ev)
	}
	require.NoError(t, pe.halted)

	created := map[uint64]bool{}
	sent := map[logging.MessageID]logging.Message{}
	handled := 0
	for _, o := range obs {
		require.Zero(t, o.Rollback)
		switch o.Kind {
		case ObserveCreate:
			created[o.Task] = true
		case ObserveSend:
			require.Equal(t, o.Task, uint64(o.Message.ID.Sender), "a send is observed with its stamped identity")
			sent[o.Message.ID] = o.Message
		case ObserveHandle:
			handled++
			m, ok := sent[o.Message.ID]
			require.True(t, ok, "message %v handled before it was sent", o.Message.ID)
			require.Equal(t, m.To, o.Message.To)
			require.Equal(t, m.Payload, o.Message.Payload)
			require.True(t, created[uint64(o.Message.To)])
		}
	}
	require.Contains(t, sent, logging.MessageID{Sender: commutative.TaskID(SystemTask(0)), SRN: 1}, "the runtime task sends Start")
	require.Positive(t, handled)
	require.Equal(t, int(pe.Stats().Delivered), handled)

	recs, err := pe.PackTasks()
	require.NoError(t, err)
	require.Len(t, recs, len(created))
	again, err := pe.PackTasks()
	require.NoError(t, err)
	require.Equal(t, recs, again)
	for _, rec := range recs {
		require.True(t, created[TaskID(int32(rec.Collection), int(rec.Lin))])
		require.NotEmpty(t, rec.Task)
		require.Empty(t, rec.Protocol, "identity counters are no part of a task's state")
	}
	cp, err := pe.records()
	require.NoError(t, err)
	for i := range recs {
		require.Equal(t, cp[i].Task, recs[i].Task)
		require.Equal(t, cp[i].Runtime, recs[i].Runtime)
	}
}
