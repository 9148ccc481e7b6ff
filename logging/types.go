package logging

import (
	"errors"
	"fmt"

	"github.com/gochare/gochare/commutative"
)

// Kind names a protocol.
type Kind uint8

const (
	// KindNone is checkpoint/restart: no logging; on a failure every task
	// rolls back to the last checkpoint.
	KindNone Kind = iota
	// KindFullDet is causal message logging with one determinant per
	// reception, replayed in exact reception order.
	KindFullDet
	// KindPartialDet records determinants only for order-dependent
	// receptions; ordered and commutative ones replay in any order the
	// program admits.
	KindPartialDet
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "None"
	case KindFullDet:
		return "FullDet"
	case KindPartialDet:
		return "PartialDet"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ErrUnknownKind is returned by ParseKind.
var ErrUnknownKind = errors.New("logging: unknown protocol")

// ParseKind returns the protocol named s ("None", "FullDet", "PartialDet").
func ParseKind(s string) (Kind, error) {
	for _, k := range []Kind{KindNone, KindFullDet, KindPartialDet} {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%q: %w", s, ErrUnknownKind)
}

// PEID identifies a PE, the unit of failure.
type PEID int32

// TaskID and MessageID are commutative's identities.
type (
	TaskID    = commutative.TaskID
	MessageID = commutative.MessageID
)

// Message is an application message as the protocols see it. Payload is
// opaque; the protocol never reads it.
type Message struct {
	ID         MessageID
	To         TaskID
	Handler    uint32
	Annotation commutative.Annotation
	// Key is the program's key (iteration, step): it names the region of a
	// commutative message and lets the caller's admission test match keyed
	// buffering.
	Key     uint64
	Payload []byte
	// Value, when not nil, is the message itself, given by its sender
	// without being encoded (Payload is then empty; see the scheduler's
	// Proxy.Give path): on the same PE the handler gets it as it is, for
	// another PE under None the scheduler encodes it into the batch that
	// carries it. A message Send logs is encoded once, by
	// Config.Values, straight into the sender log, and its envelope
	// carries the logged bytes instead (Value nil). Otherwise it is
	// opaque: the protocols carry it and never read it.
	Value any
	// Requires (PartialDet only, set by Send) lists the region receptions
	// in the send's causal past since the last checkpoint: the message
	// must not be handled by Dependency.Task before that task has handled
	// Dependency.Trigger. A replayed commutative region is free to take its
	// messages in any order, but not to take one before a region message
	// whose handler's sends led to it.
	Requires []Dependency
}

// ValueEncoder encodes the value of a message that carries one
// (Message.Value): the scheduler's codecs, which Send uses to encode a
// logged message's value straight into the sender log. Both are pure
// functions of the message.
type ValueEncoder interface {
	// ValueSize is the size of the encoding of value, the value of a
	// message to handler.
	ValueSize(handler uint32, value any) int
	// AppendValue appends the encoding of value, the value of a message
	// to handler, to b.
	AppendValue(b []byte, handler uint32, value any) ([]byte, error)
}

// Dependency says that a region handler of Task sent a message while
// handling Trigger: whatever that send led to comes after Task's reception
// of Trigger.
type Dependency struct {
	Task    TaskID
	Trigger MessageID
}

func (d Dependency) compare(other Dependency) int {
	if d.Task != other.Task {
		if d.Task < other.Task {
			return -1
		}
		return 1
	}
	return d.Trigger.Compare(other.Trigger)
}

// encodedSize is the dependency's size on the wire.
func (d Dependency) encodedSize() int { return 8 + d.Trigger.EncodedSize() }

func (d Dependency) String() string { return fmt.Sprintf("t%d after %v", d.Task, d.Trigger) }

// RegionKey is the commutative region the message belongs to.
func (m Message) RegionKey() commutative.RegionKey {
	return commutative.RegionKey{Handler: m.Handler, Key: m.Key}
}

// wireSize is the message's size in a log or on the wire.
func (m Message) wireSize() int {
	n := m.ID.EncodedSize() + 8 + 4 + 2 + 8 + 2 + len(m.Payload)
	for _, d := range m.Requires {
		n += d.encodedSize()
	}
	return n
}

// Determinant records that a task received a message at a position of its
// reception sequence: (SPE, SRN, CPI) of the message, and (RPE, RSN).
type Determinant struct {
	Message  MessageID
	Receiver TaskID
	RSN      uint64
	// Creator and Seq stamp the record under an event logger
	// (Config.EventLogger): the PE that created it and its number among
	// that PE's records of the checkpoint period (from 1). Zero otherwise.
	Creator PEID
	Seq     uint64
}

func (d Determinant) String() string {
	return fmt.Sprintf("%v->t%d@%d", d.Message, d.Receiver, d.RSN)
}

// EncodedSize is the number of bytes the determinant takes when piggybacked.
func (d Determinant) EncodedSize() int { return d.Message.EncodedSize() + 16 + stampSize(d.Seq) }

// stampSize is the size of an event logger's stamp (Creator, Seq): none
// without one.
func stampSize(seq uint64) int {
	if seq == 0 {
		return 0
	}
	return 12
}

type determinantKey struct {
	receiver TaskID
	rsn      uint64
}

func (d Determinant) key() determinantKey { return determinantKey{d.Receiver, d.RSN} }

// EnvelopeKind says what an Envelope carries.
type EnvelopeKind uint8

const (
	// EnvelopeMessage carries an application message and piggybacked
	// determinants.
	EnvelopeMessage EnvelopeKind = iota
	// EnvelopeAck acknowledges that the sending PE now stores the
	// determinants of the envelope numbered Carry by the PE it goes to,
	// and the listed progress records. (Determinants listed in an
	// acknowledgement are taken too, by position (Receiver, RSN) only:
	// the protocols send none.)
	EnvelopeAck
	// EnvelopeRecovery carries, for one restored task, every determinant of
	// its receptions that the sending PE holds. A restored task delivers
	// nothing until it has one from each survivor.
	EnvelopeRecovery
)

// Envelope is what travels between PEs.
type Envelope struct {
	Kind     EnvelopeKind
	From, To PEID
	// Message is set for EnvelopeMessage.
	Message Message
	// Replayed marks a message resent from a sender log during recovery.
	Replayed bool
	// Determinants are piggybacked (EnvelopeMessage), acknowledged
	// (EnvelopeAck) or handed over (EnvelopeRecovery).
	Determinants []Determinant
	// Progress records are piggybacked, acknowledged or handed over like
	// determinants (PartialDet only).
	Progress []Progress
	// Task is the restored task of an EnvelopeRecovery.
	Task TaskID
	// Epoch is, for an EnvelopeRecovery, the number of failed PEs its
	// sender knew of: a restored task waits for one envelope of the latest
	// epoch from each survivor.
	Epoch uint32
	// Carry numbers an EnvelopeMessage that carries determinants among
	// those of its sender (from 1, never reused; 0 if it carries none, or
	// under an event logger, where nothing is acknowledged). The
	// EnvelopeAck of whichever PE stores them names it by that number
	// alone: its sender knows which determinants it carried.
	Carry uint64
}

// Progress says that a task had made RSN receptions when it sent a message
// that left its PE. PartialDet needs it because receptions without a
// determinant leave no other trace: a restored task must not take a new
// order-dependent message before it has re-executed that many receptions,
// or the sends others have already seen would change identity.
type Progress struct {
	Task TaskID
	RSN  uint64
	// Creator and Seq stamp the record under an event logger, as for a
	// Determinant.
	Creator PEID
	Seq     uint64
}

// EncodedSize is the number of bytes the record takes when piggybacked.
func (p Progress) EncodedSize() int { return progressSize + stampSize(p.Seq) }

func (p Progress) String() string { return fmt.Sprintf("t%d@%d", p.Task, p.RSN) }

// progressSize is the encoded size of a Progress record.
const progressSize = 16

// PiggybackBytes is the size of the determinants the envelope carries.
func (e Envelope) PiggybackBytes() int {
	n := 0
	for _, d := range e.Determinants {
		n += d.EncodedSize()
	}
	for _, p := range e.Progress {
		n += p.EncodedSize()
	}
	return n
}

// Delivery is a message the caller must now hand to its handler.
type Delivery struct {
	Message Message
	// RSN is the reception's position in the task's reception sequence.
	RSN uint64
	// Rival, set by PartialDet only when Ambiguous, is another message
	// without a determinant that the task could have handled at this
	// position instead of Message, outside Message's region: the program
	// does not fix the order of the two (its annotations are wrong), so a
	// replay could take them in the other order. The caller must not run
	// the handler; the job cannot be protected.
	Rival     Message
	Ambiguous bool
}

// TaskCheckpoint is the protocol's part of a task checkpoint: identity
// counters and the identities received since the previous checkpoint
// (always empty for a coordinated checkpoint, kept for migration).
type TaskCheckpoint struct {
	Counters commutative.TaskState
	Received []MessageID
	// Requires is the task's causal past of region receptions (PartialDet;
	// empty for a coordinated checkpoint, kept for migration).
	Requires []Dependency
}

// Relocation says that a failed PE's task is restored on PE.
type Relocation struct {
	Task TaskID
	PE   PEID
}

// NewDeterminant is a determinant created on this PE, reported in Ready.
type NewDeterminant struct {
	Determinant Determinant
	Creator     PEID
}

// Ready is the output of a protocol since the last Advance.
type Ready struct {
	// Envelopes must be transmitted, in this order.
	Envelopes []Envelope
	// Determinants created since the last Advance, with
	// Config.ReportDeterminants only (informational: they are already
	// piggybacked on the envelopes that depend on them, or on an earlier
	// envelope of this Ready to the same PE).
	Determinants []NewDeterminant
	// RollbackAll (None only) asks the caller to restore every task of the
	// job from its last checkpoint and drop every message in flight.
	RollbackAll bool
	// EventLog (Config.EventLogger only) are the records to send to an
	// event logger, in order, on the PE's stream to it; Fetches the
	// recovery requests to send to loggers (see eventlog.go).
	EventLog []EventLogBatch
	Fetches  []EventLogFetch
}

// IsEmpty reports whether there is nothing to do.
func (r Ready) IsEmpty() bool {
	return len(r.Envelopes) == 0 && len(r.Determinants) == 0 && !r.RollbackAll && len(r.EventLog) == 0 && len(r.Fetches) == 0
}

// Stats are cumulative counters and current memory use.
type Stats struct {
	Sent             int
	Received         int
	Duplicates       int
	Determinants     int
	PiggybackedBytes int
	LoggedBytes      int
	// Logged counts the messages copied into the sender log since the
	// protocol started (LoggedBytes their bytes, a multicast's payload,
	// which the log holds once, counted once): messages to other PEs,
	// and to tasks that moved in, under FullDet and PartialDet.
	Logged int
	// LogBytes and LoggedMessages are the current size of the sender log.
	LogBytes       int
	LoggedMessages int
	// PeakLogBytes is the largest LogBytes since the protocol started.
	PeakLogBytes int
	// StoredDeterminants is the current number of determinants held.
	StoredDeterminants int
	// ProgressRecords counts Progress records piggybacked (PartialDet).
	ProgressRecords int
	// PiggybackedDeterminants counts determinants piggybacked, and
	// RemoteEnvelopes the application envelopes sent to other PEs (the
	// ones that can carry records).
	PiggybackedDeterminants int
	RemoteEnvelopes         int
	// Forwarded counts messages passed on to a task's new PE (Forward).
	Forwarded int
	// EventLogRecords and EventLogBytes count the records sent to event
	// loggers (Config.EventLogger) and their encoded size.
	EventLogRecords int
	EventLogBytes   int
}
