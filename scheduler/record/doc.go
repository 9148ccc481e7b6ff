// Package record is the file format of a run's record (gochare run
// --record DIR): what each PE's tasks were handed, in the order they
// handled it, and what each handler sent, per checkpoint period. A replay
// (gochare replay) runs one task again from a period's starting state on
// the recorded inputs and compares its sends with the recorded ones.
//
// A PE process writes one file, DIR/pe-R.N.rec (R its rank, N the first
// number free when it started, so a PE started again writes a new file).
// The file is the magic line "gochare-record 1\n", then frames: a 4-byte
// little-endian length, a 4-byte CRC-32C of the body, the body (a
// protobuf message). The first frame is the Header (the job and the PE),
// every other one an Entry (record.proto says what each kind holds).
//
// Periods: a STATE entry of a task (written when a checkpoint commits,
// and when a rollback or a recovery restores the task from a checkpoint)
// starts a period of that task on the PE; the entries of the task that
// follow in the file (DELIVER, COMPLETE or RESUME, each followed by the
// SEND and AT_SYNC entries its code produced) are the period, up to the
// next STATE of the task (the period reached its checkpoint: Checkpointed),
// its LEAVE (it moved: Left), a ROLLBACK of the PE (Cut), or the end of
// the file (Open: the job ended, or the PE was killed). Each period is one
// real execution; after a failure the same period may be recorded again
// by the task's next incarnation, on another PE (Segments gives each).
//
// Read checks every frame: a bad magic line, a checksum that does not
// match, or a body that does not decode is ErrCorrupt; a last frame cut
// short (a PE killed while writing) is ErrTruncated, returned with the
// frames before it.
//
// Imports: protobuf only; the scheduler writes and replays records.
package record

//go:generate protoc -I ../.. --go_out=../.. --go_opt=module=github.com/gochare/gochare scheduler/record/record.proto
