package logging

import "slices"

// receivedSet is the set of message identities a task has received since
// its last checkpoint: Arrive drops a message whose identity is in it
// (a duplicate, sent again by a recovering sender or a survivor's log),
// and replay waits for the region messages a message's send followed.
//
// An identity without a commutative path is (sender, SRN), and a sender's
// SRNs grow with each of its sends to any task: the ones one receiver
// gets form an increasing sequence with gaps (the sends to other tasks),
// in the same steps again and again when the program repeats itself (a
// stencil's neighbour, a cell's compute). They are kept per sender as
// runs of equally spaced SRNs, extended in O(1) while messages arrive in
// their send order, which is the order of one sender's messages to one
// task outside recovery and migration. An SRN at or below the sender's
// highest one received (an arrival out of order) goes to a set of its
// own, so the set stays exact. An identity with a path (a send made by a
// per-message handler of a commutative region) is kept whole.
//
// A lookup or an addition costs, in the common case (a message newer
// than its sender's others, from the sender of the previous lookup or
// one of a few), a few comparisons and no hashing; the memory grows with
// the number of runs, one per message only when a sender's sends to the
// task are spaced irregularly. The zero value is empty and allocates
// nothing; emptied at a checkpoint, the set keeps its arrays.
type receivedSet struct {
	// senders, in the order of their first message since the set was
	// created; indexed by sender once there are more than
	// receivedScanMax of them. A checkpoint empties each sender's runs
	// and keeps its entry and arrays for the next period.
	senders []senderSRNs
	index   map[TaskID]int32
	// last is the position in senders of the last sender looked up.
	last int32
	// paths holds the identities with a commutative path.
	paths map[MessageID]struct{}
}

// receivedScanMax is the number of senders up to which a lookup scans
// senders rather than index.
const receivedScanMax = 8

// senderSRNs is the part of a receivedSet from one sender, without paths.
type senderSRNs struct {
	sender TaskID
	// current is the run of the highest SRN received (count 0: none since
	// the set was emptied); more, nil while current is the only run and
	// every SRN arrived in order, holds the others.
	current srnRun
	more    *moreSRNs
}

// moreSRNs is the rarer part of a senderSRNs.
type moreSRNs struct {
	// done are the runs before current, sorted: every SRN of one is below
	// every SRN of the next and of current.
	done []srnRun
	// late are the SRNs received when a higher one had been.
	late map[uint64]struct{}
}

// srnRun is the SRNs first, first+step, …, first+(count-1)·step (step is
// 0 when count is 1).
type srnRun struct {
	first, step, count uint64
}

func (r srnRun) last() uint64 { return r.first + r.step*(r.count-1) }

func (r srnRun) contains(srn uint64) bool {
	if r.count == 0 || srn < r.first {
		return false
	}
	d := srn - r.first
	if r.step == 0 {
		return d == 0
	}
	return d%r.step == 0 && d/r.step < r.count
}

// contains reports whether the set holds id.
func (s *receivedSet) contains(id MessageID) bool {
	if !id.CPI.IsEmpty() {
		_, ok := s.paths[id]
		return ok
	}
	from := s.find(id.Sender)
	return from != nil && from.contains(id.SRN)
}

// add puts id in the set (nothing if it is there).
func (s *receivedSet) add(id MessageID) {
	if !id.CPI.IsEmpty() {
		if s.paths == nil {
			s.paths = map[MessageID]struct{}{}
		}
		s.paths[id] = struct{}{}
		return
	}
	from := s.find(id.Sender)
	if from == nil {
		from = s.addSender(id.Sender)
	}
	from.add(id.SRN)
}

// find returns the entry of sender, or nil.
func (s *receivedSet) find(sender TaskID) *senderSRNs {
	if int(s.last) < len(s.senders) && s.senders[s.last].sender == sender {
		return &s.senders[s.last]
	}
	if s.index != nil {
		i, ok := s.index[sender]
		if !ok {
			return nil
		}
		s.last = i
		return &s.senders[i]
	}
	for i := range s.senders {
		if s.senders[i].sender == sender {
			s.last = int32(i)
			return &s.senders[i]
		}
	}
	return nil
}

func (s *receivedSet) addSender(sender TaskID) *senderSRNs {
	s.senders = append(s.senders, senderSRNs{sender: sender})
	i := len(s.senders) - 1
	switch {
	case s.index != nil:
		s.index[sender] = int32(i)
	case len(s.senders) > receivedScanMax:
		s.index = make(map[TaskID]int32, 2*len(s.senders))
		for j := range s.senders {
			s.index[s.senders[j].sender] = int32(j)
		}
	}
	s.last = int32(i)
	return &s.senders[i]
}

func (f *senderSRNs) contains(srn uint64) bool {
	if f.current.count == 0 || srn > f.current.last() {
		return false
	}
	if f.current.contains(srn) {
		return true
	}
	more := f.more
	if more == nil {
		return false
	}
	if _, ok := more.late[srn]; ok {
		return true
	}
	// The last run whose first SRN is at most srn.
	i, _ := slices.BinarySearchFunc(more.done, srn, func(r srnRun, srn uint64) int {
		if r.first > srn {
			return 1
		}
		return -1
	})
	return i > 0 && more.done[i-1].contains(srn)
}

func (f *senderSRNs) extra() *moreSRNs {
	if f.more == nil {
		f.more = &moreSRNs{}
	}
	return f.more
}

func (f *senderSRNs) add(srn uint64) {
	cur := &f.current
	switch {
	case cur.count == 0:
		*cur = srnRun{first: srn, count: 1}
	case srn <= cur.last():
		if f.contains(srn) {
			return
		}
		more := f.extra()
		if more.late == nil {
			more.late = map[uint64]struct{}{}
		}
		more.late[srn] = struct{}{}
	case cur.count == 1:
		cur.step, cur.count = srn-cur.first, 2
	case srn-cur.last() == cur.step:
		cur.count++
	default:
		more := f.extra()
		more.done = append(more.done, *cur)
		*cur = srnRun{first: srn, count: 1}
	}
}

// reset empties the set, keeping its arrays for the next period.
func (s *receivedSet) reset() {
	for i := range s.senders {
		f := &s.senders[i]
		f.current = srnRun{}
		if f.more != nil {
			f.more.done = f.more.done[:0]
			clear(f.more.late)
		}
	}
	clear(s.paths)
}

// len returns the number of identities in the set.
func (s *receivedSet) len() int {
	n := len(s.paths)
	for i := range s.senders {
		f := &s.senders[i]
		n += int(f.current.count)
		if f.more != nil {
			n += len(f.more.late)
			for _, r := range f.more.done {
				n += int(r.count)
			}
		}
	}
	return n
}

// list returns the identities of the set, sorted (MessageID.Compare).
func (s *receivedSet) list() []MessageID {
	var out []MessageID
	for i := range s.senders {
		f := &s.senders[i]
		var done []srnRun
		var late map[uint64]struct{}
		if f.more != nil {
			done, late = f.more.done, f.more.late
		}
		for _, r := range append(done[:len(done):len(done)], f.current) {
			for k := range r.count {
				out = append(out, MessageID{Sender: f.sender, SRN: r.first + k*r.step})
			}
		}
		for srn := range late {
			out = append(out, MessageID{Sender: f.sender, SRN: srn})
		}
	}
	for id := range s.paths {
		out = append(out, id)
	}
	slices.SortFunc(out, MessageID.Compare)
	return out
}
