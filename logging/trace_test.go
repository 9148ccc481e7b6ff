package logging

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gochare/gochare/commutative"
)

// TestTraces replays the protocol scenarios in testdata/*.txt. Commands:
//
//	init protocol=P pes=N tasks=(a,b,…) [failures=F]
//	                      tasks a, b, … are t0, t1, … on pe0, pe1, … (round
//	                      robin); an initial checkpoint is taken
//	send a->b [ordered|dependent|commutative=N] [key=K]
//	                      task a sends to b (from its open handler, if any)
//	deliver b [end]       b's next delivery; its handler stays open for
//	                      sends until "end b" (or at once with "end"); if
//	                      nothing is deliverable, why
//	end b                 b's handler returns
//	arrive [msg=ID] [kind=message|recovery] [to=peN]
//	                      the matching envelopes in flight arrive, in order;
//	                      without a filter, everything until none is left
//	checkpoint            a coordinated checkpoint
//	crash peN             peN dies: its state and the envelopes from and to it
//	                      are lost
//	recover [a=peN …]     the tasks of the crashed PEs are restored (where
//	                      named, else round robin on the survivors) and the
//	                      survivors get the failure notice
//	dets                  the determinants each live PE holds
//
// Run with -rewrite to regenerate the expected output, then read it.
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &traceHarness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.t = t
			out, err := h.run(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type traceHarness struct {
	t        testing.TB
	pes      []Protocol
	alive    []bool
	names    []string
	location []PEID
	saved    []TaskCheckpoint
	inFlight []Envelope
	open     []bool
	crashed  []PEID
	out      strings.Builder
}

func (h *traceHarness) run(d *datadriven.TestData) (string, error) {
	h.out.Reset()
	var err error
	switch d.Cmd {
	case "init":
		err = h.init(d)
	case "send":
		err = h.send(d)
	case "deliver":
		err = h.deliver(d)
	case "end":
		err = h.end(d)
	case "arrive":
		err = h.arrive(d)
	case "checkpoint":
		err = h.checkpoint()
	case "crash":
		err = h.crash(d)
	case "recover":
		err = h.recover(d)
	case "dets":
		h.dets()
	default:
		err = fmt.Errorf("unknown command %q", d.Cmd)
	}
	if err != nil {
		return "", err
	}
	if h.out.Len() == 0 {
		return "ok\n", nil
	}
	return h.out.String(), nil
}

func (h *traceHarness) printf(format string, args ...any) { fmt.Fprintf(&h.out, format+"\n", args...) }

func (h *traceHarness) init(d *datadriven.TestData) error {
	var protocol string
	var pes, failures int
	d.ScanArgs(h.t, "protocol", &protocol)
	d.ScanArgs(h.t, "pes", &pes)
	d.MaybeScanArgs(h.t, "failures", &failures)
	kind, err := ParseKind(protocol)
	if err != nil {
		return err
	}
	arg, ok := d.Arg("tasks")
	if !ok {
		return fmt.Errorf("init needs tasks=(…)")
	}
	*h = traceHarness{t: h.t, names: arg.Vals}
	for p := range pes {
		h.pes = append(h.pes, New(kind, Config{PE: PEID(p), PEs: pes, Failures: failures, ReportDeterminants: true}))
		h.alive = append(h.alive, true)
	}
	var placement []string
	for i, name := range h.names {
		pe := PEID(i % pes)
		h.location = append(h.location, pe)
		h.pes[pe].HostTask(TaskID(i))
		placement = append(placement, fmt.Sprintf("%s=t%d@pe%d", name, i, pe))
	}
	h.open = make([]bool, len(h.names))
	h.saved = make([]TaskCheckpoint, len(h.names))
	if err := h.checkpoint(); err != nil {
		return err
	}
	h.out.Reset()
	h.printf("%v with %d PEs: %s", kind, pes, strings.Join(placement, " "))
	return nil
}

func (h *traceHarness) task(name string) (TaskID, error) {
	i := slices.Index(h.names, name)
	if i < 0 {
		return 0, fmt.Errorf("no task %q", name)
	}
	return TaskID(i), nil
}

func (h *traceHarness) send(d *datadriven.TestData) error {
	if len(d.CmdArgs) == 0 {
		return fmt.Errorf("send a->b")
	}
	from, to, ok := strings.Cut(d.CmdArgs[0].Key, "->")
	if !ok {
		return fmt.Errorf("send a->b, not %q", d.CmdArgs[0].Key)
	}
	sender, err := h.task(from)
	if err != nil {
		return err
	}
	receiver, err := h.task(to)
	if err != nil {
		return err
	}
	msg := Message{To: receiver, Handler: 1, Annotation: commutative.OrderedAnnotation()}
	for _, arg := range d.CmdArgs[1:] {
		switch arg.Key {
		case "ordered":
		case "dependent":
			msg.Handler, msg.Annotation = 3, commutative.OrderDependentAnnotation()
		case "commutative":
			n, err := strconv.Atoi(arg.SingleVal(h.t))
			if err != nil {
				return err
			}
			msg.Handler, msg.Annotation = 2, commutative.CommutativeAnnotation(n)
		case "key":
			if msg.Key, err = strconv.ParseUint(arg.SingleVal(h.t), 10, 64); err != nil {
				return err
			}
		default:
			return fmt.Errorf("send: unknown argument %q", arg.Key)
		}
	}
	pe := h.location[sender]
	if !h.alive[pe] {
		return fmt.Errorf("%s is on crashed pe%d", from, pe)
	}
	id := h.pes[pe].Send(sender, h.location[receiver], msg)
	h.printf("%s sends %v to %s (%v key %d)", from, id, to, msg.Annotation, msg.Key)
	h.flush(pe)
	return nil
}

// flush takes a PE's Ready: prints its new determinants and the envelopes
// it sends (acknowledgements silently) and puts them in flight.
func (h *traceHarness) flush(p PEID) {
	ready := h.pes[p].Ready()
	h.pes[p].Advance()
	for _, nd := range ready.Determinants {
		h.printf("  new determinant %v", nd.Determinant)
	}
	for _, env := range ready.Envelopes {
		if !h.alive[env.To] {
			continue
		}
		h.inFlight = append(h.inFlight, env)
		if env.Kind != EnvelopeAck {
			h.printf("  pe%d -> pe%d: %s", env.From, env.To, h.describe(env))
		}
	}
}

func (h *traceHarness) describe(env Envelope) string {
	var b strings.Builder
	switch env.Kind {
	case EnvelopeMessage:
		fmt.Fprintf(&b, "%v for %s", env.Message.ID, h.names[env.Message.To])
		if env.Replayed {
			b.WriteString(" (replayed)")
		}
		if len(env.Message.Requires) > 0 {
			fmt.Fprintf(&b, " requires %v", env.Message.Requires)
		}
	case EnvelopeAck:
		b.WriteString("ack")
	case EnvelopeRecovery:
		fmt.Fprintf(&b, "recovery for %s, epoch %d", h.names[env.Task], env.Epoch)
	}
	if len(env.Determinants) > 0 {
		fmt.Fprintf(&b, " dets %v", env.Determinants)
	}
	if len(env.Progress) > 0 {
		fmt.Fprintf(&b, " progress %v", env.Progress)
	}
	return b.String()
}

func (h *traceHarness) deliver(d *datadriven.TestData) error {
	if len(d.CmdArgs) == 0 {
		return fmt.Errorf("deliver b")
	}
	name := d.CmdArgs[0].Key
	task, err := h.task(name)
	if err != nil {
		return err
	}
	if h.open[task] {
		return fmt.Errorf("%s's handler is still running", name)
	}
	pe := h.location[task]
	if !h.alive[pe] {
		return fmt.Errorf("%s is on crashed pe%d", name, pe)
	}
	delivery, ok := h.pes[pe].NextDelivery(task, func(Message) bool { return true })
	if !ok {
		h.printf("%s: nothing to deliver", name)
		h.explain(task)
		return nil
	}
	m := delivery.Message
	h.printf("%s handles %v at RSN %d (%v key %d)", name, m.ID, delivery.RSN, m.Annotation, m.Key)
	h.open[task] = true
	h.flush(pe)
	if d.HasArg("end") {
		h.endHandler(task)
	}
	return nil
}

// explain says why a task has nothing to deliver.
func (h *traceHarness) explain(task TaskID) {
	e := engineOf(h.pes[h.location[task]])
	t := e.tasks[task]
	if len(t.awaiting) > 0 {
		h.printf("  waits for the recovery envelopes of %v", t.awaiting)
		return
	}
	position := t.counters.RSN + 1
	for _, m := range t.buffer {
		switch {
		case !dependenciesMet(task, t, m):
			h.printf("  %v waits: it requires %v", m.ID, m.Requires)
		case e.isPinned(task, position, m.ID):
			h.printf("  %v waits for its recorded position", m.ID)
		default:
			if d, ok := e.determinants.get(determinantKey{task, position}); ok {
				h.printf("  %v waits: RSN %d is recorded for %v", m.ID, position, e.determinants.message(d))
			} else {
				h.printf("  %v waits for the end of replay (RSN %d)", m.ID, t.replayEnd)
			}
		}
	}
}

func engineOf(p Protocol) *engine {
	switch p := p.(type) {
	case *None:
		return p.engine
	case *FullDet:
		return p.engine
	case *PartialDet:
		return p.engine
	}
	panic("unknown protocol")
}

func (h *traceHarness) end(d *datadriven.TestData) error {
	if len(d.CmdArgs) == 0 {
		return fmt.Errorf("end b")
	}
	task, err := h.task(d.CmdArgs[0].Key)
	if err != nil {
		return err
	}
	if !h.open[task] {
		return fmt.Errorf("%s has no handler running", d.CmdArgs[0].Key)
	}
	h.endHandler(task)
	return nil
}

func (h *traceHarness) endHandler(task TaskID) {
	h.open[task] = false
	if h.pes[h.location[task]].EndHandler(task) {
		h.printf("%s completes its region", h.names[task])
	}
}

func (h *traceHarness) arrive(d *datadriven.TestData) error {
	var msg, kind, to string
	d.MaybeScanArgs(h.t, "msg", &msg)
	d.MaybeScanArgs(h.t, "kind", &kind)
	d.MaybeScanArgs(h.t, "to", &to)
	matches := func(env Envelope) bool {
		switch {
		case msg != "" && (env.Kind != EnvelopeMessage || env.Message.ID.String() != msg):
			return false
		case kind == "message" && env.Kind != EnvelopeMessage:
			return false
		case kind == "recovery" && env.Kind != EnvelopeRecovery:
			return false
		case to != "" && fmt.Sprintf("pe%d", env.To) != to:
			return false
		}
		return true
	}
	filtered := msg != "" || kind != "" || to != ""
	for rounds := 0; ; rounds++ {
		if rounds > 100 {
			return fmt.Errorf("envelopes keep coming")
		}
		var now, later []Envelope
		for _, env := range h.inFlight {
			if matches(env) {
				now = append(now, env)
			} else {
				later = append(later, env)
			}
		}
		if len(now) == 0 {
			if rounds == 0 {
				h.printf("nothing in flight matches")
			}
			return nil
		}
		h.inFlight = later
		for _, env := range now {
			if !h.alive[env.To] {
				continue
			}
			pe := h.pes[env.To]
			before := pe.Stats().Duplicates
			pe.Arrive(env)
			if env.Kind != EnvelopeAck {
				line := fmt.Sprintf("pe%d <- pe%d: %s", env.To, env.From, h.describe(env))
				if pe.Stats().Duplicates > before {
					line += ": duplicate, dropped"
				}
				h.printf("%s", line)
			}
			h.flush(env.To)
		}
		if filtered {
			return nil
		}
	}
}

func (h *traceHarness) checkpoint() error {
	if len(h.inFlight) > 0 {
		return fmt.Errorf("checkpoint with %d envelopes in flight", len(h.inFlight))
	}
	var counters []string
	for p, pe := range h.pes {
		if !h.alive[p] {
			continue
		}
		for _, cp := range pe.Checkpoint() {
			h.saved[cp.Counters.Task] = cp
		}
	}
	for task, cp := range h.saved {
		counters = append(counters, fmt.Sprintf("%s RSN %d SRN %d", h.names[task], cp.Counters.RSN, cp.Counters.SRN))
	}
	h.printf("checkpoint: %s", strings.Join(counters, ", "))
	return nil
}

func parsePE(s string) (PEID, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "pe"))
	if err != nil || !strings.HasPrefix(s, "pe") {
		return 0, fmt.Errorf("not a PE: %q", s)
	}
	return PEID(n), nil
}

