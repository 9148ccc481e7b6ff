package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// Stall diagnosis, the PE's part. When a job stops making progress (see
// job.Coordinator.CheckStall) or goes quiet before a task called Exit,
// the coordinator sends every PE job.Diagnose, which it answers with its
// Diagnosis: what its tasks wait for, and from which PE that would come.
// The job then stops with the reports.

// maxDiagnosedTasks bounds the tasks a PE's diagnosis describes one by
// one; the rest are counted.
const maxDiagnosedTasks = 12

// Diagnosis describes, in a few lines, what this PE and its tasks wait
// for. It runs on the PE goroutine.
func (pe *PE) Diagnosis() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PE %d (generation %d, %d handlers run)", pe.cfg.Rank, pe.generation, pe.stats.Delivered)
	if pe.halted != nil {
		fmt.Fprintf(&b, ": stopped: %v", firstLine(pe.halted.Error()))
		return b.String()
	}
	var state []string
	if pe.restoring {
		state = append(state, fmt.Sprintf("restoring: waits for the checkpoint copies of %s", pe.describeTasks(pe.expectRestore)))
	}
	if pe.migrating {
		state = append(state, fmt.Sprintf("migrating: waits for %s", pe.describeTasks(pe.expectMigrate)))
	}
	if len(pe.early) > 0 {
		state = append(state, fmt.Sprintf("holds %d batches of a later recovery it was not told of", len(pe.early)))
	}
	if n, high, low, known := pe.waitingAtSync(); n > 0 {
		steps := fmt.Sprint(high)
		switch {
		case !known:
			steps = "not known here"
		case low != high:
			steps = fmt.Sprintf("%d to %d", low, high)
		}
		state = append(state, fmt.Sprintf("%d of %d sync tasks wait at a sync point (step %s; the job passed those below step %d without a checkpoint)", n, pe.syncTasks(), steps, pe.resumedBelow))
	}
	var unbalanced []string
	for p := range pe.live {
		if !pe.live[p] || p == pe.cfg.Rank {
			continue
		}
		unbalanced = append(unbalanced, fmt.Sprintf("PE %d %d/%d", p, pe.sentTo[p], pe.receivedFrom[p]))
	}
	if len(unbalanced) > 0 {
		state = append(state, "envelopes to/from "+strings.Join(unbalanced, ", "))
	}
	if len(state) > 0 {
		b.WriteString(": " + strings.Join(state, "; "))
	}
	diag, ok := pe.proto.(logging.Diagnoser)
	if !ok {
		return b.String()
	}
	waiting := 0
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			el := cs.local[lin]
			w, hosted := diag.Waiting(el.id)
			if !hosted || !w.Waits() {
				continue
			}
			waiting++
			if waiting <= maxDiagnosedTasks {
				b.WriteString("\n  " + pe.describeWait(el, w))
			}
		}
	}
	if waiting > maxDiagnosedTasks {
		fmt.Fprintf(&b, "\n  ... and %d more tasks waiting", waiting-maxDiagnosedTasks)
	}
	if waiting == 0 {
		b.WriteString("\n  no task here waits for a message")
	}
	return b.String()
}

// describeWait says what one task waits for.
func (pe *PE) describeWait(el *element, w logging.TaskWait) string {
	name := fmt.Sprintf("%s%v", el.coll.def.Name, el.index)
	var parts []string
	if len(w.AwaitingRecovery) > 0 {
		parts = append(parts, fmt.Sprintf("restored, waits for the recovery envelopes of PEs %v", w.AwaitingRecovery))
	}
	if w.RSN < w.ReplayEnd {
		replay := fmt.Sprintf("replaying (reception %d of %d before the failure)", w.RSN, w.ReplayEnd)
		if w.Recorded {
			replay += fmt.Sprintf("; its next reception is recorded: message %d of %s", w.NextRecorded.SRN, pe.describeSender(w.NextRecorded.Sender))
			if !slices.ContainsFunc(w.Buffered, func(m logging.Message) bool { return m.ID == w.NextRecorded }) {
				replay += ", which has not arrived"
			}
		}
		parts = append(parts, replay)
	}
	if w.Region.Open {
		parts = append(parts, fmt.Sprintf("inside a region of %s key %d: %d of %d messages handled",
			pe.handlerName(w.Region.Handler), w.Region.Key, w.Region.Consumed, w.Region.Size))
	}
	if len(w.Buffered) > 0 {
		type group struct {
			handler uint32
			key     uint64
		}
		count := map[group]int{}
		var order []group
		senders := map[group][]string{}
		for _, m := range w.Buffered {
			g := group{m.Handler, m.Key}
			if count[g] == 0 {
				order = append(order, g)
			}
			count[g]++
			if len(senders[g]) < 3 {
				senders[g] = append(senders[g], pe.describeSender(m.ID.Sender))
			}
		}
		var held []string
		for _, g := range order {
			held = append(held, fmt.Sprintf("%d of %s key %d (from %s)", count[g], pe.handlerName(g.handler), g.key, strings.Join(senders[g], ", ")))
		}
		parts = append(parts, fmt.Sprintf("expects key %d; holds %s", el.expected, strings.Join(held, "; ")))
	}
	return name + ": " + strings.Join(parts, "; ")
}

// describeSender names a sending task and the PE this PE believes it is on.
func (pe *PE) describeSender(id commutative.TaskID) string {
	coll, lin := splitTaskID(id)
	if coll == systemCollection {
		return fmt.Sprintf("the runtime of PE %d", lin)
	}
	if coll >= len(pe.colls) || lin < 0 || lin >= int64(pe.colls[coll].n) {
		return fmt.Sprintf("task %d", id)
	}
	cs := pe.colls[coll]
	where := int(cs.homeOf[lin])
	alive := ""
	if !pe.live[where] {
		alive = ", failed"
	}
	return fmt.Sprintf("%s%v on PE %d%s", cs.def.Name, cs.def.Shape.At(int(lin)), where, alive)
}

func (pe *PE) handlerName(h uint32) string {
	coll, hi := splitHandler(h)
	if coll >= len(pe.colls) || hi >= len(pe.colls[coll].def.Handlers) {
		return fmt.Sprintf("handler %x", h)
	}
	cs := pe.colls[coll]
	return fmt.Sprintf("%s.%s", cs.def.Name, cs.def.Handlers[hi].Name)
}

// describeTasks names up to a few of a set of tasks.
func (pe *PE) describeTasks(set map[commutative.TaskID]bool) string {
	ids := make([]commutative.TaskID, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var names []string
	for i, id := range ids {
		if i == 4 {
			names = append(names, fmt.Sprintf("and %d more", len(ids)-4))
			break
		}
		coll, lin := splitTaskID(id)
		if coll < len(pe.colls) {
			names = append(names, fmt.Sprintf("%s%v", pe.colls[coll].def.Name, pe.colls[coll].def.Shape.At(int(lin))))
		}
	}
	return fmt.Sprintf("%d tasks (%s)", len(ids), strings.Join(names, ", "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
