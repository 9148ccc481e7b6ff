package logging

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// naiveReplayEnd is the replay bound by a scan of every determinant held.
func naiveReplayEnd(e *engine, task TaskID) uint64 {
	end := e.tasks[task].counters.RSN
	for d := range e.determinants.all() {
		if d.receiver == task && d.rsn > end {
			end = d.rsn
		}
	}
	if p, ok := e.progress[task]; ok && p.rsn > end {
		end = p.rsn
	}
	return end
}

// naiveIsPinned looks for a recorded position of id after position, one
// position at a time.
func naiveIsPinned(e *engine, task TaskID, position uint64, id MessageID) bool {
	for rsn := position + 1; rsn <= e.tasks[task].replayEnd; rsn++ {
		if d, ok := e.determinants.get(determinantKey{task, rsn}); ok && e.determinants.message(d) == id {
			return true
		}
	}
	return false
}

// TestDeterminantIndexMatchesScan checks the indexed replay bound and
// pinning test against the obvious scans, through random determinant
// arrivals, receptions and checkpoints.
func TestDeterminantIndexMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 10 {
		e := newEngine(KindFullDet, Config{PE: 0, PEs: 3})
		tasks := []TaskID{1, 2}
		for _, task := range tasks {
			e.HostTask(task)
		}
		var pool []MessageID
		for sender := range TaskID(3) {
			for srn := uint64(1); srn <= 6; srn++ {
				pool = append(pool, MessageID{Sender: sender + 10, SRN: srn})
			}
		}
		for step := range 200 {
			task := tasks[rng.IntN(len(tasks))]
			switch op := rng.IntN(10); {
			case op < 6:
				d := Determinant{Message: pool[rng.IntN(len(pool))], Receiver: task, RSN: 1 + uint64(rng.IntN(40))}
				if held, taken := e.determinants.get(d.key()); !taken {
					e.storeReceived([]Determinant{d}, e.pe+1)
				} else {
					// A duplicate arrival changes no replay end.
					e.storeReceived([]Determinant{e.determinants.determinant(held)}, e.pe+2)
				}
			case op < 9:
				counters := &e.tasks[task].counters
				counters.BeginReception(MessageID{Sender: 99, SRN: uint64(step) + 1}, commutative.OrderedAnnotation(), commutative.RegionKey{})
				counters.EndReception()
			default:
				e.Checkpoint()
			}
			for _, task := range tasks {
				// storeReceived keeps a hosted task's replay end at
				// least the last RSN stored for it (deliver and the
				// duplicate arrivals rely on it); refreshReplayEnd
				// gives the exact bound.
				require.GreaterOrEqual(t, e.tasks[task].replayEnd, e.determinants.lastRSN(task), "trial %d step %d", trial, step)
				e.refreshReplayEnd(task)
				require.Equal(t, naiveReplayEnd(e, task), e.tasks[task].replayEnd, "trial %d step %d", trial, step)
				for position := uint64(0); position <= 41; position += 1 + uint64(rng.IntN(4)) {
					for _, id := range pool {
						if want := naiveIsPinned(e, task, position, id); e.isPinned(task, position, id) != want {
							t.Fatalf("trial %d step %d: task %d position %d %v: pinned %v, scan says %v",
								trial, step, task, position, id, !want, want)
						}
					}
				}
			}
		}
	}
}

// TestProgressOrderMatchesSortedKeys checks the kept order of progress
// records against sorting the map's keys.
func TestProgressOrderMatchesSortedKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	e := newEngine(KindPartialDet, Config{PE: 0, PEs: 3})
	for step := range 2000 {
		if rng.IntN(50) == 0 {
			e.Checkpoint()
		} else {
			e.noteProgress(Progress{Task: TaskID(rng.IntN(40)), RSN: uint64(rng.IntN(20))}, e.pe+PEID(rng.IntN(2)))
		}
		keys := make([]TaskID, 0, len(e.progress))
		for task := range e.progress {
			keys = append(keys, task)
		}
		slices.Sort(keys)
		require.True(t, slices.Equal(keys, e.sortedProgressTasks()), "step %d: %v, sorted keys %v", step, e.sortedProgressTasks(), keys)
	}
}
