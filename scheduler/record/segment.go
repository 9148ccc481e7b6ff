package record

import "fmt"

// End is how a recorded period ends.
type End uint8

const (
	// Open: the file ends inside the period (the job ended, or the PE was
	// killed, before the task's next checkpoint).
	Open End = iota
	// Checkpointed: the task's next checkpoint follows (Segment.Next).
	Checkpointed
	// Left: the task moved to another PE.
	Left
	// Cut: a rollback of the PE cut the period.
	Cut
)

func (e End) String() string {
	switch e {
	case Open:
		return "open (the record ends before the next checkpoint)"
	case Checkpointed:
		return "checkpointed"
	case Left:
		return "left (the task moved to another PE)"
	case Cut:
		return "cut by a rollback"
	}
	return fmt.Sprintf("End(%d)", uint8(e))
}

// Step is one run of the task's code: the delivery (DELIVER, COMPLETE or
// RESUME) and what the code did, in order (SEND and AT_SYNC entries).
type Step struct {
	Delivery *Entry
	Effects  []*Entry
}

// Sends are the SEND entries of the step.
func (s Step) Sends() []*Entry {
	var out []*Entry
	for _, e := range s.Effects {
		if e.Kind == Kind_SEND {
			out = append(out, e)
		}
	}
	return out
}

// Segment is one recorded period of a task: its state at the period's
// checkpoint, then its steps.
type Segment struct {
	File  *File
	Task  uint64
	Epoch uint64
	// Generation is the PE's recovery generation when the period began.
	Generation uint64
	// State is the STATE entry's record: a migrate PECheckpoint holding
	// the task's record.
	State []byte
	Steps []Step
	End   End
	// Next is the state of the next checkpoint (End == Checkpointed).
	Next *Entry
}

// Segments returns the periods of task recorded in f, in file order.
// Entries of the task outside a period (after a move brought it here in
// the middle of one) are passed over.
func Segments(f *File, task uint64) []*Segment {
	var out []*Segment
	var cur *Segment
	end := func(how End, next *Entry) {
		if cur != nil {
			cur.End, cur.Next = how, next
			out = append(out, cur)
			cur = nil
		}
	}
	for _, e := range f.Entries {
		if e.Kind == Kind_ROLLBACK {
			end(Cut, nil)
			continue
		}
		if e.Task != task {
			continue
		}
		switch e.Kind {
		case Kind_STATE:
			end(Checkpointed, e)
			if !e.MovedIn {
				cur = &Segment{File: f, Task: task, Epoch: e.Epoch, Generation: e.Generation, State: e.Record}
			}
		case Kind_LEAVE:
			end(Left, nil)
		case Kind_DELIVER, Kind_COMPLETE, Kind_RESUME:
			if cur != nil {
				cur.Steps = append(cur.Steps, Step{Delivery: e})
			}
		case Kind_SEND, Kind_AT_SYNC:
			if cur != nil && len(cur.Steps) > 0 {
				s := &cur.Steps[len(cur.Steps)-1]
				s.Effects = append(s.Effects, e)
			}
		}
	}
	end(Open, nil)
	return out
}

// Choose picks the period to replay among the recordings of one epoch
// (each a real execution): a checkpointed one before any other, then the
// one with the most steps, then the last given. It returns nil for none.
func Choose(segs []*Segment) *Segment {
	var best *Segment
	for _, s := range segs {
		if best == nil || better(s, best) {
			best = s
		}
	}
	return best
}

func better(a, b *Segment) bool {
	if (a.End == Checkpointed) != (b.End == Checkpointed) {
		return a.End == Checkpointed
	}
	return len(a.Steps) >= len(b.Steps)
}
