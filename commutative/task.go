package commutative

import "fmt"

// RegionKey names the commutative region a message belongs to: the handler
// and the program's key for it (an iteration or step number). All messages
// of one region share it.
type RegionKey struct {
	Handler uint32
	Key     uint64
}

// Region is a task's open commutative region.
type Region struct {
	Open bool
	Key  RegionKey
	// Size is n, fixed by the region's first message.
	Size int
	// Consumed counts the region's messages handled so far.
	Consumed int
	// SRN is the sender region number taken when the region started; every
	// send of the region's per-message handlers carries it.
	SRN uint64
}

// TaskState holds the identity counters of one task. It is a plain value:
// copying it is how a protocol checkpoints it. Between handlers (when no
// reception is in progress) a copy is complete.
type TaskState struct {
	Task TaskID
	// SRN is the last sender region number used.
	SRN uint64
	// RSN is the number of receptions so far (the receiver sequence number
	// of the latest one).
	RSN    uint64
	Region Region

	handler handlerContext
}

// handlerContext describes the reception whose handler is running.
type handlerContext struct {
	active   bool
	inRegion bool
	trigger  MessageID
	sends    uint32
}

// NewTaskState returns the counters of a task that has sent and received
// nothing.
func NewTaskState(task TaskID) TaskState { return TaskState{Task: task} }

// Admits reports whether a message with this annotation and region key may
// be consumed now. While a region is open only its own messages may be: a
// region is isolated from the task's other receptions.
func (t *TaskState) Admits(annotation Annotation, key RegionKey) bool {
	if !t.Region.Open {
		return true
	}
	return annotation.Order == Commutative && key == t.Region.Key
}

// InReception reports whether a handler is running (BeginReception was
// called without the matching EndReception).
func (t *TaskState) InReception() bool { return t.handler.active }

// BeginReception records that the task starts handling message id, and
// returns its receiver sequence number. A commutative message opens a region
// of annotation.RegionSize messages if none is open. It panics if a
// reception is already in progress or if the message is not admitted (see
// Admits): the caller broke the isolation of a region.
func (t *TaskState) BeginReception(id MessageID, annotation Annotation, key RegionKey) uint64 {
	if t.handler.active {
		panic(fmt.Sprintf("commutative: task %d begins reception of %v inside another reception", t.Task, id))
	}
	if !t.Admits(annotation, key) {
		panic(fmt.Sprintf("commutative: task %d received %v (%v) while region %+v is open", t.Task, id, annotation, t.Region.Key))
	}
	t.RSN++
	t.handler = handlerContext{active: true, trigger: id}
	if annotation.Order != Commutative {
		return t.RSN
	}
	if !t.Region.Open {
		if annotation.RegionSize < 1 {
			panic(fmt.Sprintf("commutative: task %d: region of %d messages", t.Task, annotation.RegionSize))
		}
		t.SRN++
		t.Region = Region{Open: true, Key: key, Size: annotation.RegionSize, SRN: t.SRN}
	} else if annotation.RegionSize != t.Region.Size {
		panic(fmt.Sprintf("commutative: task %d: region %+v opened with %d messages, %v says %d",
			t.Task, key, t.Region.Size, id, annotation.RegionSize))
	}
	t.Region.Consumed++
	t.handler.inRegion = true
	return t.RSN
}

// NextSendID returns the identity of the task's next send. Inside a region's
// per-message handler it is the region's SRN with the path of the triggering
// message; anywhere else (ordinary handlers, completion steps, sends made
// outside any handler) it takes the next SRN.
func (t *TaskState) NextSendID() MessageID {
	if t.handler.active && t.handler.inRegion {
		path := Child(t.handler.trigger, t.handler.sends)
		t.handler.sends++
		return MessageID{Sender: t.Task, SRN: t.Region.SRN, CPI: path}
	}
	t.SRN++
	return MessageID{Sender: t.Task, SRN: t.SRN}
}

// EndReception records that the running handler returned. It reports
// whether that handler completed a commutative region: the caller then runs
// the region's completion step, whose sends are ordinary ones. It panics if
// no reception is in progress.
func (t *TaskState) EndReception() (regionComplete bool) {
	if !t.handler.active {
		panic(fmt.Sprintf("commutative: task %d ends a reception it did not begin", t.Task))
	}
	inRegion := t.handler.inRegion
	t.handler = handlerContext{}
	if inRegion && t.Region.Consumed == t.Region.Size {
		t.Region = Region{}
		return true
	}
	return false
}
