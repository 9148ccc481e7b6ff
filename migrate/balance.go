package migrate

import (
	"cmp"
	"container/heap"
	"slices"
)

// TaskLoad is a task's measured load and the PE it is on now.
type TaskLoad struct {
	Task TaskRef
	PE   int
	Load float64
}

// Move is a migration a load balancer asks for.
type Move struct {
	Task     TaskRef
	From, To int
}

// heaviestFirst orders loads by decreasing load, then by task.
func heaviestFirst(a, b TaskLoad) int {
	if c := cmp.Compare(b.Load, a.Load); c != 0 {
		return c
	}
	return CompareTaskRefs(a.Task, b.Task)
}

func isLivePE(pe int, live []bool) bool { return pe >= 0 && pe < len(live) && live[pe] }

// Greedy places every task anew, heaviest first, each on the least-loaded
// live PE (ties: the task's current PE, else the lowest rank), and returns
// the moves from the current placement, in that order. With no live PE it
// returns nil. The largest PE load is at most the average plus the
// heaviest task.
func Greedy(loads []TaskLoad, numPEs int, live []bool) []Move {
	pes := &peHeap{position: make([]int, numPEs)}
	for pe := range numPEs {
		pes.position[pe] = -1
		if isLivePE(pe, live) {
			pes.position[pe] = len(pes.ranks)
			pes.ranks = append(pes.ranks, pe)
		}
	}
	if len(pes.ranks) == 0 {
		return nil
	}
	pes.load = make([]float64, numPEs)
	heap.Init(pes)

	order := slices.Clone(loads)
	slices.SortFunc(order, heaviestFirst)
	var moves []Move
	for _, task := range order {
		to := pes.ranks[0]
		if isLivePE(task.PE, live) && pes.load[task.PE] == pes.load[to] {
			to = task.PE
		}
		pes.load[to] += task.Load
		heap.Fix(pes, pes.position[to])
		if to != task.PE {
			moves = append(moves, Move{Task: task.Task, From: task.PE, To: to})
		}
	}
	return moves
}

// peHeap is a min-heap of live PEs by (load, rank).
type peHeap struct {
	ranks    []int
	load     []float64 // by rank
	position []int     // by rank: index in ranks
}

func (h *peHeap) Len() int { return len(h.ranks) }
func (h *peHeap) Less(i, j int) bool {
	a, b := h.ranks[i], h.ranks[j]
	return h.load[a] < h.load[b] || (h.load[a] == h.load[b] && a < b)
}
func (h *peHeap) Swap(i, j int) {
	h.ranks[i], h.ranks[j] = h.ranks[j], h.ranks[i]
	h.position[h.ranks[i]], h.position[h.ranks[j]] = i, j
}
func (h *peHeap) Push(any) { panic("migrate: peHeap has a fixed set of PEs") }
func (h *peHeap) Pop() any { panic("migrate: peHeap has a fixed set of PEs") }

// Refine keeps the current placement and moves as few tasks as it can:
// first every task on a dead PE, heaviest first, onto the least-loaded live
// PE; then, from each live PE whose load exceeds the average by more than
// tolerance (0.05 = 5%), most loaded first, the heaviest task that fits on
// the least-loaded PE without taking it over that limit, until the PE is
// within it or no task fits. Ties go to the lowest rank, then task order.
func Refine(loads []TaskLoad, numPEs int, live []bool, tolerance float64) []Move {
	liveCount := 0
	for pe := range numPEs {
		if isLivePE(pe, live) {
			liveCount++
		}
	}
	if liveCount == 0 {
		return nil
	}
	peLoad := make([]float64, numPEs)
	tasksOn := make([][]TaskLoad, numPEs)
	var stranded []TaskLoad
	var total float64
	for _, task := range loads {
		total += task.Load
		if isLivePE(task.PE, live) {
			peLoad[task.PE] += task.Load
			tasksOn[task.PE] = append(tasksOn[task.PE], task)
		} else {
			stranded = append(stranded, task)
		}
	}
	leastLoaded := func() int {
		best := -1
		for pe := range numPEs {
			if isLivePE(pe, live) && (best < 0 || peLoad[pe] < peLoad[best]) {
				best = pe
			}
		}
		return best
	}

	var moves []Move
	slices.SortFunc(stranded, heaviestFirst)
	for _, task := range stranded {
		to := leastLoaded()
		peLoad[to] += task.Load
		moves = append(moves, Move{Task: task.Task, From: task.PE, To: to})
	}

	limit := total / float64(liveCount) * (1 + tolerance)
	var donors []int
	for pe := range numPEs {
		if isLivePE(pe, live) && peLoad[pe] > limit {
			donors = append(donors, pe)
		}
	}
	slices.SortStableFunc(donors, func(a, b int) int { return cmp.Compare(peLoad[b], peLoad[a]) })
	for _, donor := range donors {
		candidates := tasksOn[donor]
		slices.SortFunc(candidates, heaviestFirst)
		for peLoad[donor] > limit {
			to := leastLoaded()
			fit := slices.IndexFunc(candidates, func(t TaskLoad) bool { return t.Load > 0 && peLoad[to]+t.Load <= limit })
			if fit < 0 {
				break
			}
			task := candidates[fit]
			candidates = slices.Delete(candidates, fit, fit+1)
			peLoad[donor] -= task.Load
			peLoad[to] += task.Load
			moves = append(moves, Move{Task: task.Task, From: donor, To: to})
		}
	}
	return moves
}
