package migrate

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func record(collection, lin int, payload string) TaskRecord {
	return TaskRecord{
		Collection: uint32(collection), Lin: int64(lin),
		Task: []byte(payload), Runtime: []byte("rt"), Protocol: []byte("p"),
	}
}

func TestPECheckpointRoundTripSortsTasks(t *testing.T) {
	cp := &PECheckpoint{Epoch: 3, PE: 1, NumPEs: 4, JobFingerprint: "stencil3d/64",
		Tasks: []TaskRecord{record(1, 5, "b"), record(0, 9, "a"), record(1, 2, "c")}}
	b, err := MarshalPECheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	again, err := MarshalPECheckpoint(cp)
	if err != nil || !bytes.Equal(b, again) {
		t.Fatalf("encoding is not deterministic (err %v)", err)
	}
	got, err := UnmarshalPECheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Epoch != 3 || got.PE != 1 || got.NumPEs != 4 || got.JobFingerprint != "stencil3d/64" {
		t.Fatalf("header: %+v", got)
	}
	var refs []TaskRef
	for _, r := range got.Tasks {
		refs = append(refs, r.Ref())
	}
	want := []TaskRef{{0, 9}, {1, 2}, {1, 5}}
	if !slices.Equal(refs, want) {
		t.Fatalf("tasks %v, want %v", refs, want)
	}
	if string(got.Tasks[2].Task) != "b" || string(got.Tasks[2].Runtime) != "rt" || string(got.Tasks[2].Protocol) != "p" {
		t.Fatalf("payloads: %+v", got.Tasks[2])
	}
}

func TestPECheckpointRejectsDuplicatesAndGarbage(t *testing.T) {
	dup := &PECheckpoint{Epoch: 1, PE: 0, NumPEs: 1, Tasks: []TaskRecord{record(0, 1, "x"), record(0, 1, "y")}}
	if _, err := MarshalPECheckpoint(dup); err == nil {
		t.Fatal("a task recorded twice was encoded")
	}
	if _, err := UnmarshalPECheckpoint([]byte{0xff, 0xff, 0xff}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage: %v, want ErrCorrupt", err)
	}
	peOutOfRange, err := MarshalPECheckpoint(&PECheckpoint{Epoch: 1, PE: 4, NumPEs: 4})
	must(t, err)
	if _, err := UnmarshalPECheckpoint(peOutOfRange); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("PE 4 of 4: %v, want ErrCorrupt", err)
	}
}

func TestBuddyAndWardFollowTheRingOverLivePEs(t *testing.T) {
	live := []bool{true, true, false, true, true}
	for _, tc := range []struct{ pe, buddy, ward int }{
		{0, 1, 4}, {1, 3, 0}, {2, 3, 1}, {3, 4, 1}, {4, 0, 3},
	} {
		if got := Buddy(tc.pe, live); got != tc.buddy {
			t.Errorf("Buddy(%d) = %d, want %d", tc.pe, got, tc.buddy)
		}
		if got := Ward(tc.pe, live); got != tc.ward {
			t.Errorf("Ward(%d) = %d, want %d", tc.pe, got, tc.ward)
		}
	}
	// Buddy and Ward are inverse on live PEs.
	for pe, isLive := range live {
		if isLive && Ward(Buddy(pe, live), live) != pe {
			t.Errorf("Ward(Buddy(%d)) != %d", pe, pe)
		}
	}
	if got := Buddy(0, []bool{true, false}); got != -1 {
		t.Errorf("a lone PE has buddy %d, want -1", got)
	}
}

