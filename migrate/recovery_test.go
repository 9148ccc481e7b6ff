package migrate

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// ringJob is a job whose tasks sat tasksPerPE to a PE at the checkpoint,
// with every PE live then.
type ringJob struct {
	numPEs, tasksPerPE int
	// received[pe] are tasks assigned to pe by an earlier recovery plan.
	received map[int][]HostedTask
	// buddyOverride[pe] is the PE to which pe re-sent its copy.
	buddyOverride map[int]int
}

func (j ringJob) checkpointTasks(pe int) []HostedTask {
	allLive := make([]bool, j.numPEs)
	for i := range allLive {
		allLive[i] = true
	}
	buddy := Buddy(pe, allLive)
	if b, ok := j.buddyOverride[pe]; ok {
		buddy = b
	}
	var out []HostedTask
	for i := range j.tasksPerPE {
		out = append(out, HostedTask{Task: TaskRef{0, pe*j.tasksPerPE + i}, CheckpointPE: pe, BuddyPE: buddy})
	}
	return out
}

func (j ringJob) tasksOf(pe int) []HostedTask {
	return append(j.checkpointTasks(pe), j.received[pe]...)
}

func liveExcept(numPEs int, dead ...int) []bool {
	live := make([]bool, numPEs)
	for i := range live {
		live[i] = !slices.Contains(dead, i)
	}
	return live
}

func targetsOf(plan []Relocation) []int {
	var out []int
	for _, r := range plan {
		out = append(out, r.ToPE)
	}
	return out
}

func TestPlanRecoverySpread(t *testing.T) {
	job := ringJob{numPEs: 4, tasksPerPE: 6}
	for _, tc := range []struct {
		spread int
		want   []int
	}{
		{1, []int{2, 2, 2, 2, 2, 2}},
		{2, []int{2, 3, 2, 3, 2, 3}},
		{0, []int{2, 3, 0, 2, 3, 0}},
		{9, []int{2, 3, 0, 2, 3, 0}},
	} {
		t.Run(fmt.Sprint("spread=", tc.spread), func(t *testing.T) {
			plan, err := PlanRecovery([]int{1}, job.tasksOf, liveExcept(4, 1), tc.spread, -1)
			must(t, err)
			if got := targetsOf(plan); !slices.Equal(got, tc.want) {
				t.Fatalf("targets %v, want %v", got, tc.want)
			}
			for i, r := range plan {
				want := Relocation{Task: TaskRef{0, 6 + i}, FailedPE: 1, ToPE: tc.want[i], CheckpointPE: 1, CopyPE: 2}
				if r != want {
					t.Fatalf("relocation %d: %+v, want %+v", i, r, want)
				}
			}
		})
	}
}

func TestPlanRecoveryOntoSpare(t *testing.T) {
	job := ringJob{numPEs: 5, tasksPerPE: 3}
	plan, err := PlanRecovery([]int{1}, job.tasksOf, liveExcept(5, 1), 0, 4)
	must(t, err)
	if got := targetsOf(plan); !slices.Equal(got, []int{4, 4, 4}) {
		t.Fatalf("targets %v, want all on spare 4", got)
	}
	if _, err := PlanRecovery([]int{1}, job.tasksOf, liveExcept(5, 1, 4), 0, 4); !errors.Is(err, ErrNoSurvivor) {
		t.Fatalf("dead spare: %v, want ErrNoSurvivor", err)
	}
}

func TestPlanRecoveryTwoNonBuddyFailuresSpreadEvenly(t *testing.T) {
	job := ringJob{numPEs: 6, tasksPerPE: 6}
	plan, err := PlanRecovery([]int{4, 1}, job.tasksOf, liveExcept(6, 1, 4), 0, -1)
	must(t, err)
	if len(plan) != 12 {
		t.Fatalf("%d relocations, want 12", len(plan))
	}
	perTarget := map[int]int{}
	for _, r := range plan {
		perTarget[r.ToPE]++
		if r.ToPE == 1 || r.ToPE == 4 {
			t.Fatalf("task %v restored on failed PE %d", r.Task, r.ToPE)
		}
		if wantCopy := r.FailedPE + 1; r.CopyPE != wantCopy {
			t.Fatalf("task %v of PE %d copied from %d, want its buddy %d", r.Task, r.FailedPE, r.CopyPE, wantCopy)
		}
	}
	for _, pe := range []int{0, 2, 3, 5} {
		if perTarget[pe] != 3 {
			t.Fatalf("restored tasks per PE %v, want 3 on each survivor", perTarget)
		}
	}
	if plan[0].FailedPE != 1 || plan[6].FailedPE != 4 || plan[6].ToPE != 5 {
		t.Fatalf("failed PEs not handled in rank order, each starting after itself: %+v %+v", plan[0], plan[6])
	}
}

