package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
)

// reachedControl records a PE's Reached answers.
type reachedControl struct {
	nopControl
	reached []job.WatchProgress
}

func (c *reachedControl) Reached(generation, step uint64) {
	c.reached = append(c.reached, job.WatchProgress{Generation: generation, Step: step})
}

// A PE answers WatchProgress once, as soon as every local task of a
// collection with sync points has offered the watched step or a later one:
// at once if they already have, else at the step that completes it.
// Tasks of other collections (main, the reducers) are not waited for.
func TestWatchProgressWaitsForEveryLocalSyncTask(t *testing.T) {
	control := &reachedControl{}
	pe, err := New(Config{Rank: 0, Size: 2, JobID: 42, App: stepApp(4, 10), Protocol: logging.KindPartialDet,
		Net: &recordingNet{sent: map[int][][]byte{}}, Control: control})
	require.NoError(t, err)
	workers := pe.colls[1]
	require.Equal(t, []int{0, 1}, workers.sorted(), "workers 0 and 1 are on PE 0")
	w0, w1 := workers.local[0], workers.local[1]

	pe.Event(job.WatchProgress{Generation: 0, Step: 3})
	require.Empty(t, control.reached, "no task offered a step yet")
	pe.atSync(w0, 5)
	pe.atSync(w1, 2)
	require.Empty(t, control.reached, "worker 1 is at step 2")
	pe.atSync(w1, 3)
	require.Equal(t, []job.WatchProgress{{Generation: 0, Step: 3}}, control.reached)
	pe.atSync(w1, 4)
	require.Len(t, control.reached, 1, "answered once")
	require.Equal(t, job.Progress{Step: 5, Offered: true}, pe.progress)

	pe.Event(job.WatchProgress{Generation: 0, Step: 4})
	require.Equal(t, []job.WatchProgress{{Generation: 0, Step: 3}, {Generation: 0, Step: 4}}, control.reached, "already there: answered on receipt")
	pe.Event(job.WatchProgress{Generation: 7, Step: 1})
	require.Len(t, control.reached, 2, "a watch of another recovery is ignored")
}

// A task placed on the PE after the watch counted the tasks still below
// its step is waited for too: the count running out is checked by a new
// pass, and the report comes when the late task offers the step.
func TestWatchProgressWaitsForATaskPlacedAfterTheCount(t *testing.T) {
	control := &reachedControl{}
	pe, err := New(Config{Rank: 0, Size: 2, JobID: 42, App: stepApp(4, 10), Protocol: logging.KindPartialDet,
		Net: &recordingNet{sent: map[int][][]byte{}}, Control: control})
	require.NoError(t, err)
	workers := pe.colls[1]
	w0, w1 := workers.local[0], workers.local[1]

	pe.Event(job.WatchProgress{Generation: 0, Step: 3})
	require.Equal(t, 2, pe.watchBelow)
	late := pe.placeElement(workers, 2, &stepWorker{})
	pe.atSync(w0, 3)
	pe.atSync(w1, 4)
	require.Empty(t, control.reached, "worker 2, placed after the count, is at no step")
	require.Equal(t, 1, pe.watchBelow, "counted again when the count ran out")
	pe.atSync(late, 3)
	require.Equal(t, []job.WatchProgress{{Generation: 0, Step: 3}}, control.reached)
}
