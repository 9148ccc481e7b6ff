package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
)

// The histories of a run's tasks, from what the PEs tell of them
// (scheduler.Config.Observe), to check at the end of the run that no task
// handled a message twice and that no task keeps the effect of a message
// its sender's surviving execution did not send.
//
// A task's history on a PE begins when it is created there (empty) or
// set from a record (the history that record reflects: the one the task
// had where and when the record was made), and grows with each message
// it sends or handles. A record made of a task takes its history then;
// records are known by the hash of their bytes, so a record that travels
// (a buddy copy, a disk file, a move) and comes back is recognised. At
// the end, a task's final history is that of the PE it ends on: what its
// final state reflects, however many times it was restored or moved.

// msgKey identifies a message of a run: its identity, and the rollback
// generation it was stamped in (identities start afresh at a rollback).
type msgKey struct {
	rollback uint64
	id       logging.MessageID
}

func (k msgKey) String() string {
	if k.rollback == 0 {
		return k.id.String()
	}
	return fmt.Sprintf("%v (identities of rollback %d)", k.id, k.rollback)
}

// deed is one message a task sent or handled: a node of its history, a
// list from the latest deed back to the first. Histories share their
// beginnings, so that a record and a restore cost no copy.
type deed struct {
	prev   *deed
	handle bool // handled; else sent
	key    msgKey
	// sum hashes what the message says: its receiver, handler, key and
	// payload.
	sum uint64
}

// histories follows the tasks of a run.
type histories struct {
	// live[r] maps each task on PE r (by scheduler.TaskID) to its
	// history there (nil: nothing yet). A PE's runtime task is in it
	// from its first send.
	live []map[uint64]*deed
	// records maps the hash of each record made to the history it
	// reflects.
	records map[uint64]*deed
	// problems are observations that no correct run makes (a state set
	// from a record never made, a task acting on a PE it is not on).
	problems []string
	// tamper, if set, is a test's fault: it may change an observation,
	// and returns how many times to take it (0: drop it).
	tamper func(rank int, o *scheduler.Observation) int
	// deeds counts the sends and handlings observed.
	deeds int
}

func newHistories(pes int, tamper func(int, *scheduler.Observation) int) *histories {
	h := &histories{live: make([]map[uint64]*deed, pes), records: map[uint64]*deed{}, tamper: tamper}
	for r := range h.live {
		h.live[r] = map[uint64]*deed{}
	}
	return h
}

// observe takes an observation of PE rank.
func (h *histories) observe(rank int, o scheduler.Observation) {
	times := 1
	if h.tamper != nil {
		times = h.tamper(rank, &o)
	}
	for range times {
		h.take(rank, o)
	}
}

func (h *histories) take(rank int, o scheduler.Observation) {
	live := h.live[rank]
	switch o.Kind {
	case scheduler.ObserveCreate:
		live[o.Task] = nil
	case scheduler.ObservePack:
		past, ok := live[o.Task]
		if !ok {
			h.problem("PE %d packed %s, which it does not host", rank, taskName(o.Task))
		}
		h.records[recordHash(o.Record)] = past
	case scheduler.ObserveUnpack:
		past, ok := h.records[recordHash(o.Record)]
		if !ok {
			h.problem("PE %d set %s from a record no PE made", rank, taskName(o.Task))
		}
		live[o.Task] = past
	case scheduler.ObserveSend, scheduler.ObserveHandle:
		past, ok := live[o.Task]
		if !ok && o.Task != scheduler.SystemTask(rank) {
			h.problem("%s %s message %v on PE %d, which does not host it", taskName(o.Task), o.Kind, o.Message.ID, rank)
		}
		h.deeds++
		live[o.Task] = &deed{prev: past, handle: o.Kind == scheduler.ObserveHandle,
			key: msgKey{o.Rollback, o.Message.ID}, sum: contentHash(o.Message)}
	}
}

func (h *histories) problem(format string, args ...any) {
	if len(h.problems) < 10 {
		h.problems = append(h.problems, fmt.Sprintf(format, args...))
	}
}

// Deeds counts what a task's final history holds.
type Deeds struct{ Sent, Handled int }

