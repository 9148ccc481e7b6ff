package logging

import (
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// With a quota the engine dumps the oldest entries, frees them once a
// logger acknowledges, refuses a handler while the log is full and a dump
// is on its way, and a dump decodes to the messages that were sent.
func TestEngineLogQuota(t *testing.T) {
	const quota = 64 << 10
	p := NewFullDet(Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 2})
	q := p.(LogQuota)
	p.HostTask(7)
	var sent []Message
	send := func(i int) {
		payload := make([]byte, 1000+i%100)
		for j := range payload {
			payload[j] = byte(i * j)
		}
		m := Message{To: 9, Handler: 3, Key: uint64(i), Payload: payload,
			Annotation: commutative.Annotation{Order: commutative.Order(i % 2)}}
		id := p.Send(7, 0, m)
		m.ID = id
		sent = append(sent, m)
	}
	var dumps []DumpBatch
	blocked := false
	for i := 0; i < 400 && !blocked; i++ {
		ok, err := q.LogRoom()
		require.NoError(t, err)
		if !ok {
			blocked = true
			break
		}
		send(i)
		p.Advance()
		dumps = append(dumps, q.TakeDumps()...)
	}
	require.True(t, blocked, "the log filled its quota with no acknowledgement")
	require.NotEmpty(t, dumps)
	st := q.DumpStats()
	require.LessOrEqual(t, st.InMemory, quota)
	require.LessOrEqual(t, st.HighWater, quota)
	// Every dump goes to the preferred logger (PE 1 of 2 loggers: 1), in
	// log order, without a gap, and decodes to what was sent.
	next := 0
	for _, d := range dumps {
		require.Equal(t, 1, d.Logger)
		require.Equal(t, next, d.From)
		got, err := DecodeDumped(d.Payload)
		require.NoError(t, err)
		require.Len(t, got, d.To-d.From)
		for k, e := range got {
			want := sent[d.From+k]
			require.Equal(t, PEID(0), e.ToPE)
			require.Equal(t, want.ID, e.Message.ID)
			require.Equal(t, want.Key, e.Message.Key)
			require.Equal(t, want.Payload, e.Message.Payload)
			require.Equal(t, want.Annotation, e.Message.Annotation)
		}
		next = d.To
	}
	// An acknowledgement of the wrong logger changes nothing; the right
	// one frees the memory and gives room.
	q.DumpAcked(0, 0, next)
	ok, _ := q.LogRoom()
	require.False(t, ok)
	q.DumpAcked(1, 0, next)
	ok, err := q.LogRoom()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, next, p.(*FullDet).log.released)
	require.Greater(t, q.DumpStats().Dumped, 0)

	// A recovery that must resend a released entry says so.
	p.FailureNotice([]PEID{0}, []Relocation{{Task: 9, PE: 1}})
	require.ErrorIs(t, q.DumpedEntryNeeded(), ErrDumpedEntryNeeded)

	// Both loggers dead: a full log is an error.
	q.DumpLoggerFailed(1)
	q.DumpLoggerFailed(0)
	for i := 0; i < 400; i++ {
		ok, err := q.LogRoom()
		if err != nil {
			require.ErrorIs(t, err, ErrNoLoggerLeft)
			return
		}
		require.True(t, ok)
		send(i)
		p.Advance()
	}
	t.Fatal("no error with the quota full and no logger")
}

func TestDecodeDumpedRefusesMalformed(t *testing.T) {
	for _, b := range [][]byte{{0x80}, {1, 2, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200}} {
		_, err := DecodeDumped(b)
		require.ErrorIs(t, err, ErrBadDump)
	}
}
