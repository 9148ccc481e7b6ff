package migrate

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// randomLoads gives numTasks tasks with loads in [0, 1) placed with skew:
// PE 0 gets half of them.
func randomLoads(seed uint64, numTasks, numPEs int) []TaskLoad {
	rng := rand.New(rand.NewPCG(seed, 1))
	loads := make([]TaskLoad, numTasks)
	for i := range loads {
		pe := 0
		if rng.IntN(2) == 0 {
			pe = rng.IntN(numPEs)
		}
		loads[i] = TaskLoad{Task: TaskRef{0, i}, PE: pe, Load: rng.Float64()}
	}
	return loads
}

// applyMoves returns the per-PE loads after the moves, and fails on a move
// whose From is not where the task is, or a task moved twice.
func applyMoves(t *testing.T, loads []TaskLoad, moves []Move, numPEs int, live []bool) []float64 {
	t.Helper()
	at := map[TaskRef]int{}
	for _, task := range loads {
		at[task.Task] = task.PE
	}
	moved := map[TaskRef]bool{}
	for _, m := range moves {
		if at[m.Task] != m.From || moved[m.Task] {
			t.Fatalf("move %+v: task is on %d, moved before: %v", m, at[m.Task], moved[m.Task])
		}
		if !live[m.To] {
			t.Fatalf("move %+v onto a dead PE", m)
		}
		at[m.Task], moved[m.Task] = m.To, true
	}
	peLoad := make([]float64, numPEs)
	for _, task := range loads {
		if !live[at[task.Task]] {
			t.Fatalf("task %v left on dead PE %d", task.Task, at[task.Task])
		}
		peLoad[at[task.Task]] += task.Load
	}
	return peLoad
}

func stats(loads []TaskLoad, live []bool) (average, heaviest float64) {
	var total float64
	for _, task := range loads {
		total += task.Load
		heaviest = max(heaviest, task.Load)
	}
	liveCount := 0
	for _, l := range live {
		if l {
			liveCount++
		}
	}
	return total / float64(liveCount), heaviest
}

func TestGreedyBalanceBoundAndDeadPEs(t *testing.T) {
	const numPEs = 8
	live := liveExcept(numPEs, 3)
	for seed := range uint64(20) {
		loads := randomLoads(seed, 200, numPEs)
		moves := Greedy(loads, numPEs, live)
		peLoad := applyMoves(t, loads, moves, numPEs, live)
		average, heaviest := stats(loads, live)
		if worst := slices.Max(peLoad); worst > average+heaviest {
			t.Fatalf("seed %d: max load %.3f > average %.3f + heaviest task %.3f", seed, worst, average, heaviest)
		}
		if peLoad[3] != 0 {
			t.Fatalf("seed %d: dead PE 3 keeps load %.3f", seed, peLoad[3])
		}
	}
}

func TestGreedyIsDeterministic(t *testing.T) {
	loads := randomLoads(7, 100, 5)
	// Equal loads exercise the tie-breaking.
	for i := range 20 {
		loads[i].Load = 0.5
	}
	live := liveExcept(5)
	first := Greedy(loads, 5, live)
	shuffled := slices.Clone(loads)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if again := Greedy(shuffled, 5, live); !reflect.DeepEqual(first, again) {
		t.Fatal("Greedy depends on the input order")
	}
	if Greedy(loads, 5, make([]bool, 5)) != nil {
		t.Fatal("moves with no live PE")
	}
}

func TestRefineMovesFewTasksWhenNearlyBalanced(t *testing.T) {
	const numPEs = 4
	var loads []TaskLoad
	for pe := range numPEs {
		for i := range 10 {
			loads = append(loads, TaskLoad{Task: TaskRef{0, pe*10 + i}, PE: pe, Load: 1})
		}
	}
	live := liveExcept(numPEs)
	if moves := Refine(loads, numPEs, live, 0.05); len(moves) != 0 {
		t.Fatalf("balanced placement: %d moves", len(moves))
	}
	// PE 0 gets one more task of load 3: 13 against an average of 10.75.
	loads = append(loads, TaskLoad{Task: TaskRef{1, 0}, PE: 0, Load: 3})
	moves := Refine(loads, numPEs, live, 0.05)
	peLoad := applyMoves(t, loads, moves, numPEs, live)
	if len(moves) > 2 || slices.Max(peLoad) > 10.75*1.05 {
		t.Fatalf("%d moves %+v leave loads %v", len(moves), moves, peLoad)
	}
	for _, m := range moves {
		if m.From != 0 {
			t.Fatalf("moved a task off PE %d, which was not overloaded", m.From)
		}
	}
}

func TestRefineReachesToleranceWithFewerMovesThanGreedy(t *testing.T) {
	const numPEs, tolerance = 8, 0.05
	live := liveExcept(numPEs)
	for seed := range uint64(20) {
		loads := randomLoads(seed, 400, numPEs)
		moves := Refine(loads, numPEs, live, tolerance)
		peLoad := applyMoves(t, loads, moves, numPEs, live)
		average, _ := stats(loads, live)
		if worst := slices.Max(peLoad); worst > average*(1+tolerance) {
			t.Fatalf("seed %d: max load %.3f over the limit %.3f", seed, worst, average*(1+tolerance))
		}
		if greedy := Greedy(loads, numPEs, live); len(moves) >= len(greedy) {
			t.Fatalf("seed %d: Refine moved %d tasks, Greedy %d", seed, len(moves), len(greedy))
		}
		if again := Refine(loads, numPEs, live, tolerance); !reflect.DeepEqual(moves, again) {
			t.Fatalf("seed %d: Refine not deterministic", seed)
		}
	}
}

func TestRefineEvacuatesDeadPEsOnly(t *testing.T) {
	const numPEs = 4
	var loads []TaskLoad
	for pe := range numPEs {
		for i := range 3 {
			loads = append(loads, TaskLoad{Task: TaskRef{0, pe*3 + i}, PE: pe, Load: 1})
		}
	}
	live := liveExcept(numPEs, 2)
	moves := Refine(loads, numPEs, live, 0.5)
	peLoad := applyMoves(t, loads, moves, numPEs, live)
	if len(moves) != 3 || !slices.Equal(peLoad, []float64{4, 4, 0, 4}) {
		t.Fatalf("moves %+v leave loads %v; want PE 2's three tasks spread one per live PE", moves, peLoad)
	}
}
