package scheduler

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// Under a quota a message to a task on the same PE gets a copy of its
// payload (the log's memory may be freed while it waits): a small one in
// a buffer taken back once it is delivered and used again for the next,
// a large one in memory its handler message aliases.
func TestQuotaLocalPayload(t *testing.T) {
	var pe PE
	logged := bytes.Repeat([]byte{7}, 100)
	c := pe.quotaLocalPayload(logged)
	require.Equal(t, logged, c)
	require.NotSame(t, &logged[0], &c[0], "a copy, not the log's memory")
	require.True(t, pe.takeLocal(c), "lent until delivered")
	pe.freeLocal(c)
	c2 := pe.quotaLocalPayload(bytes.Repeat([]byte{8}, 50))
	require.Same(t, &c[0], &c2[0], "the buffer delivered serves the next")
	require.Equal(t, bytes.Repeat([]byte{8}, 50), c2)
	big := bytes.Repeat([]byte{9}, aliasMin)
	cb := pe.quotaLocalPayload(big)
	require.Equal(t, big, cb)
	require.NotSame(t, &big[0], &cb[0])
	require.True(t, pe.takeOwned(cb), "its handler message may alias it")
}

// countSink counts the dumps it is given.
type countSink struct{ dumps int }

func (s *countSink) Dump(logging.DumpBatch) { s.dumps++ }
func (s *countSink) Fetch(int, uint64, int, int) ([]byte, error) {
	return nil, errors.New("countSink: no fetch")
}

// Between two handlers a PE sends the dumps due once they are pressing
// (a quarter of the window), and leaves them for its transmit before.
func TestDumpBetweenHandlers(t *testing.T) {
	const quota = 1 << 20
	proto := logging.NewFullDet(logging.Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 1})
	sink := &countSink{}
	pe := PE{cfg: Config{LogQuota: quota, Loggers: 1, Dumps: sink}, proto: proto}
	pe.quotaInterfaces()
	proto.HostTask(7)
	q := proto.(logging.LogQuota)
	for i := 0; !q.DumpsPressing(); i++ {
		require.Less(t, i, 2000, "the dumps due never pressed")
		pe.dumpBetweenHandlers()
		require.Zero(t, sink.dumps, "not pressing: the dumps wait for the transmit")
		proto.Send(7, 0, logging.Message{To: 9, Handler: 3, Key: uint64(i), Payload: make([]byte, 1000)})
		proto.Advance()
	}
	pe.dumpBetweenHandlers()
	require.Positive(t, sink.dumps)
	require.False(t, q.DumpsPressing())
	require.Empty(t, q.TakeDumps(), "all sent")
}
