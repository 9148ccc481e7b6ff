package logging

import (
	"iter"
	"maps"
	"slices"
)

// determinantStore holds the determinants a PE stores, by receiver: each
// task's are an array sorted by RSN of (RSN, slab index) pairs. A task's
// determinants are recorded in RSN order and under FullDet without gaps
// (one per reception), so an arrival appends, and a look-up finds its
// entry at the offset of its RSN from the first one's without searching;
// PartialDet's, with gaps, fall back to a binary search. A look-up costs
// a map access by task identity (a few hundred keys, not one per
// determinant held) and an array index: the map keyed by (receiver, RSN)
// this replaces took a quarter of a FullDet PE's CPU on LeanMD at 4 PEs,
// most of it cache misses in a table of every determinant held
// (docs/benchmarks.md, "fulldet (2026-11-28)"). The entries hold no
// pointer, so the collector does not scan them.
type determinantStore struct {
	tasks map[TaskID]*taskDeterminants
	// cache holds entries of tasks looked up, at a slot by a hash of the
	// task (a direct-mapped cache): an envelope's determinants are runs of
	// the receptions of the sending PE's tasks, a few hundred of them
	// interleaved, and a map look-up for each run was a tenth of the
	// store's instructions under FullDet on LeanMD (docs/benchmarks.md,
	// "fd3 (2026-11-28)"). Cleared by reset, the only removal from tasks.
	cache *[detCacheSize]detCacheEntry
	count int
	// slab holds the records themselves.
	slab detSlab
	// spare are the arrays of tasks forgotten by reset, for reuse.
	spare []*taskDeterminants
}

type taskDeterminants struct {
	// first is entries[0].rsn (when there is one), kept here, in the
	// line find reads anyway: the first entry, written long before, was
	// a cache miss on most look-ups (the ones near the end, just
	// written, are in the cache).
	first   uint64
	entries []determinantEntry
}

type determinantEntry struct {
	rsn  uint64
	slot uint32 // index in the slab
}

type detCacheEntry struct {
	task TaskID
	t    *taskDeterminants
}

const detCacheSize = 256

// detCacheSlot is task's slot in determinantStore.cache.
func detCacheSlot(task TaskID) int {
	return int((uint64(task) * 0x9e3779b97f4a7c15) >> (64 - 8))
}

func newDeterminantStore() determinantStore {
	return determinantStore{tasks: map[TaskID]*taskDeterminants{}, cache: new([detCacheSize]detCacheEntry)}
}

// of returns receiver's determinants, or nil.
func (s *determinantStore) of(receiver TaskID) *taskDeterminants {
	c := &s.cache[detCacheSlot(receiver)]
	if c.t != nil && c.task == receiver {
		return c.t
	}
	t := s.tasks[receiver]
	if t != nil {
		c.task, c.t = receiver, t
	}
	return t
}

// find returns the position of rsn in t's entries, or where it would go.
func (t *taskDeterminants) find(rsn uint64) (int, bool) {
	n := len(t.entries)
	if n == 0 {
		return 0, false
	}
	first := t.first
	if rsn >= first {
		if off := rsn - first; off < uint64(n) && t.entries[off].rsn == rsn {
			return int(off), true
		}
		if last := t.entries[n-1].rsn; rsn > last {
			return n, false
		} else if rsn == last {
			return n - 1, true
		}
	}
	return slices.BinarySearchFunc(t.entries, rsn, func(e determinantEntry, rsn uint64) int {
		switch {
		case e.rsn < rsn:
			return -1
		case e.rsn > rsn:
			return 1
		}
		return 0
	})
}

// get returns the record of receiver's reception at rsn.
func (s *determinantStore) get(k determinantKey) (*storedDeterminant, bool) {
	t := s.of(k.receiver)
	if t == nil {
		return nil, false
	}
	i, ok := t.find(k.rsn)
	if !ok {
		return nil, false
	}
	return s.slab.at(t.entries[i].slot), true
}

// add stores a new record for d, which the store does not hold, with
// holders as its holders, and returns it and its slot.
func (s *determinantStore) add(d Determinant, createdHere bool, holders ...PEID) (*storedDeterminant, uint32) {
	t := s.of(d.Receiver)
	if t == nil {
		if n := len(s.spare); n > 0 {
			t, s.spare = s.spare[n-1], s.spare[:n-1]
		} else {
			t = &taskDeterminants{}
		}
		s.tasks[d.Receiver] = t
		s.cache[detCacheSlot(d.Receiver)] = detCacheEntry{d.Receiver, t}
	}
	stored, slot := s.slab.get(d, createdHere, holders...)
	entry := determinantEntry{rsn: d.RSN, slot: slot}
	if n := len(t.entries); n == 0 || t.entries[n-1].rsn < d.RSN {
		t.entries = append(t.entries, entry)
	} else {
		i, found := t.find(d.RSN)
		if found {
			panic("logging: determinantStore.add of a position already stored")
		}
		t.entries = slices.Insert(t.entries, i, entry)
	}
	t.first = t.entries[0].rsn
	s.count++
	return stored, slot
}

// lastRSN returns the highest RSN of receiver's stored determinants (0 if
// none).
func (s *determinantStore) lastRSN(receiver TaskID) uint64 {
	t := s.of(receiver)
	if t == nil || len(t.entries) == 0 {
		return 0
	}
	return t.entries[len(t.entries)-1].rsn
}

func (s *determinantStore) len() int { return s.count }

// receivers returns the tasks the store holds determinants of, sorted.
func (s *determinantStore) receivers() []TaskID {
	return slices.Sorted(maps.Keys(s.tasks))
}

// ofTask yields receiver's records in RSN order.
func (s *determinantStore) ofTask(receiver TaskID) iter.Seq[*storedDeterminant] {
	return func(yield func(*storedDeterminant) bool) {
		t := s.of(receiver)
		if t == nil {
			return
		}
		for _, e := range t.entries {
			if !yield(s.slab.at(e.slot)) {
				return
			}
		}
	}
}

// all yields every record, by receiver then RSN.
func (s *determinantStore) all() iter.Seq[*storedDeterminant] {
	return func(yield func(*storedDeterminant) bool) {
		for _, task := range s.receivers() {
			for d := range s.ofTask(task) {
				if !yield(d) {
					return
				}
			}
		}
	}
}

// reset forgets every record (at a checkpoint), keeping the arrays.
func (s *determinantStore) reset() {
	for task, t := range s.tasks {
		t.entries = t.entries[:0]
		s.spare = append(s.spare, t)
		delete(s.tasks, task)
	}
	clear(s.cache[:])
	s.count = 0
	s.slab.reset()
}
