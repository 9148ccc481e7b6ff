package migrate

import (
	"errors"
	"slices"
	"testing"
)

func blockMap(_, lin, n, numPEs int) int { return lin * numPEs / n }

func TestLocationsStartAtHomeAndListTasksPerPE(t *testing.T) {
	l := NewLocations([]int{4, 2}, 2, blockMap)
	if got := l.Tasks(0); !slices.Equal(got, []TaskRef{{0, 0}, {0, 1}, {1, 0}}) {
		t.Fatalf("tasks on PE 0: %v", got)
	}
	if where, err := l.Where(TaskRef{0, 3}); err != nil || where != (Location{PE: 1}) {
		t.Fatalf("Where c0[3] = %v, %v", where, err)
	}
	for _, task := range []TaskRef{{2, 0}, {0, 4}, {0, -1}, {-1, 0}} {
		if _, err := l.Where(task); !errors.Is(err, ErrUnknownTask) {
			t.Errorf("Where(%v): %v, want ErrUnknownTask", task, err)
		}
		if here, to := l.Route(task, 0); here || to != -1 {
			t.Errorf("Route(%v) = %v, %d for an unknown task", task, here, to)
		}
	}
}

func TestLocationsUpdateAppliesOnlyNewer(t *testing.T) {
	l := NewLocations([]int{3}, 3, blockMap)
	task := TaskRef{0, 1}
	version, err := l.Move(task, 2)
	must(t, err)
	if version != 1 {
		t.Fatalf("first move: version %d", version)
	}
	for _, tc := range []struct {
		pe      int
		version uint64
		applied bool
		wantPE  int
	}{
		{0, 1, false, 2}, // same version: ignored
		{0, 0, false, 2}, // older
		{0, 3, true, 0},  // newer
		{1, 2, false, 0}, // late, older update
	} {
		applied, err := l.Update(task, tc.pe, tc.version)
		must(t, err)
		where, _ := l.Where(task)
		if applied != tc.applied || where.PE != tc.wantPE {
			t.Fatalf("Update(pe %d, v%d): applied %v, now %v; want %v on %d", tc.pe, tc.version, applied, where, tc.applied, tc.wantPE)
		}
	}
}

// TestForwardingStopsAfterLocationUpdate moves a task 0 -> 1 -> 2 and sends
// it messages from PE 0, whose table only knows the first move.
func TestForwardingStopsAfterLocationUpdate(t *testing.T) {
	const numPEs = 3
	tables := make([]*Locations, numPEs)
	for pe := range tables {
		tables[pe] = NewLocations([]int{3}, numPEs, func(_, lin, _, _ int) int { return 0 })
	}
	task := TaskRef{0, 2}
	moveTask := func(from, to int) {
		version, err := tables[from].Move(task, to)
		must(t, err)
		_, err = tables[to].Update(task, to, version)
		must(t, err)
	}
	moveTask(0, 1)
	moveTask(1, 2)

	// send routes a message from senderPE and returns the PEs it visited.
	send := func(senderPE int) []int {
		at, path := senderPE, []int{senderPE}
		for hops := 0; ; hops++ {
			if hops > numPEs {
				t.Fatalf("forwarding loop: %v", path)
			}
			here, next := tables[at].Route(task, at)
			if here {
				return path
			}
			if at != senderPE {
				update, err := tables[at].UpdateFor(task)
				must(t, err)
				_, err = tables[senderPE].Update(update.Task, update.Location.PE, update.Location.Version)
				must(t, err)
			}
			at = next
			path = append(path, at)
		}
	}
	if path := send(0); !slices.Equal(path, []int{0, 1, 2}) {
		t.Fatalf("first message path %v, want 0 1 2", path)
	}
	if path := send(0); !slices.Equal(path, []int{0, 2}) {
		t.Fatalf("second message path %v, want straight to 2", path)
	}
}

func TestRelocateBeatsLocationsFromBeforeTheFailure(t *testing.T) {
	l := NewLocations([]int{2}, 4, blockMap)
	task := TaskRef{0, 1}
	for range 5 {
		_, err := l.Move(task, 3)
		must(t, err)
	}
	must(t, l.Relocate(task, 1, 1))
	if applied, _ := l.Update(task, 3, 5); applied {
		t.Fatal("a pre-failure update overrode the relocation")
	}
	version, err := l.Move(task, 2)
	must(t, err)
	if version != 1<<32+1 {
		t.Fatalf("move after relocation: version %#x", version)
	}
}

func TestLocationsSnapshotRestore(t *testing.T) {
	l := NewLocations([]int{5, 0, 3}, 4, blockMap)
	_, err := l.Move(TaskRef{2, 1}, 0)
	must(t, err)
	snapshot := l.Snapshot()
	_, err = l.Move(TaskRef{2, 1}, 3)
	must(t, err)
	must(t, l.Restore(snapshot))
	if where, _ := l.Where(TaskRef{2, 1}); where != (Location{PE: 0, Version: 1}) {
		t.Fatalf("restored c2[1] at %v", where)
	}
	if got := l.Snapshot(); !slices.Equal(got, snapshot) {
		t.Fatal("snapshot after restore differs")
	}
	for cut := range snapshot {
		if err := l.Restore(snapshot[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("snapshot cut at %d: %v, want ErrCorrupt", cut, err)
		}
	}
	if err := l.Restore(append(slices.Clone(snapshot), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v, want ErrCorrupt", err)
	}
	if where, _ := l.Where(TaskRef{2, 1}); where != (Location{PE: 0, Version: 1}) {
		t.Fatalf("failed restores changed the table: c2[1] at %v", where)
	}
}
