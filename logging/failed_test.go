package logging

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/commutative"
)

// A protocol made afresh after PE 3 failed (Config.Failed) never counts
// PE 3 alive: when a second failure after the one that restored a task
// here makes the task wait again for a recovery envelope from every PE
// alive, PE 3 is not one of them. Without Config.Failed it would be, and
// the task would wait for an envelope that never comes.
func TestFailedAtStartAreNotAwaited(t *testing.T) {
	const task = TaskID(7)
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		for _, failed := range [][]PEID{{3}, nil} {
			p := New(kind, Config{PE: 2, PEs: 4, Failed: failed})
			p.RestoreTask(TaskCheckpoint{Counters: commutative.NewTaskState(task)}, []PEID{0, 2})
			p.FailureNotice([]PEID{1}, []Relocation{{Task: task, PE: 2}})
			p.FailureNotice([]PEID{0}, nil)
			w, ok := p.(Diagnoser).Waiting(task)
			require.True(t, ok)
			if failed == nil {
				require.Contains(t, w.AwaitingRecovery, PEID(3), "%v: the fresh protocol takes PE 3 for alive", kind)
				continue
			}
			require.NotContains(t, w.AwaitingRecovery, PEID(3), "%v", kind)
			require.NotContains(t, w.AwaitingRecovery, PEID(0), "%v", kind)
		}
	}
}