func TestStoreCommitsTwoPhaseAndDropsOldEpochOnlyAtCommit(t *testing.T) {
	s := NewStore()
	if _, ok := s.Own(0); ok {
		t.Fatal("empty store has a checkpoint")
	}
	must(t, s.Stage(1, []TaskRecord{record(0, 2, "own-e1")}))
	must(t, s.StageBuddy(3, 1, []TaskRecord{record(0, 7, "ward-e1")}))
	if _, ok := s.Own(1); ok {
		t.Fatal("staged epoch visible before commit")
	}
	must(t, s.Commit(1))

	must(t, s.Stage(2, []TaskRecord{record(0, 2, "own-e2")}))
	must(t, s.StageBuddy(3, 2, []TaskRecord{record(0, 7, "ward-e2")}))
	// Until commit, epoch 1 is what recovery would use.
	if own, ok := s.Own(1); !ok || string(own[0].Task) != "own-e1" {
		t.Fatalf("epoch 1 own copy lost before commit: %v %v", own, ok)
	}
	if rec, ok := s.BuddyRecord(3, TaskRef{0, 7}); !ok || string(rec.Task) != "ward-e1" {
		t.Fatalf("epoch 1 buddy copy lost before commit: %v %v", rec, ok)
	}
	must(t, s.Commit(2))
	if _, ok := s.Own(1); ok {
		t.Fatal("epoch 1 still held after epoch 2 committed")
	}
	if epoch, recs, ok := s.Buddy(3); !ok || epoch != 2 || string(recs[0].Task) != "ward-e2" {
		t.Fatalf("buddy copy after commit: %d %v %v", epoch, recs, ok)
	}
}

func TestStoreAbortKeepsCommittedEpoch(t *testing.T) {
	s := NewStore()
	must(t, s.Stage(1, []TaskRecord{record(0, 0, "e1")}))
	must(t, s.Commit(1))
	must(t, s.Stage(2, []TaskRecord{record(0, 0, "e2")}))
	must(t, s.StageBuddy(1, 2, []TaskRecord{record(0, 1, "w")}))
	must(t, s.Abort(2))
	if own, ok := s.Own(1); !ok || string(own[0].Task) != "e1" {
		t.Fatalf("abort lost the committed epoch: %v %v", own, ok)
	}
	if _, ok := s.Staging(); ok {
		t.Fatal("still staging after abort")
	}
	if m := s.Memory(); m.Staged != 0 {
		t.Fatalf("aborted epoch still accounted: %+v", m)
	}
	// The aborted epoch number can be staged again from scratch.
	must(t, s.Stage(2, nil))
	must(t, s.Commit(2))
	if _, _, ok := s.Buddy(1); ok {
		t.Fatal("aborted buddy copy resurfaced")
	}
}

func TestStoreRefusesWrongEpochs(t *testing.T) {
	s := NewStore()
	must(t, s.Stage(2, nil))
	must(t, s.Commit(2))
	for name, err := range map[string]error{
		"stage old":         s.Stage(2, nil),
		"stage buddy old":   s.StageBuddy(0, 1, nil),
		"commit not staged": s.Commit(3),
		"abort not staged":  s.Abort(3),
	} {
		if !errors.Is(err, ErrEpoch) {
			t.Errorf("%s: %v, want ErrEpoch", name, err)
		}
	}
	must(t, s.StageBuddy(0, 3, nil))
	if err := s.Stage(4, nil); !errors.Is(err, ErrEpoch) {
		t.Errorf("staging 4 over staged 3: %v, want ErrEpoch", err)
	}
	if err := s.Commit(3); !errors.Is(err, ErrEpoch) {
		t.Errorf("commit without own records: %v, want ErrEpoch", err)
	}
	if err := s.Stage(3, []TaskRecord{record(0, 1, "a"), record(0, 1, "b")}); err == nil {
		t.Error("a task staged twice was accepted")
	}
}

