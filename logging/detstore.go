package logging

import (
	"iter"
	"math/bits"
	"slices"

	"github.com/gochare/gochare/commutative"
)

// determinantStore holds the determinants a PE stores, by receiver: each
// task's are an array sorted by RSN of (RSN, slab index) pairs. A task's
// determinants are recorded in RSN order and under FullDet without gaps
// (one per reception), so an arrival appends, and a look-up finds its
// entry at the offset of its RSN from the first one's without searching;
// PartialDet's, with gaps, fall back to a binary search. A look-up costs
// a probe of a table by task identity (a few hundred keys, not one per
// determinant held) and an array index: the map keyed by (receiver, RSN)
// this replaces took a quarter of a FullDet PE's CPU on LeanMD at 4 PEs,
// most of it cache misses in a table of every determinant held
// (docs/benchmarks.md, "fulldet (2026-11-28)"). Neither the entries nor
// the records hold a pointer, so the collector does not scan them.
type determinantStore struct {
	// tasks finds a task's determinants: an open-addressing table with
	// linear probing, at most half full, of len(tasks) a power of two,
	// a task at the slot of a multiplicative hash of its identity (the
	// top bits, from taskShift). The Go map it replaces, behind a
	// direct-mapped cache of 256 tasks, missed the cache often on
	// LeanMD's few hundred receivers (docs/benchmarks.md, "fd4
	// (2026-11-28)"). Entries leave only all at once (reset). A slot
	// holds the task's taskDeterminants itself, in one cache line: with
	// a pointer to them, an arrival missed the cache on the slot and
	// again on the struct (docs/benchmarks.md, "fd6 (2026-11-28)"). So
	// a *taskDeterminants that of or newTask returns is good until the
	// next newTask, which may move the table.
	tasks     []taskSlot
	taskShift uint
	taskCount int
	count     int
	// slab holds the records themselves.
	slab detSlab
	// paths are the records' message paths (storedDeterminant.path): a
	// record keeps an index, so that the slab holds no pointer. paths[0]
	// is the empty path, which most messages have; a path equal to the
	// last one added (a run of one region's messages) takes its index.
	paths []commutative.Path
	// moreHolders lists, by slot, the holders of a record that its bit
	// set cannot hold: PEs from 64 on, and logger PEs (a recovery
	// envelope's sender).
	moreHolders map[uint32][]PEID
	// stamps are the records' event logger stamps by slot, up to the
	// last slot stored with one (a slot past the end has none): without
	// an event logger the array stays empty, and the records hold only
	// what the forward path reads (storedDeterminant).
	stamps []detStamp
	// spare are the entry arrays of tasks forgotten by reset, for
	// reuse.
	spare [][]determinantEntry
}

// detStamp is a determinant's event logger stamp (Determinant.Creator,
// Seq).
type detStamp struct {
	seq     uint64
	creator PEID
}

// taskSlot is a slot of determinantStore.tasks, 64 bytes.
type taskSlot struct {
	task TaskID
	t    taskDeterminants
	used bool // false: a free slot
}

type taskDeterminants struct {
	// first is entries[0].rsn (when there is one), kept here, in the
	// line find reads anyway: the first entry, written long before, was
	// a cache miss on most look-ups (the ones near the end, just
	// written, are in the cache).
	first   uint64
	entries []determinantEntry
	// dense: the entries are every RSN from first to first+len-1 (each
	// appended at the next RSN, as FullDet records them), so that
	// whether an RSN is stored and where a new one goes follow from
	// first and the length. A new determinant, about half the arrivals
	// at 4 PEs, then reads no entry: the last one, written a step
	// before, was a cache miss on most (docs/benchmarks.md, "fd6
	// (2026-11-28)").
	dense bool
	// host is the task when this PE hosts it (engine.hostedTask sets
	// it, nil otherwise): a determinant stored for it may extend its
	// replay (storeReceived), which costs no look-up in engine.tasks.
	host *hostedTask
}

type determinantEntry struct {
	rsn  uint64
	slot uint32 // index in the slab
}

// detTasksMin is the smallest size of determinantStore.tasks: 32 KiB,
// which the Go allocator gives as a large object, page-aligned, so that
// each slot is a cache line; a smaller array of a type with pointers
// starts after an allocation header, and every slot straddled two lines.
const detTasksMin = 512

func newDeterminantStore() determinantStore {
	return determinantStore{
		tasks:     make([]taskSlot, detTasksMin),
		taskShift: 64 - uint(bits.TrailingZeros(detTasksMin)),
		paths:     []commutative.Path{{}},
	}
}

