package scheduler

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
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
