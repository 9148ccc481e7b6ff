package migrate

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gochare/gochare/internal/protofield"
)

// A PE checkpoint's encoding without the protobuf runtime's copies, for
// the buddy copy a checkpoint sends and keeps (docs/benchmarks.md,
// "Checkpoint cost"): AppendPECheckpoint writes into memory the caller
// reuses from one checkpoint to the next, and DecodePECheckpoint returns
// records that point into the bytes it decodes instead of copies of
// them. Both speak exactly the format of MarshalPECheckpoint and
// UnmarshalPECheckpoint (migratepb.PECheckpoint), which stay the
// reference: the disk files and every other user go through them.

// Field numbers of migratepb.PECheckpoint and migratepb.TaskRecord.
const (
	cpEpoch       = 1
	cpPE          = 2
	cpNumPEs      = 3
	cpFingerprint = 4
	cpTasks       = 5

	recCollection = 1
	recLin        = 2
	recTask       = 3
	recRuntime    = 4
	recProtocol   = 5
)

// AppendPECheckpoint appends to dst the bytes MarshalPECheckpoint returns
// for cp (the same bytes: tasks sorted, fields in order, zero values
// left out) and returns the extended slice.
func AppendPECheckpoint(dst []byte, cp *PECheckpoint) ([]byte, error) {
	tasks, err := sortedRecords(cp.Tasks)
	if err != nil {
		return dst, err
	}
	dst = AppendPECheckpointHeader(dst, cp)
	for _, r := range tasks {
		dst = AppendTaskRecord(dst, r)
	}
	return dst, nil
}

// AppendPECheckpointHeader appends the encoding of cp without its tasks:
// followed by AppendTaskRecord for each task, in the order of
// CompareTaskRefs, it is what AppendPECheckpoint writes (in another order
// it decodes all the same). A checkpoint packs its tasks one by one this
// way, each straight after the other.
func AppendPECheckpointHeader(dst []byte, cp *PECheckpoint) []byte {
	dst = protofield.AppendVarint(dst, cpEpoch, cp.Epoch)
	dst = protofield.AppendVarint(dst, cpPE, uint64(int64(int32(cp.PE))))
	dst = protofield.AppendVarint(dst, cpNumPEs, uint64(int64(int32(cp.NumPEs))))
	return protofield.AppendBytes(dst, cpFingerprint, []byte(cp.JobFingerprint))
}

// AppendTaskRecord appends r as one task of a PE checkpoint's encoding
// (see AppendPECheckpointHeader).
func AppendTaskRecord(dst []byte, r TaskRecord) []byte {
	dst = protowire.AppendTag(dst, cpTasks, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(taskRecordSize(r)))
	dst = protofield.AppendVarint(dst, recCollection, uint64(r.Collection))
	dst = protofield.AppendVarint(dst, recLin, uint64(r.Lin))
	dst = protofield.AppendBytes(dst, recTask, r.Task)
	dst = protofield.AppendBytes(dst, recRuntime, r.Runtime)
	return protofield.AppendBytes(dst, recProtocol, r.Protocol)
}

// PECheckpointSize is the length of cp's encoding.
func PECheckpointSize(cp *PECheckpoint) int {
	n := protofield.VarintSize(cpEpoch, cp.Epoch) + protofield.VarintSize(cpPE, uint64(int64(int32(cp.PE)))) +
		protofield.VarintSize(cpNumPEs, uint64(int64(int32(cp.NumPEs)))) + protofield.BytesSize(cpFingerprint, len(cp.JobFingerprint))
	for _, r := range cp.Tasks {
		n += TaskRecordSize(r)
	}
	return n
}

// TaskRecordSize is the length AppendTaskRecord appends for r.
func TaskRecordSize(r TaskRecord) int { return protofield.BytesSize(cpTasks, taskRecordSize(r)) }

func taskRecordSize(r TaskRecord) int {
	return protofield.VarintSize(recCollection, uint64(r.Collection)) + protofield.VarintSize(recLin, uint64(r.Lin)) +
		protofield.BytesSize(recTask, len(r.Task)) + protofield.BytesSize(recRuntime, len(r.Runtime)) + protofield.BytesSize(recProtocol, len(r.Protocol))
}

// DecodePECheckpoint decodes what MarshalPECheckpoint (or
// AppendPECheckpoint) encoded, as UnmarshalPECheckpoint does, but the
// records' Task, Runtime and Protocol point into b instead of being
// copies: the caller must not change b while it uses them. The error
// wraps ErrCorrupt if b is not a well-formed checkpoint.
func DecodePECheckpoint(b []byte) (*PECheckpoint, error) {
	cp := &PECheckpoint{}
	var pe, numPEs int32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, corrupt(protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == cpEpoch && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, corrupt(protowire.ParseError(n))
			}
			cp.Epoch, b = v, b[n:]
		case (num == cpPE || num == cpNumPEs) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, corrupt(protowire.ParseError(n))
			}
			if num == cpPE {
				pe = int32(v)
			} else {
				numPEs = int32(v)
			}
			b = b[n:]
		case num == cpFingerprint && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, corrupt(protowire.ParseError(n))
			}
			if !utf8.Valid(v) {
				return nil, corrupt(fmt.Errorf("job fingerprint is not UTF-8"))
			}
			cp.JobFingerprint, b = string(v), b[n:]
		case num == cpTasks && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, corrupt(protowire.ParseError(n))
			}
			r, err := decodeTaskRecord(v)
			if err != nil {
				return nil, corrupt(err)
			}
			cp.Tasks, b = append(cp.Tasks, r), b[n:]
		default:
			// A field of another version, or of a known number with a
			// wire type that is not its own: skipped, as the protobuf
			// runtime keeps it as unknown.
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, corrupt(protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	if pe < 0 || numPEs <= 0 || pe >= numPEs {
		return nil, fmt.Errorf("%w: PE %d of %d PEs", ErrCorrupt, pe, numPEs)
	}
	cp.PE, cp.NumPEs = int(pe), int(numPEs)
	for _, r := range cp.Tasks {
		if r.Lin < 0 {
			return nil, fmt.Errorf("%w: PE %d: task c%d[%d] has a negative position", ErrCorrupt, cp.PE, r.Collection, r.Lin)
		}
	}
	if _, err := sortedRecords(cp.Tasks); err != nil {
		return nil, fmt.Errorf("%w: PE %d: %w", ErrCorrupt, cp.PE, err)
	}
	return cp, nil
}

func corrupt(err error) error { return fmt.Errorf("%w: decode PE checkpoint: %w", ErrCorrupt, err) }

// decodeTaskRecord decodes one migratepb.TaskRecord; its byte fields
// point into b.
func decodeTaskRecord(b []byte) (TaskRecord, error) {
	var r TaskRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case (num == recCollection || num == recLin) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			if num == recCollection {
				r.Collection = uint32(v)
			} else {
				r.Lin = int64(v)
			}
			b = b[n:]
		case (num == recTask || num == recRuntime || num == recProtocol) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			// Capacity cut to the field: appending to it never writes
			// over what follows.
			v = v[:len(v):len(v)]
			if len(v) == 0 {
				v = nil
			}
			switch num {
			case recTask:
				r.Task = v
			case recRuntime:
				r.Runtime = v
			default:
				r.Protocol = v
			}
			b = b[n:]
		default: // unknown, as in DecodePECheckpoint
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return r, nil
}
