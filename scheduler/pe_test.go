package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
	"github.com/gochare/gochare/scheduler/wire"
)

// recordingNet captures what a PE sends and posts.
type recordingNet struct {
	sent   map[int][][]byte
	posted []any
}

func (n *recordingNet) Send(to int, p []byte) { n.sent[to] = append(n.sent[to], p) }

func (n *recordingNet) Flush() {}

func (n *recordingNet) Post(ev any) { n.posted = append(n.posted, ev) }

func (n *recordingNet) Backlog() int { return 0 }

type nopControl struct{}

func (nopControl) Output(uint64, uint64, string) {}

func (nopControl) Exit(int) {}

func (nopControl) Idle(job.IdleStatus) {}

func (nopControl) RequestQuiescence() {}

func (nopControl) CheckpointStaged(uint64, int, int) {}

func (nopControl) BuddyStored(uint64, int, uint64) {}

func (nopControl) DiskWritten(uint64, migrate.FileEntry, error) {}

func (nopControl) Restored(uint64, int, job.Progress) {}

func (nopControl) Reached(uint64, uint64) {}

func (nopControl) Fail(error) {}

func TestBadInputIsDroppedAndCounted(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) { testBadInput(t, kind) })
	}
}

// goodMessage is a begin message for worker 3 (on PE 1 of 2) from PE 0.
func goodMessage(t testing.TB) *wire.Envelope {
	payload, err := proto.Marshal(&testmsg.Num{})
	require.NoError(t, err)
	return &wire.Envelope{Kind: uint32(logging.EnvelopeMessage), From: 0, To: 1, Message: &wire.Message{
		Id: &wire.MessageID{Sender: TaskID(1, 0), Srn: 1}, To: TaskID(1, 3), Handler: handlerID(1, 0), // begin: handlers are numbered in name order
		Order: uint32(commutative.Ordered), Key: 0, Payload: payload,
	}}
}

func testBadInput(t *testing.T, kind logging.Kind) {
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: ringApp(4, 1, actor.BlockMap), Protocol: kind, Net: net, Control: nopControl{}})
	require.NoError(t, err)
	batch := func(job uint64, mutate func(*wire.Envelope)) []byte {
		env := goodMessage(t)
		if mutate != nil {
			mutate(env)
		}
		b, err := proto.Marshal(&wire.Batch{Job: job, Envelopes: []*wire.Envelope{env}})
		require.NoError(t, err)
		return b
	}
	cases := []struct {
		name    string
		payload []byte
		reason  string
	}{
		{"garbage", []byte{0xff, 0xff, 0xff}, "malformed batch"},
		{"other job", batch(7, nil), "batch from another job"},
		{"unknown collection", batch(42, func(e *wire.Envelope) { e.Message.To = TaskID(9, 0) }), "unknown collection or handler"},
		{"unknown handler", batch(42, func(e *wire.Envelope) { e.Message.Handler = handlerID(1, 99) }), "unknown collection or handler"},
		{"handler of another collection", batch(42, func(e *wire.Envelope) { e.Message.Handler = handlerID(0, 0) }), "unknown collection or handler"},
		{"element out of range", batch(42, func(e *wire.Envelope) { e.Message.To = TaskID(1, 1<<40) }), "no such element here"},
		{"wrong sender PE", batch(42, func(e *wire.Envelope) { e.From = 5 }), "malformed batch"},
		{"bad path", batch(42, func(e *wire.Envelope) { e.Message.Id.Cpi = []byte{0x80} }), "malformed batch"},
		{"no message", batch(42, func(e *wire.Envelope) { e.Message = nil }), "malformed batch"},
		{"bad kind", batch(42, func(e *wire.Envelope) { e.Kind = 17 }), "malformed batch"},
		{"bad order", batch(42, func(e *wire.Envelope) { e.Message.Order = 9 }), "malformed batch"},
		// No worker handler is order-dependent (PE.orderFree).
		{"order-dependent for an order-free collection", batch(42, func(e *wire.Envelope) { e.Message.Order = uint32(commutative.OrderDependent) }), "malformed batch"},
		{"bad payload", batch(42, func(e *wire.Envelope) {
			e.Message.Payload = []byte{0xff}
			e.Message.Id.Srn = 2
		}), "message does not decode"},
	}
	for i, c := range cases {
		pe.Receive(0, c.payload)
		runPosted(pe, net)
		st := pe.Stats()
		require.Equal(t, uint64(i+1), st.Dropped, c.name)
		require.NotZero(t, st.DroppedByReason[c.reason], c.name)
	}
	// A message for an element that lives on another PE is passed on there.
	pe.Receive(0, batch(42, func(e *wire.Envelope) { e.Message.To = TaskID(1, 0) }))
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Forwarded)
	require.Len(t, net.sent[0], 1)
	net.sent[0] = nil
	// The PE still works: a good begin for worker 3 is handled; its send
	// to worker 2 (also on PE 1) waits, as worker 2 has not begun, and its
	// send to worker 0 goes to PE 0.
	pe.Receive(0, batch(42, func(e *wire.Envelope) { e.Message.Id.Srn = 3 }))
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Delivered)
	require.Len(t, net.sent[0], 1, "the send to worker 0 on PE 0")
	// The same message again is a duplicate: not handled twice.
	pe.Receive(0, batch(42, func(e *wire.Envelope) { e.Message.Id.Srn = 3 }))
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Delivered)
}