func (h *traceHarness) crash(d *datadriven.TestData) error {
	if len(d.CmdArgs) != 1 {
		return fmt.Errorf("crash peN")
	}
	pe, err := parsePE(d.CmdArgs[0].Key)
	if err != nil {
		return err
	}
	if int(pe) >= len(h.pes) || !h.alive[pe] {
		return fmt.Errorf("pe%d is not alive", pe)
	}
	h.alive[pe] = false
	h.crashed = append(h.crashed, pe)
	dropped := len(h.inFlight)
	h.inFlight = slices.DeleteFunc(h.inFlight, func(env Envelope) bool { return env.From == pe || env.To == pe })
	var lost []string
	for task, at := range h.location {
		if at == pe {
			lost = append(lost, h.names[task])
			h.open[task] = false
		}
	}
	h.printf("pe%d crashed with %s; %d envelopes lost", pe, strings.Join(lost, ", "), dropped-len(h.inFlight))
	return nil
}

func (h *traceHarness) recover(d *datadriven.TestData) error {
	if len(h.crashed) == 0 {
		return fmt.Errorf("nothing crashed")
	}
	var live []PEID
	for p := range h.pes {
		if h.alive[p] {
			live = append(live, PEID(p))
		}
	}
	var relocated []Relocation
	next := 0
	for task, at := range h.location {
		if !slices.Contains(h.crashed, at) {
			continue
		}
		target := live[next%len(live)]
		next++
		if arg, ok := d.Arg(h.names[task]); ok {
			pe, err := parsePE(arg.SingleVal(h.t))
			if err != nil {
				return err
			}
			target = pe
		}
		relocated = append(relocated, Relocation{Task: TaskID(task), PE: target})
	}
	for _, r := range relocated {
		h.location[r.Task] = r.PE
		h.pes[r.PE].RestoreTask(h.saved[r.Task], live)
		h.printf("%s restored on pe%d at RSN %d", h.names[r.Task], r.PE, h.saved[r.Task].Counters.RSN)
	}
	for _, p := range live {
		h.pes[p].FailureNotice(h.crashed, relocated)
		h.flush(p)
	}
	h.crashed = nil
	return nil
}

func (h *traceHarness) dets() {
	for p, pe := range h.pes {
		if !h.alive[p] {
			continue
		}
		e := engineOf(pe)
		var held []string
		for d := range e.determinants.all() {
			held = append(held, e.determinants.determinant(d).String())
		}
		if len(held) == 0 {
			held = []string{"none"}
		}
		h.printf("pe%d: %s", p, strings.Join(held, " "))
	}
}
