package migrate

import (
	"fmt"
	"maps"
	"slices"
)

// Buddy is the PE that keeps pe's buddy copy: the next live PE after pe in
// ring order (pe itself may be dead). It is -1 if no other PE is live.
func Buddy(pe int, live []bool) int {
	n := len(live)
	for step := 1; step < n; step++ {
		if candidate := (pe + step) % n; live[candidate] {
			return candidate
		}
	}
	return -1
}

// Ward is the PE whose buddy pe is: the previous live PE before pe in ring
// order. It is -1 if no other PE is live.
func Ward(pe int, live []bool) int {
	n := len(live)
	for step := 1; step < n; step++ {
		if candidate := ((pe-step)%n + n) % n; live[candidate] {
			return candidate
		}
	}
	return -1
}

// Store is one PE's in-memory checkpoints: its own committed copy and the
// buddy copies it keeps for its ward(s), with a staged epoch in progress.
//
// A coordinated checkpoint is two-phase: each PE stages its own records
// (Stage) and the copies its wards send it (StageBuddy); when the launcher
// knows every PE has staged, each PE calls Commit, which only then drops the
// older epoch. If the checkpoint fails (a PE dies while it is taken), Abort
// drops the staged epoch and the committed one stays usable.
//
// The Store keeps the record slices' payloads as given: the caller must not
// modify them afterwards. It is not safe for concurrent use.
type Store struct {
	committed storeEpoch
	staged    storeEpoch
	isStaging bool
}

type storeEpoch struct {
	epoch      uint64
	ownSet     bool
	own        []TaskRecord
	buddies    map[int][]TaskRecord // by ward PE
	ownBytes   int64
	buddyBytes int64
}

// NewStore returns an empty store (committed epoch 0: no checkpoint).
func NewStore() *Store { return &Store{} }

// Epoch is the committed epoch, 0 before the first commit.
func (s *Store) Epoch() uint64 { return s.committed.epoch }

// Staging is the epoch being staged, if any.
func (s *Store) Staging() (epoch uint64, ok bool) { return s.staged.epoch, s.isStaging }

func (s *Store) stageEpoch(epoch uint64) error {
	if epoch <= s.committed.epoch {
		return fmt.Errorf("%w: staging epoch %d, committed epoch is %d", ErrEpoch, epoch, s.committed.epoch)
	}
	if s.isStaging && s.staged.epoch != epoch {
		return fmt.Errorf("%w: staging epoch %d while epoch %d is staged (abort it first)", ErrEpoch, epoch, s.staged.epoch)
	}
	if !s.isStaging {
		s.staged = storeEpoch{epoch: epoch, buddies: map[int][]TaskRecord{}}
		s.isStaging = true
	}
	return nil
}

// Stage records this PE's own records for epoch, replacing any staged
// before for the same epoch.
func (s *Store) Stage(epoch uint64, own []TaskRecord) error {
	sorted, err := sortedRecords(own)
	if err != nil {
		return err
	}
	if err := s.stageEpoch(epoch); err != nil {
		return err
	}
	s.staged.own, s.staged.ownSet, s.staged.ownBytes = sorted, true, recordsBytes(sorted)
	return nil
}

// StageBuddy records the copy fromPE sent for epoch (this PE is its buddy),
// replacing any staged before from the same PE.
func (s *Store) StageBuddy(fromPE int, epoch uint64, records []TaskRecord) error {
	sorted, err := sortedRecords(records)
	if err != nil {
		return err
	}
	if err := s.stageEpoch(epoch); err != nil {
		return err
	}
	s.staged.buddyBytes -= recordsBytes(s.staged.buddies[fromPE])
	s.staged.buddies[fromPE] = sorted
	s.staged.buddyBytes += recordsBytes(sorted)
	return nil
}

// Commit makes the staged epoch the committed one and only now drops the
// previous epoch, own copy and buddy copies alike (a buddy copy of a PE
// that sent none for this epoch is dropped too: it is obsolete).
func (s *Store) Commit(epoch uint64) error {
	if !s.isStaging || s.staged.epoch != epoch {
		return fmt.Errorf("%w: commit of epoch %d, which is not staged", ErrEpoch, epoch)
	}
	if !s.staged.ownSet {
		return fmt.Errorf("%w: commit of epoch %d before its own records were staged", ErrEpoch, epoch)
	}
	s.committed, s.staged, s.isStaging = s.staged, storeEpoch{}, false
	return nil
}

// Abort drops the staged epoch; the committed one is untouched.
func (s *Store) Abort(epoch uint64) error {
	if !s.isStaging || s.staged.epoch != epoch {
		return fmt.Errorf("%w: abort of epoch %d, which is not staged", ErrEpoch, epoch)
	}
	s.staged, s.isStaging = storeEpoch{}, false
	return nil
}

// Own is this PE's committed records, sorted by task, if epoch is the
// committed epoch.
func (s *Store) Own(epoch uint64) ([]TaskRecord, bool) {
	if epoch == 0 || epoch != s.committed.epoch {
		return nil, false
	}
	return s.committed.own, true
}