func TestStoreMemoryAccounting(t *testing.T) {
	s := NewStore()
	own := []TaskRecord{record(0, 0, "12345"), record(0, 1, "")} // 8 and 3 bytes
	must(t, s.Stage(1, own))
	must(t, s.StageBuddy(2, 1, []TaskRecord{record(0, 5, "1234567")})) // 10
	must(t, s.StageBuddy(2, 1, []TaskRecord{record(0, 5, "1")}))       // replaces: 4
	if m := s.Memory(); m != (Memory{Staged: 15}) {
		t.Fatalf("staged: %+v", m)
	}
	must(t, s.Commit(1))
	if m := s.Memory(); m != (Memory{Own: 11, Buddy: 4}) || m.Total() != 15 {
		t.Fatalf("committed: %+v", m)
	}
	must(t, s.Stage(2, nil))
	if m := s.Memory(); m.Total() != 15 {
		t.Fatalf("during staging of an empty epoch: %+v", m)
	}
	must(t, s.Commit(2))
	if m := s.Memory(); m.Total() != 0 || len(s.Wards()) != 0 {
		t.Fatalf("after committing an empty epoch: %+v wards %v", m, s.Wards())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAdoptOwnAddsRestoredTasks(t *testing.T) {
	s := NewStore()
	if err := s.Stage(3, []TaskRecord{{Collection: 0, Lin: 1, Task: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(3); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptOwn(2, nil); !errors.Is(err, ErrEpoch) {
		t.Fatalf("adopt at an old epoch: %v, want ErrEpoch", err)
	}
	restored := []TaskRecord{{Collection: 0, Lin: 5, Task: []byte("b")}, {Collection: 0, Lin: 1, Task: []byte("a2")}}
	if err := s.AdoptOwn(3, restored); err != nil {
		t.Fatal(err)
	}
	if own, _ := s.Own(3); len(own) != 2 {
		t.Fatalf("own has %d records, want 2", len(own))
	}
	if r, ok := s.OwnRecord(TaskRef{Collection: 0, Lin: 5}); !ok || string(r.Task) != "b" {
		t.Fatalf("restored task not adopted: %v %v", r, ok)
	}
	if r, _ := s.OwnRecord(TaskRef{Collection: 0, Lin: 1}); string(r.Task) != "a2" {
		t.Fatalf("a restored record must replace the older one, got %q", r.Task)
	}
}

// ReleaseOwn drops adopted records from the own copy, and only those.
func TestReleaseOwnDropsTasksPlacedElsewhere(t *testing.T) {
	s := NewStore()
	must(t, s.Stage(3, []TaskRecord{{Collection: 0, Lin: 1, Task: []byte("a")}}))
	must(t, s.StageBuddy(2, 3, []TaskRecord{{Collection: 0, Lin: 5, Task: []byte("b")}}))
	must(t, s.Commit(3))
	must(t, s.AdoptOwn(3, []TaskRecord{{Collection: 0, Lin: 5, Task: []byte("b")}, {Collection: 1, Lin: 0, Task: []byte("cc")}}))
	if err := s.ReleaseOwn(2, func(TaskRef) bool { return true }); !errors.Is(err, ErrEpoch) {
		t.Fatalf("release at an old epoch: %v, want ErrEpoch", err)
	}
	elsewhere := TaskRef{Collection: 0, Lin: 5}
	must(t, s.ReleaseOwn(3, func(r TaskRef) bool { return r == elsewhere }))
	own, _ := s.Own(3)
	if len(own) != 2 || own[0].Ref() != (TaskRef{Collection: 0, Lin: 1}) || own[1].Ref() != (TaskRef{Collection: 1, Lin: 0}) {
		t.Fatalf("own after the release: %v", own)
	}
	if _, ok := s.OwnRecord(elsewhere); ok {
		t.Fatal("the released task is still in the own copy")
	}
	if r, ok := s.BuddyRecord(2, elsewhere); !ok || string(r.Task) != "b" {
		t.Fatalf("the buddy copy must keep its record: %v %v", r, ok)
	}
	if m := s.Memory(); m.Own != 3 || m.Buddy != 1 {
		t.Fatalf("memory after the release: %+v, want 3 own and 1 buddy bytes", m)
	}
}

// AnyRecord finds a task's record in the own copy or any ward's copy.
func TestStoreAnyRecord(t *testing.T) {
	s := NewStore()
	a, b := TaskRef{Collection: 0, Lin: 1}, TaskRef{Collection: 0, Lin: 2}
	if err := s.Stage(1, []TaskRecord{{Collection: 0, Lin: 1, Task: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.StageBuddy(3, 1, []TaskRecord{{Collection: 0, Lin: 2, Task: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	if r, ok := s.AnyRecord(a); !ok || string(r.Task) != "a" {
		t.Fatalf("own record: %v %v", r, ok)
	}
	if r, ok := s.AnyRecord(b); !ok || string(r.Task) != "b" {
		t.Fatalf("ward's record: %v %v", r, ok)
	}
	if _, ok := s.AnyRecord(TaskRef{Collection: 1, Lin: 0}); ok {
		t.Fatal("a record of a task it does not hold")
	}
}