func runPosted(pe *PE, net *recordingNet) {
	for i := 0; i < 1000 && len(net.posted) > 0; i++ {
		ev := net.posted[0]
		net.posted = net.posted[1:]
		pe.Event(ev)
	}
}

func FuzzReceive(f *testing.F) {
	good, _ := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{goodMessage(f)}})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x12, 0x04, 0x10, 0x01, 0x18, 0x01})
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
			net := &recordingNet{sent: map[int][][]byte{}}
			pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: ringApp(4, 1, actor.BlockMap), Protocol: kind, Net: net, Control: nopControl{}})
			if err != nil {
				t.Fatal(err)
			}
			pe.Receive(0, payload)
			runPosted(pe, net)
		}
	})
}

func (nopControl) Loads([]migrate.TaskLoad) {}

func (nopControl) Migrated() {}

func (nopControl) Progress(uint64) {}

func (nopControl) Committed(uint64) {}

func (nopControl) Diagnosis(string) {}

// A message that reaches a PE after its task moved away is passed on to
// the task's new PE, not dropped.
func TestMessageForMovedTaskIsForwarded(t *testing.T) {
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 1, Size: 3, JobID: 42, App: ringApp(6, 1, actor.BlockMap), Protocol: logging.KindPartialDet, Net: net, Control: nopControl{}})
	require.NoError(t, err)
	// Worker 3 starts on PE 1 (block map of 6 over 3) and moves to PE 2.
	workers := pe.colls[1]
	_, err = pe.exportTask(workers, 3)
	require.NoError(t, err)
	workers.homeOf[3] = 2
	env := goodMessage(t)
	b, err := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{env}})
	require.NoError(t, err)
	pe.Receive(0, b)
	runPosted(pe, net)
	require.Zero(t, pe.Stats().Dropped)
	require.Equal(t, uint64(1), pe.Stats().Forwarded)
	require.Len(t, net.sent[2], 1)
	var out wire.Batch
	require.NoError(t, proto.Unmarshal(net.sent[2][0], &out))
	require.Len(t, out.Envelopes, 1)
	fwd := out.Envelopes[0]
	require.Equal(t, int32(1), fwd.From, "the forwarding PE sends it on as its own envelope")
	require.Equal(t, int32(2), fwd.To)
	got, err := envelopeFromWire(fwd, 1, 2, 3)
	require.NoError(t, err)
	require.Equal(t, env.Message.Id.Srn, got.Message.ID.SRN)
}

// An envelope dropped as bad input still counts as received: its sender
// counted it sent, and quiescence detection, which balances the two,
// would otherwise never find the job quiet.
func TestDroppedEnvelopeCountsReceived(t *testing.T) {
	var errs []error
	var migrated int
	var idle []job.IdleStatus
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 1, Size: 2, JobID: 42, App: ringApp(4, 1, actor.BlockMap), Protocol: logging.KindFullDet, Net: net,
		Control: migrationControl{errs: &errs, migrated: &migrated, idle: &idle}})
	require.NoError(t, err)
	env := goodMessage(t)
	env.Message.To = TaskID(1, 1<<40)
	b, err := proto.Marshal(&wire.Batch{Job: 42, Envelopes: []*wire.Envelope{env}})
	require.NoError(t, err)
	pe.Receive(0, b)
	runPosted(pe, net)
	require.Equal(t, uint64(1), pe.Stats().Dropped)
	pe.Event(job.Probe{Round: 1})
	runPosted(pe, net)
	require.Len(t, idle, 1)
	require.Equal(t, job.IdleStatus{Round: 1, Received: 1}, idle[0])
}

// An application's error names the application once: Define adds the
// name unless the application's own error already begins with it.
func TestDefineNamesTheAppOnce(t *testing.T) {
	failing := func(err error) actor.App {
		return actor.App{Name: "sum", Define: func(*actor.Job, []string) error { return err }}
	}
	cause := errors.New("flag provided but not defined: -bogus")
	_, err := Define(failing(cause), nil)
	require.EqualError(t, err, "sum: flag provided but not defined: -bogus")
	require.ErrorIs(t, err, cause)

	own := fmt.Errorf("sum: %w", cause)
	_, err = Define(failing(own), nil)
	require.EqualError(t, err, "sum: flag provided but not defined: -bogus")
	require.ErrorIs(t, err, cause)

	// A name that only starts the same way is not the app's own prefix.
	_, err = Define(failing(errors.New("summary: bad")), nil)
	require.EqualError(t, err, "sum: summary: bad")
}
