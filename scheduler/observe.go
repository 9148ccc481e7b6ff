package scheduler

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/wire"
)

// Observing a PE, for checks of a whole run that no PE can make alone
// (the simulator's, package sim): Config.Observe is told of every task's
// history on the PE (created, packed into a record, set from a record,
// a message sent, a message handled), and PackTasks gives the tasks'
// states at the end. Config.Observe is nil in production: the PE then
// only tests it.

// ObservationKind says what a task of the PE did.
type ObservationKind uint8

const (
	// ObserveCreate: the task was created on this PE as the job declares
	// it (at the start, or when the tasks are created again): it has no
	// history.
	ObserveCreate ObservationKind = iota
	// ObservePack: Record was made of the task's current state (a
	// checkpoint, a move to another PE).
	ObservePack
	// ObserveUnpack: the task's state on this PE was set from Record (a
	// restore, a rollback, a move here, a restart): its history is what
	// that record's state reflects.
	ObserveUnpack
	// ObserveSend: the task sent Message (its identity stamped).
	ObserveSend
	// ObserveHandle: the task is handed Message; its handler runs next.
	ObserveHandle
)

func (k ObservationKind) String() string {
	switch k {
	case ObserveCreate:
		return "create"
	case ObservePack:
		return "pack"
	case ObserveUnpack:
		return "unpack"
	case ObserveSend:
		return "send"
	case ObserveHandle:
		return "handle"
	}
	return fmt.Sprintf("ObservationKind(%d)", uint8(k))
}

// Observation is one thing a task of the PE did. It is valid during the
// call of Config.Observe only: the observer must not keep Message.Payload
// or the record's bytes.
type Observation struct {
	Kind ObservationKind
	// Task is the task's id (TaskID); the runtime's own task of PE r,
	// which sends Start and quiescence notices, is SystemTask(r).
	Task uint64
	// Rollback is the generation of this PE's last rollback (0: none).
	// Message identities start afresh at a rollback (every task gets
	// fresh counters), so two messages of one sender are one only if
	// their identities and their Rollback are equal.
	Rollback uint64
	// Message is the message sent or handled (ObserveSend,
	// ObserveHandle).
	Message logging.Message
	// Record is the record packed or unpacked (ObservePack,
	// ObserveUnpack).
	Record migrate.TaskRecord
}

// SystemTask is the id of PE rank's runtime task: the sender of Start and
// of quiescence notices. It is no element: it has no checkpointed state,
// and it lives and dies with its PE.
func SystemTask(rank int) uint64 { return TaskID(systemCollection, rank) }

func (pe *PE) observe(o Observation) {
	o.Rollback = pe.rolledBackAt
	o.Message = pe.encoded(o.Message) // a given message, as it would have been sent
	pe.cfg.Observe(o)
}

// PackTasks returns the state of every task on this PE, the runtime's
// reducers included, in the order of their ids: each record holds the
// task's own state (Task) and the runtime's state of it (Runtime), as a
// checkpoint would; Protocol is left empty, for the protocol's counters
// of message identities start afresh at a rollback and so differ between
// two runs that reach the same states. It changes nothing; like the
// other methods of PE, call it on the PE's goroutine. A check of a whole
// run calls it at the end, to compare the final states with those of a
// failure-free run whatever PE each task ended on.
func (pe *PE) PackTasks() ([]migrate.TaskRecord, error) {
	var recs []migrate.TaskRecord
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			rec, err := packState(cs.local[lin])
			if err != nil {
				return nil, err
			}
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

// packState packs a task's own state and the runtime's state of it.
func packState(el *element) (migrate.TaskRecord, error) {
	cs := el.coll
	task, err := cs.def.PackTask(el.task)
	if err != nil {
		return migrate.TaskRecord{}, fmt.Errorf("scheduler: pack %s%v: %w", cs.def.Name, el.index, err)
	}
	runtime, err := proto.Marshal(&wire.TaskRuntime{Expected: el.expected, NextReduction: el.nextRed, AtSync: el.atSync, Printed: el.printed})
	if err != nil {
		return migrate.TaskRecord{}, err
	}
	return migrate.TaskRecord{Collection: uint32(cs.def.ID), Lin: int64(el.lin), Task: task, Runtime: runtime}, nil
}