// Orphan is a message a task's final history handled that its sender's
// final history did not send (Unsent), or sent with other contents.
type Orphan struct {
	Receiver, Sender uint64
	Message          string
	Unsent           bool
}

func (o Orphan) String() string {
	if o.Unsent {
		return fmt.Sprintf("%s handled message %s, which %s's final execution did not send", taskName(o.Receiver), o.Message, taskName(o.Sender))
	}
	return fmt.Sprintf("%s handled message %s, which %s's final execution sent with other contents", taskName(o.Receiver), o.Message, taskName(o.Sender))
}

// final reads the final histories: those of the tasks on the live PEs
// (final[r] lists the tasks PE r hosts at the end; nil for a dead PE).
// It returns what each holds, the messages a task handled twice, and the
// orphans. The runtime task of a dead PE is no sender of an orphan: it is
// no task with a state, it is never restored (a restored main task is
// given Start again in its name), so it has no surviving execution to
// compare with.
func (h *histories) final(final [][]uint64) (deeds map[uint64]Deeds, twice []string, orphans []Orphan) {
	histOf := map[uint64]*deed{}
	for r, tasks := range final {
		if tasks == nil {
			continue
		}
		// The runtime task of a live PE: what it sent since the PE
		// began.
		if d, ok := h.live[r][scheduler.SystemTask(r)]; ok {
			histOf[scheduler.SystemTask(r)] = d
		}
		for _, t := range tasks {
			histOf[t] = h.live[r][t]
		}
	}
	deeds = map[uint64]Deeds{}
	sent := map[msgKey]uint64{}
	type handled struct {
		task uint64
		key  msgKey
		sum  uint64
	}
	var receptions []handled
	for _, task := range slices.Sorted(maps.Keys(histOf)) {
		seen := map[msgKey]bool{}
		var n Deeds
		for d := histOf[task]; d != nil; d = d.prev {
			if !d.handle {
				n.Sent++
				sent[d.key] = d.sum
				continue
			}
			n.Handled++
			if seen[d.key] {
				twice = append(twice, fmt.Sprintf("%s handled message %v twice", taskName(task), d.key))
			}
			seen[d.key] = true
			receptions = append(receptions, handled{task, d.key, d.sum})
		}
		deeds[task] = n
	}
	for _, r := range receptions {
		sender := uint64(r.key.id.Sender)
		if _, ok := histOf[sender]; !ok && isSystemTask(sender) {
			continue
		}
		if sum, ok := sent[r.key]; !ok || sum != r.sum {
			orphans = append(orphans, Orphan{Receiver: r.task, Sender: sender, Message: r.key.String(), Unsent: !ok})
		}
	}
	return deeds, twice, orphans
}

func isSystemTask(task uint64) bool {
	return task>>48 == scheduler.SystemTask(0)>>48
}

func taskRef(task uint64) migrate.TaskRef {
	return migrate.TaskRef{Collection: int(task >> 48), Lin: int(task & (1<<48 - 1))}
}

// taskName names a task by its collection number and linear index.
func taskName(task uint64) string {
	if isSystemTask(task) {
		return fmt.Sprintf("the runtime of PE %d", task&(1<<48-1))
	}
	return fmt.Sprintf("task %d[%d]", task>>48, task&(1<<48-1))
}

// recordHash hashes everything a record holds.
func recordHash(rec migrate.TaskRecord) uint64 {
	f := fnv.New64a()
	var b [8]byte
	for _, part := range [][]byte{rec.Task, rec.Runtime, rec.Protocol} {
		binary.LittleEndian.PutUint64(b[:], uint64(len(part)))
		f.Write(b[:])
		f.Write(part)
	}
	binary.LittleEndian.PutUint64(b[:], uint64(rec.Collection)<<48|uint64(rec.Lin))
	f.Write(b[:])
	return f.Sum64()
}

// contentHash hashes what a message says: its receiver, handler, key and
// payload (not its identity, nor what the protocol adds).
func contentHash(m logging.Message) uint64 {
	f := fnv.New64a()
	var b [20]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(m.To))
	binary.LittleEndian.PutUint32(b[8:], m.Handler)
	binary.LittleEndian.PutUint64(b[12:], m.Key)
	f.Write(b[:])
	f.Write(m.Payload)
	return f.Sum64()
}