// Buddy is the committed copy this PE keeps for ward, sorted by task, and
// its epoch.
func (s *Store) Buddy(ward int) (epoch uint64, records []TaskRecord, ok bool) {
	records, ok = s.committed.buddies[ward]
	if !ok {
		return 0, nil, false
	}
	return s.committed.epoch, records, true
}

// BuddyRecord is one task's record from the committed copy kept for ward.
func (s *Store) BuddyRecord(ward int, task TaskRef) (TaskRecord, bool) {
	return findRecord(s.committed.buddies[ward], task)
}

// AnyRecord is one task's record from any committed copy this PE keeps,
// its own first, then its wards' in rank order.
func (s *Store) AnyRecord(task TaskRef) (TaskRecord, bool) {
	if r, ok := findRecord(s.committed.own, task); ok {
		return r, true
	}
	for _, ward := range s.Wards() {
		if r, ok := findRecord(s.committed.buddies[ward], task); ok {
			return r, true
		}
	}
	return TaskRecord{}, false
}

// OwnRecord is one task's record from this PE's committed copy.
func (s *Store) OwnRecord(task TaskRef) (TaskRecord, bool) {
	return findRecord(s.committed.own, task)
}

func findRecord(sorted []TaskRecord, task TaskRef) (TaskRecord, bool) {
	i, found := slices.BinarySearchFunc(sorted, task, func(r TaskRecord, t TaskRef) int {
		return CompareTaskRefs(r.Ref(), t)
	})
	if !found {
		return TaskRecord{}, false
	}
	return sorted[i], true
}

// Wards lists, in rank order, the PEs whose committed copies this PE keeps.
func (s *Store) Wards() []int {
	return slices.Sorted(maps.Keys(s.committed.buddies))
}

// Memory is the payload bytes a Store holds.
type Memory struct {
	Own    int64 // committed own copy
	Buddy  int64 // committed buddy copies
	Staged int64 // staged epoch, own and buddy
}

// Total is the sum of the three.
func (m Memory) Total() int64 { return m.Own + m.Buddy + m.Staged }

// Memory reports the payload bytes held.
func (s *Store) Memory() Memory {
	return Memory{
		Own:    s.committed.ownBytes,
		Buddy:  s.committed.buddyBytes,
		Staged: s.staged.ownBytes + s.staged.buddyBytes,
	}
}

// AdoptBuddy installs, at the committed epoch, the copy that ward re-sends
// after its buddy failed (its new buddy is this PE), so that a further
// failure of ward before the next checkpoint is still recoverable.
func (s *Store) AdoptBuddy(ward int, epoch uint64, records []TaskRecord) error {
	if epoch == 0 || epoch != s.committed.epoch {
		return fmt.Errorf("%w: adopting a copy of epoch %d, committed epoch is %d", ErrEpoch, epoch, s.committed.epoch)
	}
	sorted, err := sortedRecords(records)
	if err != nil {
		return err
	}
	if s.committed.buddies == nil {
		s.committed.buddies = map[int][]TaskRecord{}
	}
	s.committed.buddyBytes -= recordsBytes(s.committed.buddies[ward])
	s.committed.buddies[ward] = sorted
	s.committed.buddyBytes += recordsBytes(sorted)
	return nil
}

// AdoptOwn adds records of tasks restored on this PE after a failure to
// its own copy of the committed epoch (replacing any of the same task), so
// that this PE protects them from now on: it re-sends its own copy to its
// buddy, and restores them from it if the job rolls back.
func (s *Store) AdoptOwn(epoch uint64, records []TaskRecord) error {
	if epoch == 0 || epoch != s.committed.epoch {
		return fmt.Errorf("%w: adopting tasks of epoch %d, committed epoch is %d", ErrEpoch, epoch, s.committed.epoch)
	}
	merged := map[TaskRef]TaskRecord{}
	for _, r := range s.committed.own {
		merged[r.Ref()] = r
	}
	for _, r := range records {
		merged[r.Ref()] = r
	}
	all := make([]TaskRecord, 0, len(merged))
	for _, r := range merged {
		all = append(all, r)
	}
	sorted, err := sortedRecords(all)
	if err != nil {
		return err
	}
	s.committed.own, s.committed.ownSet = sorted, true
	s.committed.ownBytes = recordsBytes(sorted)
	return nil
}

// ReleaseOwn drops from this PE's own copy of the committed epoch the
// records of the tasks release names: tasks it adopted in a recovery
// that a later recovery's plan placed on another PE. The own copy is
// what a rollback restores, so it must hold only the tasks whose
// checkpoint this PE holds; a record it kept would restore its task a
// second time, here as well as where the plan put it. Buddy copies are
// not touched.
func (s *Store) ReleaseOwn(epoch uint64, release func(TaskRef) bool) error {
	if epoch == 0 || epoch != s.committed.epoch {
		return fmt.Errorf("%w: releasing tasks of epoch %d, committed epoch is %d", ErrEpoch, epoch, s.committed.epoch)
	}
	kept := make([]TaskRecord, 0, len(s.committed.own))
	for _, r := range s.committed.own {
		if !release(r.Ref()) {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(s.committed.own) {
		return nil
	}
	s.committed.own = kept
	s.committed.ownBytes = recordsBytes(kept)
	return nil
}
