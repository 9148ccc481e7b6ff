package logtest

import (
	"fmt"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// referenceRun re-executes the program without failures, each task
// consuming exactly the receptions its history ends with.
type referenceRun struct {
	counters []commutative.TaskState
	sent     map[commutative.MessageID]logging.Message
}

func (r *referenceRun) send(from commutative.TaskID, msg logging.Message) {
	msg.ID = r.counters[from].NextSendID()
	r.sent[msg.ID] = msg
}

// reference returns the digests of the failure-free re-execution, or a
// violation if a history cannot be followed (a task handled a message that
// the re-execution never sends: an orphan).
func (s *simulator) reference() ([]uint64, error) {
	n := len(s.tasks)
	r := &referenceRun{counters: make([]commutative.TaskState, n), sent: map[commutative.MessageID]logging.Message{}}
	tasks := make([]appTask, n)
	position := make([]int, n)
	for t := range n {
		r.counters[t] = commutative.NewTaskState(commutative.TaskID(t))
		tasks[t] = s.program.newTask(commutative.TaskID(t))
	}
	for progress := true; progress; {
		progress = false
		for t := range n {
			for position[t] < len(s.history[t]) {
				entry := s.history[t][position[t]]
				if entry.resume {
					s.program.resume(r, &tasks[t])
				} else {
					m, ok := r.sent[entry.id]
					if !ok {
						break
					}
					r.counters[t].BeginReception(m.ID, m.Annotation, m.RegionKey())
					s.program.handle(r, &tasks[t], m)
					complete := r.counters[t].EndReception()
					s.program.complete(r, &tasks[t], m, complete)
				}
				position[t]++
				progress = true
			}
		}
	}
	digests := make([]uint64, n)
	for t := range n {
		if position[t] < len(s.history[t]) {
			return nil, fmt.Errorf("task %d handled %v (entry %d) that a failure-free re-execution never sends: %w",
				t, s.history[t][position[t]].id, position[t], ErrViolation)
		}
		digests[t] = tasks[t].digest()
	}
	return digests, nil
}