func TestPlanRecoveryBuddyPairIsUnrecoverable(t *testing.T) {
	job := ringJob{numPEs: 4, tasksPerPE: 2}
	plan, err := PlanRecovery([]int{2, 3}, job.tasksOf, liveExcept(4, 2, 3), 0, -1)
	if !errors.Is(err, ErrUnrecoverable) || plan != nil {
		t.Fatalf("plan %v, error %v; want ErrUnrecoverable and no plan", plan, err)
	}
	if !strings.Contains(err.Error(), "PE 2 and its buddy PE 3 both failed: the checkpoint is lost from memory") {
		t.Fatalf("error does not name the pair: %v", err)
	}
}

func TestPlanRecoveryFailureDuringRecovery(t *testing.T) {
	job := ringJob{numPEs: 4, tasksPerPE: 4, received: map[int][]HostedTask{}}
	first, err := PlanRecovery([]int{2}, job.tasksOf, liveExcept(4, 2), 0, -1)
	must(t, err)
	// PE 0 dies while receiving its share of PE 2's tasks: it is asked to
	// host them with their checkpoint still at PE 2 / buddy PE 3.
	var keptElsewhere []TaskRef
	for _, r := range first {
		if r.ToPE == 0 {
			job.received[0] = append(job.received[0], HostedTask{Task: r.Task, CheckpointPE: 2, BuddyPE: 3})
		} else {
			keptElsewhere = append(keptElsewhere, r.Task)
		}
	}
	if len(job.received[0]) == 0 || len(keptElsewhere) == 0 {
		t.Fatalf("first plan %+v does not exercise the case", first)
	}
	second, err := PlanRecovery([]int{0}, job.tasksOf, liveExcept(4, 2, 0), 0, -1)
	must(t, err)
	if len(second) != 4+len(job.received[0]) {
		t.Fatalf("re-plan has %d tasks, want PE 0's 4 plus the %d it was receiving", len(second), len(job.received[0]))
	}
	for _, r := range second {
		if slices.Contains(keptElsewhere, r.Task) {
			t.Fatalf("task %v restored on a survivor is planned again", r.Task)
		}
		if r.ToPE != 1 && r.ToPE != 3 {
			t.Fatalf("task %v sent to %d, not a survivor", r.Task, r.ToPE)
		}
		wantCopy := 1 // PE 0's own tasks: its buddy
		if r.CheckpointPE == 2 {
			wantCopy = 3 // PE 2's tasks: still PE 2's buddy
		}
		if r.CopyPE != wantCopy {
			t.Fatalf("task %v (checkpoint on %d) copied from %d, want %d", r.Task, r.CheckpointPE, r.CopyPE, wantCopy)
		}
	}
}

func TestPlanRecoveryWardReprotectedAfterItsBuddyFailed(t *testing.T) {
	// PE 1's buddy is PE 2. PE 2 fails; PE 1 then fails during recovery.
	job := ringJob{numPEs: 4, tasksPerPE: 2}
	if _, err := PlanRecovery([]int{1}, job.tasksOf, liveExcept(4, 2, 1), 0, -1); !errors.Is(err, ErrUnrecoverable) {
		t.Fatalf("without re-protection: %v, want ErrUnrecoverable", err)
	}
	// With re-protection, PE 1 re-sent its copy to its new buddy PE 3.
	job.buddyOverride = map[int]int{1: Buddy(1, liveExcept(4, 2))}
	plan, err := PlanRecovery([]int{1}, job.tasksOf, liveExcept(4, 2, 1), 0, -1)
	must(t, err)
	for _, r := range plan {
		if r.CopyPE != 3 {
			t.Fatalf("task %v copied from %d, want 3", r.Task, r.CopyPE)
		}
	}
}

func TestPlanRecoveryIsDeterministic(t *testing.T) {
	job := ringJob{numPEs: 5, tasksPerPE: 7}
	reversed := func(pe int) []HostedTask {
		tasks := job.tasksOf(pe)
		slices.Reverse(tasks)
		return tasks
	}
	a, errA := PlanRecovery([]int{3, 0}, job.tasksOf, liveExcept(5, 0, 3), 2, -1)
	b, errB := PlanRecovery([]int{0, 3, 3}, reversed, liveExcept(5, 0, 3), 2, -1)
	must(t, errA)
	must(t, errB)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("plans differ with input order:\n%+v\n%+v", a, b)
	}
}

func TestStoreAdoptBuddyAtCommittedEpoch(t *testing.T) {
	s := NewStore()
	if err := s.AdoptBuddy(1, 1, nil); !errors.Is(err, ErrEpoch) {
		t.Fatalf("adopting before any commit: %v, want ErrEpoch", err)
	}
	must(t, s.Stage(1, nil))
	must(t, s.Commit(1))
	must(t, s.AdoptBuddy(1, 1, []TaskRecord{record(0, 3, "x")}))
	if rec, ok := s.BuddyRecord(1, TaskRef{0, 3}); !ok || string(rec.Task) != "x" {
		t.Fatalf("adopted copy: %v %v", rec, ok)
	}
	if m := s.Memory(); m.Buddy != 4 {
		t.Fatalf("adopted copy not accounted: %+v", m)
	}
}
