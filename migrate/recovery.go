package migrate

import (
	"fmt"
	"slices"
)

// HostedTask is a task that a failed PE hosted, or had been assigned by an
// earlier recovery plan, when it died, with where its checkpoint is kept.
//
// A task restored onto a PE that then fails during recovery keeps the
// CheckpointPE and BuddyPE of its checkpoint, not those of the PE that just
// received it: that is how the caller lets PlanRecovery re-plan a failure
// during recovery.
type HostedTask struct {
	Task TaskRef
	// CheckpointPE is the PE the task was on at the committed checkpoint; it
	// keeps the task's record in its own copy (Store.OwnRecord).
	CheckpointPE int
	// BuddyPE keeps CheckpointPE's buddy copy (Store.BuddyRecord): Buddy of
	// CheckpointPE over the PEs live at the checkpoint, or the PE to which
	// CheckpointPE has re-sent its copy since (Store.AdoptBuddy).
	BuddyPE int
}

// Relocation says where a failed PE's task is restored and which PE sends
// it its checkpoint record.
type Relocation struct {
	Task TaskRef
	// FailedPE hosted the task when it died.
	FailedPE int
	// ToPE restores the task.
	ToPE int
	// CheckpointPE is the task's HostedTask.CheckpointPE.
	CheckpointPE int
	// CopyPE sends the record to ToPE (nothing to send if they are equal):
	// from its own copy if CopyPE == CheckpointPE, else from the buddy copy
	// it keeps for CheckpointPE.
	CopyPE int
}

// PlanRecovery decides where each task of the failed PEs is restored and
// from which copy.
//
// live marks the PEs alive now; the failed PEs count as dead whatever live
// says. Each failed PE's tasks (tasksOf, taken in task order) are assigned
// round-robin over the first spread survivors in ring order starting after
// the failed PE (spread 0: every survivor), or all onto spare if spare >= 0.
// Failed PEs are handled in rank order. The result is in that order.
//
// A task's record comes from CheckpointPE if it survives, else from its
// BuddyPE. If both are gone the error wraps ErrUnrecoverable and names the
// pair; no plan is returned then (restart from disk).
func PlanRecovery(failed []int, tasksOf func(pe int) []HostedTask, live []bool, spread int, spare int) ([]Relocation, error) {
	numPEs := len(live)
	if spread < 0 {
		return nil, fmt.Errorf("migrate: restore spread %d is negative", spread)
	}
	alive := slices.Clone(live)
	failedSorted := slices.Clone(failed)
	slices.Sort(failedSorted)
	failedSorted = slices.Compact(failedSorted)
	for _, pe := range failedSorted {
		if pe < 0 || pe >= numPEs {
			return nil, fmt.Errorf("migrate: failed PE %d outside 0..%d", pe, numPEs-1)
		}
		alive[pe] = false
	}
	if spare >= numPEs || (spare >= 0 && !alive[spare]) {
		return nil, fmt.Errorf("%w: spare PE %d is not alive", ErrNoSurvivor, spare)
	}

	var plan []Relocation
	for _, failedPE := range failedSorted {
		targets := []int{spare}
		if spare < 0 {
			targets = survivorsAfter(failedPE, alive, spread)
		}
		tasks := slices.Clone(tasksOf(failedPE))
		slices.SortFunc(tasks, func(a, b HostedTask) int { return CompareTaskRefs(a.Task, b.Task) })
		if len(tasks) > 0 && len(targets) == 0 {
			return nil, fmt.Errorf("%w: PE %d failed and no PE is left for its %d tasks", ErrNoSurvivor, failedPE, len(tasks))
		}
		for i, task := range tasks {
			copyPE, err := copyHolder(task, alive)
			if err != nil {
				return nil, err
			}
			plan = append(plan, Relocation{
				Task:         task.Task,
				FailedPE:     failedPE,
				ToPE:         targets[i%len(targets)],
				CheckpointPE: task.CheckpointPE,
				CopyPE:       copyPE,
			})
		}
	}
	return plan, nil
}

// survivorsAfter lists the first spread alive PEs after pe in ring order
// (all of them if spread is 0).
func survivorsAfter(pe int, alive []bool, spread int) []int {
	var out []int
	for step := 1; step < len(alive); step++ {
		candidate := (pe + step) % len(alive)
		if !alive[candidate] {
			continue
		}
		out = append(out, candidate)
		if len(out) == spread {
			break
		}
	}
	return out
}

func copyHolder(task HostedTask, alive []bool) (int, error) {
	isAlive := func(pe int) bool { return pe >= 0 && pe < len(alive) && alive[pe] }
	switch {
	case isAlive(task.CheckpointPE):
		return task.CheckpointPE, nil
	case isAlive(task.BuddyPE):
		return task.BuddyPE, nil
	case task.BuddyPE < 0:
		return -1, fmt.Errorf("%w: PE %d failed and no other copy of its checkpoint was confirmed (none, or the copy for its new buddy was still on its way): the checkpoint of task %v is lost from memory",
			ErrUnrecoverable, task.CheckpointPE, task.Task)
	default:
		return -1, fmt.Errorf("%w: PE %d and its buddy PE %d both failed: the checkpoint is lost from memory (task %v first)",
			ErrUnrecoverable, task.CheckpointPE, task.BuddyPE, task.Task)
	}
}