// taskHome is task's first slot in s.tasks.
func (s *determinantStore) taskHome(task TaskID) uint64 {
	return (uint64(task) * 0x9e3779b97f4a7c15) >> s.taskShift
}

// of returns receiver's determinants, or nil (good until the next
// newTask).
func (s *determinantStore) of(receiver TaskID) *taskDeterminants {
	mask := uint64(len(s.tasks) - 1)
	for i := s.taskHome(receiver); ; i = (i + 1) & mask {
		slot := &s.tasks[i]
		if !slot.used {
			return nil
		}
		if slot.task == receiver {
			return &slot.t
		}
	}
}

// newTask adds receiver, which the store has no determinant of, and
// returns its (empty) determinants, good until the next newTask.
func (s *determinantStore) newTask(receiver TaskID) *taskDeterminants {
	if 2*(s.taskCount+1) > len(s.tasks) {
		s.growTasks()
	}
	var t taskDeterminants
	if n := len(s.spare); n > 0 {
		t.entries, s.spare = s.spare[n-1], s.spare[:n-1]
	}
	s.taskCount++
	return s.insertTask(receiver, t)
}

func (s *determinantStore) insertTask(task TaskID, t taskDeterminants) *taskDeterminants {
	mask := uint64(len(s.tasks) - 1)
	i := s.taskHome(task)
	for s.tasks[i].used {
		i = (i + 1) & mask
	}
	s.tasks[i] = taskSlot{task: task, t: t, used: true}
	return &s.tasks[i].t
}

// growTasks doubles s.tasks.
func (s *determinantStore) growTasks() {
	old := s.tasks
	s.tasks = make([]taskSlot, 2*len(old))
	s.taskShift--
	for i := range old {
		if slot := &old[i]; slot.used {
			s.insertTask(slot.task, slot.t)
		}
	}
}

// find returns the position of rsn in t's entries, or where it would go.
func (t *taskDeterminants) find(rsn uint64) (int, bool) {
	if off := rsn - t.first; off < uint64(len(t.entries)) && t.entries[off].rsn == rsn {
		return int(off), true
	}
	if t.dense {
		if rsn < t.first {
			return 0, false
		}
		return len(t.entries), false
	}
	return t.search(rsn)
}

