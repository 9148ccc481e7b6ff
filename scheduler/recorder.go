package scheduler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/record"
)

// Recording a run (Config.RecordDir, gochare run --record DIR): the PE
// appends to its record file (package record) every run of its tasks'
// code, with the message it was handed, and what the code sent and what
// AtSync answered it; and every task's state where a period starts (a
// checkpoint committed, a restore from a checkpoint). gochare replay runs
// one period of one task again from that state on those inputs (replay.go).
//
// Recovery: a rollback writes a ROLLBACK entry, which cuts the periods
// under way on the PE; the restored tasks start new periods (a STATE of
// the same epoch). A task restored on another PE after its PE was killed
// starts its period again there. So every period recorded is one real
// execution, and a period may be recorded more than once (record.Choose
// picks the one replayed). A migration writes LEAVE on the PE the task
// leaves, and a STATE marked moved_in on the PE it comes to, from which
// no period starts: the next checkpoint, which follows a migration at
// once, starts the next.
//
// The record is buffered and written at the end of each event the PE
// handles (a slice of handlers, a coordinator's event), in one write: a
// PE killed loses at most what that event recorded, and its file may end
// inside a frame (record.ErrTruncated, which a replay accepts). Without
// Config.RecordDir the PE only tests a nil pointer.

// ErrRecord reports that the PE could not write its record: the PE stops.
var ErrRecord = errors.New("scheduler: cannot write the record")

// recordFlushAt is the buffered size at which the record is written out
// within an event.
const recordFlushAt = 4 << 20

type recorder struct {
	file *os.File
	w    *record.Writer
}

// openRecorder creates this PE's record file in dir: pe-R.N.rec with the
// first N not taken.
func openRecorder(cfg Config) (*recorder, error) {
	if err := os.MkdirAll(cfg.RecordDir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	for n := 0; ; n++ {
		path := filepath.Join(cfg.RecordDir, fmt.Sprintf("pe-%d.%d.rec", cfg.Rank, n))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		w := record.NewWriter(f, &record.Header{
			App: cfg.App.Name, Args: cfg.Args, Rank: int32(cfg.Rank), Size: int32(cfg.Size), JobId: cfg.JobID,
			CheckpointEvery: cfg.CheckpointEvery, Protocol: cfg.Protocol.String(), Pid: int64(os.Getpid()),
		})
		if err := w.Flush(); err != nil {
			f.Close()
			return nil, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		return &recorder{file: f, w: w}, nil
	}
}

func (pe *PE) recordEntry(e *record.Entry) {
	pe.rec.w.Append(e)
	if pe.rec.w.Buffered() >= recordFlushAt {
		pe.flushRecord()
	}
}

// flushRecord writes the buffered record; a failure stops the PE.
func (pe *PE) flushRecord() {
	if err := pe.rec.w.Flush(); err != nil {
		pe.halt(fmt.Errorf("%w of PE %d: %v", ErrRecord, pe.cfg.Rank, err))
	}
}

// recordRun records a run of task code: kind DELIVER (m handed to the
// handler), COMPLETE (m's region complete) or RESUME.
func (pe *PE) recordRun(el *element, kind record.Kind, m logging.Message) {
	e := &record.Entry{Kind: kind, Task: uint64(el.id)}
	if kind != record.Kind_RESUME {
		e.Handler, e.Key = m.Handler, m.Key
	}
	if kind == record.Kind_DELIVER {
		e.Sender, e.Payload = uint64(m.ID.Sender), m.Payload
	}
	pe.recordEntry(e)
}

// recordSend records a message a task sent (not the runtime's own).
func (pe *PE) recordSend(from commutative.TaskID, m logging.Message) {
	if c, _ := splitTaskID(from); c >= len(pe.colls) {
		return
	}
	pe.recordEntry(&record.Entry{Kind: record.Kind_SEND, Task: uint64(from), To: uint64(m.To), Handler: m.Handler, Key: m.Key, Payload: m.Payload})
}

func (pe *PE) recordAtSync(el *element, step uint64, taken bool) {
	pe.recordEntry(&record.Entry{Kind: record.Kind_AT_SYNC, Task: uint64(el.id), Step: step, Taken: taken})
}

// recordState records a task's state: at checkpoint epoch (a period
// starts), or brought by a migration (movedIn).
func (pe *PE) recordState(rec migrate.TaskRecord, epoch uint64, movedIn bool) {
	b, err := migrate.MarshalPECheckpoint(&migrate.PECheckpoint{Epoch: epoch, PE: pe.cfg.Rank, NumPEs: pe.cfg.Size, Tasks: []migrate.TaskRecord{rec}})
	if err != nil {
		pe.halt(fmt.Errorf("%w of PE %d: %v", ErrRecord, pe.cfg.Rank, err))
		return
	}
	id := TaskID(int32(rec.Collection), int(rec.Lin))
	pe.recordEntry(&record.Entry{Kind: record.Kind_STATE, Task: id, Epoch: epoch, Generation: pe.generation, Record: b, MovedIn: movedIn})
}

func (pe *PE) recordLeave(el *element) {
	pe.recordEntry(&record.Entry{Kind: record.Kind_LEAVE, Task: uint64(el.id)})
}

func (pe *PE) recordRollback() {
	pe.recordEntry(&record.Entry{Kind: record.Kind_ROLLBACK, Generation: pe.generation})
}
