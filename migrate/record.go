package migrate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/migrate/migratepb"
)

// Sentinel errors. Test for them with errors.Is; the returned errors wrap
// them with the details.
var (
	// ErrNoCheckpoint: there is no complete checkpoint to read.
	ErrNoCheckpoint = errors.New("migrate: no checkpoint")
	// ErrCorrupt: a checkpoint is malformed, truncated or fails its checksum.
	ErrCorrupt = errors.New("migrate: corrupt checkpoint")
	// ErrUnrecoverable: a task's checkpoint is on no surviving PE.
	ErrUnrecoverable = errors.New("migrate: unrecoverable from memory")
	// ErrEpoch: an operation names a checkpoint epoch the store is not at.
	ErrEpoch = errors.New("migrate: wrong checkpoint epoch")
	// ErrUnknownTask: a task outside every collection's bounds.
	ErrUnknownTask = errors.New("migrate: unknown task")
	// ErrNoSurvivor: no live PE is left to take a failed PE's tasks.
	ErrNoSurvivor = errors.New("migrate: no surviving PE")
)

// TaskRef names a task: its collection ID and its linear position in the
// collection (actor.Shape.Linear).
type TaskRef struct {
	Collection int
	Lin        int
}

func (t TaskRef) String() string { return fmt.Sprintf("c%d[%d]", t.Collection, t.Lin) }

// CompareTaskRefs orders tasks by collection, then linear position: the
// order of every list of tasks this package returns.
func CompareTaskRefs(a, b TaskRef) int {
	if c := cmp.Compare(a.Collection, b.Collection); c != 0 {
		return c
	}
	return cmp.Compare(a.Lin, b.Lin)
}

// TaskRecord is one task's checkpoint. migrate never looks inside the three
// byte fields.
type TaskRecord struct {
	Collection uint32
	Lin        int64
	// Task is the application's state (the task's MarshalBinary).
	Task []byte
	// Runtime is the scheduler's own per-task state.
	Runtime []byte
	// Protocol is the protocol's per-task state (logging.TaskCheckpoint,
	// encoded by the scheduler).
	Protocol []byte
}

// Ref is the task the record belongs to.
func (r TaskRecord) Ref() TaskRef { return TaskRef{Collection: int(r.Collection), Lin: int(r.Lin)} }

// Bytes is the memory the record's payloads hold.
func (r TaskRecord) Bytes() int64 { return int64(len(r.Task) + len(r.Runtime) + len(r.Protocol)) }

func compareRecords(a, b TaskRecord) int { return CompareTaskRefs(a.Ref(), b.Ref()) }

// sortedRecords returns the records ordered by task, in a new slice (the
// payloads are shared, not copied), or an error if a task appears twice.
func sortedRecords(records []TaskRecord) ([]TaskRecord, error) {
	out := slices.Clone(records)
	slices.SortStableFunc(out, compareRecords)
	for i := 1; i < len(out); i++ {
		if compareRecords(out[i-1], out[i]) == 0 {
			return nil, fmt.Errorf("migrate: task %v recorded twice", out[i].Ref())
		}
	}
	return out, nil
}

// recordsBytes sums Bytes over records.
func recordsBytes(records []TaskRecord) int64 {
	var n int64
	for _, r := range records {
		n += r.Bytes()
	}
	return n
}

// PECheckpoint is one PE's part of one coordinated checkpoint.
type PECheckpoint struct {
	Epoch          uint64
	PE             int
	NumPEs         int
	JobFingerprint string
	// Tasks, in any order; MarshalPECheckpoint writes them sorted by task.
	Tasks []TaskRecord
}

// Bytes is the memory the checkpoint's task payloads hold.
func (cp *PECheckpoint) Bytes() int64 { return recordsBytes(cp.Tasks) }

// MarshalPECheckpoint encodes a PE checkpoint (migratepb.PECheckpoint), for
// the buddy copy on the wire and for the disk file.
func MarshalPECheckpoint(cp *PECheckpoint) ([]byte, error) {
	tasks, err := sortedRecords(cp.Tasks)
	if err != nil {
		return nil, err
	}
	msg := &migratepb.PECheckpoint{
		Epoch:          cp.Epoch,
		Pe:             int32(cp.PE),
		NumPes:         int32(cp.NumPEs),
		JobFingerprint: cp.JobFingerprint,
		Tasks:          make([]*migratepb.TaskRecord, len(tasks)),
	}
	for i, r := range tasks {
		msg.Tasks[i] = &migratepb.TaskRecord{
			Collection: r.Collection, Lin: r.Lin,
			Task: r.Task, Runtime: r.Runtime, Protocol: r.Protocol,
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("migrate: encode checkpoint of PE %d epoch %d: %w", cp.PE, cp.Epoch, err)
	}
	return b, nil
}

// UnmarshalPECheckpoint decodes what MarshalPECheckpoint encoded. The error
// wraps ErrCorrupt if the bytes are not a well-formed checkpoint.
func UnmarshalPECheckpoint(b []byte) (*PECheckpoint, error) {
	var msg migratepb.PECheckpoint
	if err := proto.Unmarshal(b, &msg); err != nil {
		return nil, fmt.Errorf("%w: decode PE checkpoint: %w", ErrCorrupt, err)
	}
	if msg.Pe < 0 || msg.NumPes <= 0 || msg.Pe >= msg.NumPes {
		return nil, fmt.Errorf("%w: PE %d of %d PEs", ErrCorrupt, msg.Pe, msg.NumPes)
	}
	cp := &PECheckpoint{
		Epoch:          msg.Epoch,
		PE:             int(msg.Pe),
		NumPEs:         int(msg.NumPes),
		JobFingerprint: msg.JobFingerprint,
		Tasks:          make([]TaskRecord, len(msg.Tasks)),
	}
	for i, r := range msg.Tasks {
		if r.Lin < 0 {
			return nil, fmt.Errorf("%w: PE %d: task c%d[%d] has a negative position", ErrCorrupt, cp.PE, r.Collection, r.Lin)
		}
		cp.Tasks[i] = TaskRecord{
			Collection: r.Collection, Lin: r.Lin,
			Task: r.Task, Runtime: r.Runtime, Protocol: r.Protocol,
		}
	}
	if _, err := sortedRecords(cp.Tasks); err != nil {
		return nil, fmt.Errorf("%w: PE %d: %w", ErrCorrupt, cp.PE, err)
	}
	return cp, nil
}
