package migrate

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// randomCheckpoint is a PE checkpoint with tasks of random sizes, some of
// whose fields are zero or empty (left out of the encoding).
func randomCheckpoint(r *rand.Rand) *PECheckpoint {
	bytesOf := func(max int) []byte {
		n := r.IntN(max + 1)
		if n == 0 {
			return nil
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	numPEs := 1 + r.IntN(300)
	cp := &PECheckpoint{Epoch: r.Uint64N(1 << uint(r.IntN(63))), PE: r.IntN(numPEs), NumPEs: numPEs}
	if r.IntN(2) == 0 {
		cp.JobFingerprint = "app/" + string(rune('a'+r.IntN(26)))
	}
	seen := map[TaskRef]bool{}
	for range r.IntN(20) {
		ref := TaskRef{Collection: r.IntN(3), Lin: r.IntN(1 << uint(r.IntN(40)))}
		if seen[ref] {
			continue
		}
		seen[ref] = true
		cp.Tasks = append(cp.Tasks, TaskRecord{Collection: uint32(ref.Collection), Lin: int64(ref.Lin),
			Task: bytesOf(3000), Runtime: bytesOf(10), Protocol: bytesOf(40)})
	}
	return cp
}

func sameRecords(a, b []TaskRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Ref() != b[i].Ref() || !bytes.Equal(a[i].Task, b[i].Task) || !bytes.Equal(a[i].Runtime, b[i].Runtime) || !bytes.Equal(a[i].Protocol, b[i].Protocol) {
			return false
		}
	}
	return true
}

func sameCheckpoint(a, b *PECheckpoint) bool {
	return a.Epoch == b.Epoch && a.PE == b.PE && a.NumPEs == b.NumPEs && a.JobFingerprint == b.JobFingerprint && sameRecords(a.Tasks, b.Tasks)
}

// The reuse-friendly encoding writes exactly the protobuf runtime's bytes,
// after what dst held, and says its size beforehand.
func TestAppendPECheckpointWritesMarshalsBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		cp := randomCheckpoint(r)
		want, err := MarshalPECheckpoint(cp)
		must(t, err)
		prefix := []byte("head")
		got, err := AppendPECheckpoint(prefix, cp)
		must(t, err)
		if !bytes.Equal(got[:4], prefix) || !bytes.Equal(got[4:], want) {
			t.Fatalf("case %d: AppendPECheckpoint differs from MarshalPECheckpoint (%d bytes against %d)", i, len(got)-4, len(want))
		}
		if n := PECheckpointSize(cp); n != len(want) {
			t.Fatalf("case %d: PECheckpointSize %d, encoding is %d bytes", i, n, len(want))
		}
		// Record by record, in the order given (not sorted): the same
		// checkpoint decodes.
		parts := AppendPECheckpointHeader(nil, cp)
		for _, rec := range cp.Tasks {
			before := len(parts)
			parts = AppendTaskRecord(parts, rec)
			if len(parts)-before != TaskRecordSize(rec) {
				t.Fatalf("case %d: TaskRecordSize %d, AppendTaskRecord wrote %d", i, TaskRecordSize(rec), len(parts)-before)
			}
		}
		got2, err := DecodePECheckpoint(parts)
		must(t, err)
		sorted, err := UnmarshalPECheckpoint(want)
		must(t, err)
		got2.Tasks, err = sortedRecords(got2.Tasks)
		must(t, err)
		if !sameCheckpoint(got2, sorted) {
			t.Fatalf("case %d: record by record decodes as %+v, want %+v", i, got2, sorted)
		}
	}
	dup := &PECheckpoint{Epoch: 1, PE: 0, NumPEs: 1, Tasks: []TaskRecord{record(0, 1, "x"), record(0, 1, "y")}}
	if _, err := AppendPECheckpoint(nil, dup); err == nil {
		t.Fatal("a task recorded twice was encoded")
	}
}

// DecodePECheckpoint accepts and refuses what UnmarshalPECheckpoint does,
// with the same result, on encodings and on their random corruptions; its
// records point into the bytes decoded.
func TestDecodePECheckpointAgreesWithUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	accepted, refused := 0, 0
	for i := range 2000 {
		cp := randomCheckpoint(r)
		b, err := MarshalPECheckpoint(cp)
		must(t, err)
		if i%2 == 1 && len(b) > 0 {
			// Corrupt: flip bytes, cut, or append garbage.
			switch r.IntN(3) {
			case 0:
				for range 1 + r.IntN(3) {
					b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
				}
			case 1:
				b = b[:r.IntN(len(b))]
			default:
				b = append(b, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()))
			}
		}
		want, wantErr := UnmarshalPECheckpoint(b)
		got, gotErr := DecodePECheckpoint(b)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("case %d: UnmarshalPECheckpoint error %v, DecodePECheckpoint error %v", i, wantErr, gotErr)
		}
		if gotErr != nil {
			if !errors.Is(gotErr, ErrCorrupt) {
				t.Fatalf("case %d: %v, want ErrCorrupt", i, gotErr)
			}
			refused++
			continue
		}
		accepted++
		if !sameCheckpoint(got, want) {
			t.Fatalf("case %d: decoded %+v, want %+v", i, got, want)
		}
		for _, rec := range got.Tasks {
			if len(rec.Task) > 0 && !inside(rec.Task, b) {
				t.Fatalf("case %d: task %v's state is a copy, not part of the bytes decoded", i, rec.Ref())
			}
			if cap(rec.Task) != len(rec.Task) {
				t.Fatalf("case %d: task %v's state has room beyond it (cap %d, len %d)", i, rec.Ref(), cap(rec.Task), len(rec.Task))
			}
		}
	}
	if accepted < 1000 || refused < 300 {
		t.Fatalf("accepted %d, refused %d: the cases do not exercise both", accepted, refused)
	}
}

func inside(part, whole []byte) bool {
	if len(part) == 0 || len(whole) == 0 {
		return false
	}
	start := &whole[0]
	for i := range whole {
		if &whole[i] == &part[0] {
			return i+len(part) <= len(whole) && start != nil
		}
	}
	return false
}
