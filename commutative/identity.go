package commutative

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// TaskID is the global identifier of a task (a chare): the SPE of the
// messages it sends and the RPE of the messages it receives.
type TaskID uint64

// MessageID identifies a sent message system-wide, independently of the
// order in which commutative regions were consumed.
type MessageID struct {
	// Sender is the SPE: the task that sent the message.
	Sender TaskID
	// SRN is the sender region number: incremented on each send outside a
	// commutative region and once when a region starts.
	SRN uint64
	// CPI is the commutative path; empty outside a region.
	CPI Path
}

func (id MessageID) String() string {
	if id.CPI.IsEmpty() {
		return fmt.Sprintf("t%d#%d", id.Sender, id.SRN)
	}
	return fmt.Sprintf("t%d#%d%s", id.Sender, id.SRN, id.CPI)
}

// EncodedSize is the number of bytes the identity takes on the wire.
func (id MessageID) EncodedSize() int { return 16 + 2 + len(id.CPI.encoded) }

// Compare orders identities by sender, SRN, then path bytes. It gives maps
// of identities a deterministic iteration order once keys are sorted.
func (id MessageID) Compare(other MessageID) int {
	switch {
	case id.Sender != other.Sender:
		if id.Sender < other.Sender {
			return -1
		}
		return 1
	case id.SRN != other.SRN:
		if id.SRN < other.SRN {
			return -1
		}
		return 1
	}
	return strings.Compare(id.CPI.encoded, other.CPI.encoded)
}

// Path is a commutative path identifier (CPI). The zero value is the empty
// path used outside commutative regions. Paths are comparable with ==.
type Path struct {
	encoded string
}

// IsEmpty reports whether the path is the empty path.
func (p Path) IsEmpty() bool { return p.encoded == "" }

// Len is the encoded length in bytes.
func (p Path) Len() int { return len(p.encoded) }

// Child returns the path of the sendIndex-th send made by the handler of
// trigger, a message of a commutative region. The trigger is named by its
// full identity (which already nests its own path), so the result does not
// depend on the order in which the region's messages were handled.
func Child(trigger MessageID, sendIndex uint32) Path {
	buf := make([]byte, 0, 2*binary.MaxVarintLen64+len(trigger.CPI.encoded)+2*binary.MaxVarintLen32)
	buf = binary.AppendUvarint(buf, uint64(trigger.Sender))
	buf = binary.AppendUvarint(buf, trigger.SRN)
	buf = binary.AppendUvarint(buf, uint64(len(trigger.CPI.encoded)))
	buf = append(buf, trigger.CPI.encoded...)
	buf = binary.AppendUvarint(buf, uint64(sendIndex))
	return Path{encoded: string(buf)}
}

// Trigger returns the region message whose per-message handler made the
// send this path names, and the index of that send within the handler; ok is
// false for the empty path.
func (p Path) Trigger() (trigger MessageID, sendIndex uint32, ok bool) {
	if p.IsEmpty() {
		return MessageID{}, 0, false
	}
	rest := []byte(p.encoded)
	sender, n := binary.Uvarint(rest)
	rest = rest[n:]
	srn, n := binary.Uvarint(rest)
	rest = rest[n:]
	parentLen, n := binary.Uvarint(rest)
	rest = rest[n:]
	parent := Path{encoded: string(rest[:parentLen])}
	index, _ := binary.Uvarint(rest[parentLen:])
	return MessageID{Sender: TaskID(sender), SRN: srn, CPI: parent}, uint32(index), true
}

func (p Path) String() string {
	if p.IsEmpty() {
		return ""
	}
	var b strings.Builder
	p.describe(&b)
	return b.String()
}

// describe writes the path as "/(trigger).index".
func (p Path) describe(b *strings.Builder) {
	rest := []byte(p.encoded)
	sender, n := binary.Uvarint(rest)
	rest = rest[n:]
	srn, n := binary.Uvarint(rest)
	rest = rest[n:]
	parentLen, n := binary.Uvarint(rest)
	rest = rest[n:]
	parent := Path{encoded: string(rest[:parentLen])}
	rest = rest[parentLen:]
	index, _ := binary.Uvarint(rest)
	fmt.Fprintf(b, "/(t%d#%d", sender, srn)
	if !parent.IsEmpty() {
		parent.describe(b)
	}
	fmt.Fprintf(b, ").%d", index)
}
