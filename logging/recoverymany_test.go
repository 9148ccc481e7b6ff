package logging

import (
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// A failure that restores many tasks: every restored task gets its own
// recovery envelope, but the unstable records they all depend on ride
// once per host PE (on the first envelope to it), not once per task; the
// host stores them on arrival, before the task it came with is there.
func TestRecoveryEnvelopesCarryUnstableRecordsOncePerPE(t *testing.T) {
	const tasks = 200 // on PE 0, and as many on PE 2, which fails
	where := map[TaskID]PEID{}
	e := newEngine(KindPartialDet, Config{PE: 0, PEs: 4, Locate: func(task TaskID) PEID { return where[task] }})
	ordered := commutative.OrderedAnnotation()
	for i := range TaskID(tasks) {
		where[i], where[tasks+i] = 0, 2
		e.HostTask(i)
	}
	for i := range TaskID(tasks) {
		e.Send(i, 2, Message{To: tasks + i, Annotation: ordered})
	}
	e.Advance()
	e.Ready()
	var relocated []Relocation
	for i := range TaskID(tasks) {
		pe := PEID(1 + 2*(i%2)) // to PEs 1 and 3
		where[tasks+i] = pe
		relocated = append(relocated, Relocation{Task: tasks + i, PE: pe})
	}
	unstable := len(e.unstableProgress(anyPE))
	require.Equal(t, tasks, unstable, "each sender's progress record is held by PE 0 alone")
	e.FailureNotice([]PEID{2}, relocated)

	carried := map[PEID]int{}
	var first []Envelope
	recoveries := 0
	for _, env := range e.Ready().Envelopes {
		if env.Kind != EnvelopeRecovery {
			continue
		}
		recoveries++
		if carried[env.To] == 0 {
			first = append(first, env)
		}
		carried[env.To] += len(env.Progress) + len(env.Determinants)
	}
	require.Equal(t, tasks, recoveries, "one recovery envelope per restored task")
	require.Len(t, first, 2)
	for _, env := range first {
		require.Len(t, env.Progress, unstable, "the first envelope to pe%d carries every unstable record", env.To)
		require.Equal(t, unstable, carried[env.To], "the others to pe%d carry none again", env.To)
	}

	// The host takes the records in as they arrive, the task not yet
	// restored there.
	host := newEngine(KindPartialDet, Config{PE: first[0].To, PEs: 4, Locate: func(task TaskID) PEID { return where[task] }})
	host.Arrive(first[0])
	for _, p := range first[0].Progress {
		stored, ok := host.progress[p.Task]
		require.True(t, ok, "task %d's progress record", p.Task)
		require.Equal(t, p.RSN, stored.rsn)
		require.ElementsMatch(t, []PEID{0, first[0].To}, stored.holders)
	}
	require.Len(t, host.unhosted[first[0].Task], 1, "the envelope waits for its task")
	require.Empty(t, host.unhosted[first[0].Task][0].Progress, "without the records it has given")
}