// search is find's way when rsn is not at its offset from the first
// entry's (gaps, or not stored).
func (t *taskDeterminants) search(rsn uint64) (int, bool) {
	n := len(t.entries)
	if n == 0 {
		return 0, false
	}
	if last := t.entries[n-1].rsn; rsn > last {
		return n, false
	} else if rsn == last {
		return n - 1, true
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

// determinant returns the determinant d records.
func (s *determinantStore) determinant(d *storedDeterminant) Determinant {
	stamp := s.stamp(d.slot)
	return Determinant{
		Message:  MessageID{Sender: d.sender, SRN: d.srn, CPI: s.paths[d.path]},
		Receiver: d.receiver,
		RSN:      d.rsn,
		Creator:  stamp.creator,
		Seq:      stamp.seq,
	}
}

// stamp returns the event logger stamp of the record at slot (zero if it
// has none).
func (s *determinantStore) stamp(slot uint32) detStamp {
	if slot < uint32(len(s.stamps)) {
		return s.stamps[slot]
	}
	return detStamp{}
}

// setStamp keeps the stamp of the record at slot, the last one handed
// out.
func (s *determinantStore) setStamp(slot uint32, stamp detStamp) {
	if slot < uint32(len(s.stamps)) {
		s.stamps[slot] = stamp
		return
	}
	if stamp == (detStamp{}) {
		return
	}
	n := len(s.stamps)
	s.stamps = slices.Grow(s.stamps, int(slot)+1-n)[:slot+1]
	clear(s.stamps[n:])
	s.stamps[slot] = stamp
}

// message returns the message d records the reception of.
func (s *determinantStore) message(d *storedDeterminant) MessageID {
	return MessageID{Sender: d.sender, SRN: d.srn, CPI: s.paths[d.path]}
}

// names reports whether d records the reception of message id.
func (s *determinantStore) names(d *storedDeterminant, id MessageID) bool {
	return d.sender == id.Sender && d.srn == id.SRN && s.paths[d.path] == id.CPI
}

// internPath returns p's index in s.paths, adding it unless it is empty
// or the last one added.
func (s *determinantStore) internPath(p commutative.Path) uint32 {
	if p.IsEmpty() {
		return 0
	}
	if n := len(s.paths) - 1; n > 0 && s.paths[n] == p {
		return uint32(n)
	}
	s.paths = append(s.paths, p)
	return uint32(len(s.paths) - 1)
}

// holds reports whether pe is among d's holders.
func (s *determinantStore) holds(d *storedDeterminant, pe PEID) bool {
	if uint32(pe) < 64 {
		return d.holders&(1<<uint32(pe)) != 0
	}
	return d.flags&detMoreHolders != 0 && slices.Contains(s.moreHolders[d.slot], pe)
}

// addHolder adds pe to d's holders (if it is not among them).
func (s *determinantStore) addHolder(d *storedDeterminant, pe PEID) {
	if uint32(pe) >= 64 {
		s.addMoreHolder(d, pe)
		return
	}
	if bit := uint64(1) << uint32(pe); d.holders&bit == 0 {
		d.holders |= bit
		if d.holderCount < maxHolderCount {
			d.holderCount++
		}
	}
}

// addMoreHolder is addHolder for a PE outside the bit set.
func (s *determinantStore) addMoreHolder(d *storedDeterminant, pe PEID) {
	if s.moreHolders == nil {
		s.moreHolders = map[uint32][]PEID{}
	}
	if more := s.moreHolders[d.slot]; !slices.Contains(more, pe) {
		s.moreHolders[d.slot] = append(more, pe)
		d.flags |= detMoreHolders
		if d.holderCount < maxHolderCount {
			d.holderCount++
		}
	}
}

// dropHolders takes the PEs failed reports failed out of d's holders:
// bits are the failed ones below 64.
func (s *determinantStore) dropHolders(d *storedDeterminant, failedBits uint64, failed func(PEID) bool) {
	d.holders &^= failedBits
	n := bits.OnesCount64(d.holders)
	if d.flags&detMoreHolders != 0 {
		s.moreHolders[d.slot] = slices.DeleteFunc(s.moreHolders[d.slot], failed)
		n += len(s.moreHolders[d.slot])
	}
	d.holderCount = uint16(min(n, maxHolderCount))
}

// holderList returns d's holders, sorted.
func (s *determinantStore) holderList(d *storedDeterminant) []PEID {
	var out []PEID
	for b := d.holders; b != 0; b &= b - 1 {
		out = append(out, PEID(bits.TrailingZeros64(b)))
	}
	if d.flags&detMoreHolders != 0 {
		out = append(out, s.moreHolders[d.slot]...)
	}
	slices.Sort(out)
	return out
}

// add stores a new record for d, which the store does not hold, with
// holders as its holders, and returns it and its slot; t is d.Receiver's
// determinants (s.of), nil if the store has none.
func (s *determinantStore) add(t *taskDeterminants, d Determinant, holders ...PEID) (*storedDeterminant, uint32) {
	if t == nil {
		t = s.newTask(d.Receiver)
	}
	stored, slot := s.slab.get()
	stored.receiver, stored.rsn = d.Receiver, d.RSN
	stored.sender, stored.srn, stored.path = d.Message.Sender, d.Message.SRN, s.internPath(d.Message.CPI)
	s.setStamp(slot, detStamp{seq: d.Seq, creator: d.Creator})
	for _, pe := range holders {
		if bit := uint64(1) << (uint32(pe) & 63); uint32(pe) < 64 && stored.holders&bit == 0 {
			stored.holders |= bit
			stored.holderCount++
		} else if uint32(pe) >= 64 {
			s.addMoreHolder(stored, pe)
		}
	}
	entry := determinantEntry{rsn: d.RSN, slot: slot}
	switch n := len(t.entries); {
	case n == 0:
		t.entries = append(t.entries, entry)
		t.first, t.dense = d.RSN, true
	case t.dense && d.RSN == t.first+uint64(n):
		t.entries = append(t.entries, entry)
	case t.dense && d.RSN > t.first+uint64(n), !t.dense && t.entries[n-1].rsn < d.RSN:
		t.entries = append(t.entries, entry)
		t.dense = false
	default:
		i, found := t.find(d.RSN)
		if found {
			panic("logging: determinantStore.add of a position already stored")
		}
		t.entries = slices.Insert(t.entries, i, entry)
		if i == 0 {
			t.first = d.RSN
		}
		t.dense = false
	}
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
	out := make([]TaskID, 0, s.taskCount)
	for i := range s.tasks {
		if slot := &s.tasks[i]; slot.used {
			out = append(out, slot.task)
		}
	}
	slices.Sort(out)
	return out
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
	for i := range s.tasks {
		if slot := &s.tasks[i]; slot.used {
			s.spare = append(s.spare, slot.t.entries[:0])
			*slot = taskSlot{}
		}
	}
	s.taskCount = 0
	s.count = 0
	s.slab.reset()
	clear(s.paths[1:])
	s.paths = s.paths[:1]
	clear(s.moreHolders)
	clear(s.stamps)
	s.stamps = s.stamps[:0]
}
