package logging

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/commutative"
)

// receptionGroup is one step of a mini-app's receiving pattern: size
// messages of one handler, a commutative region when size > 1 and the
// handler is declared commutative.
type receptionGroup struct {
	handler uint32
	size    int
	order   commutative.Order
	every   int // the group occurs every that many iterations (0: each)
}

// miniApps are the message patterns of the three mini-apps, seen from one
// receiving task, everything keyed by iteration.
var miniApps = []struct {
	name   string
	groups []receptionGroup
}{
	{"Stencil3D", []receptionGroup{
		{handler: 1, size: 6, order: commutative.Commutative}, // ghost faces
	}},
	{"LeanMD", []receptionGroup{
		{handler: 1, size: 2, order: commutative.Commutative},             // a compute's two position messages
		{handler: 2, size: 38, order: commutative.Commutative},            // a cell's forces from its computes
		{handler: 3, size: 26, order: commutative.Commutative, every: 20}, // migration from neighbours
	}},
	{"LULESH", []receptionGroup{
		{handler: 1, size: 26, order: commutative.Commutative}, // nodal force sums
		{handler: 2, size: 6, order: commutative.Commutative},  // gradient faces
		{handler: 3, size: 2, order: commutative.Commutative},  // dt min-reduction node over two children
		{handler: 4, size: 1, order: commutative.Ordered},      // dt broadcast, keyed by cycle
	}},
}

func annotationOf(g receptionGroup) commutative.Annotation {
	switch g.order {
	case commutative.Commutative:
		return commutative.CommutativeAnnotation(g.size)
	case commutative.Ordered:
		return commutative.OrderedAnnotation()
	}
	return commutative.OrderDependentAnnotation()
}

// patternRun drives two PEs through a mini-app pattern: senders on PE 0,
// the receiving task on PE 1, which answers each completed group with one
// message back (so its determinants are piggybacked and acknowledged).
type patternRun struct {
	senders, receiver Protocol
	receiverTask      TaskID
	payload           []byte
	iteration         uint64
	messages          int
}

const senderTasks = 64

func newPatternRun(kind Kind) *patternRun {
	r := &patternRun{
		senders:      New(kind, Config{PE: 0, PEs: 2}),
		receiver:     New(kind, Config{PE: 1, PEs: 2}),
		receiverTask: senderTasks,
		payload:      make([]byte, 64),
	}
	for t := range TaskID(senderTasks) {
		r.senders.HostTask(t)
	}
	r.receiver.HostTask(r.receiverTask)
	return r
}

func transmit(from, to Protocol) {
	ready := from.Ready()
	from.Advance()
	for _, env := range ready.Envelopes {
		if env.To == to.PE() {
			to.Arrive(env)
		} else {
			from.Arrive(env)
		}
	}
}

// step runs one iteration of the pattern and returns the messages received.
func (r *patternRun) step(groups []receptionGroup) {
	r.iteration++
	for _, g := range groups {
		if g.every > 0 && r.iteration%uint64(g.every) != 0 {
			continue
		}
		for i := range g.size {
			r.senders.Send(TaskID(i%senderTasks), 1, Message{
				To: r.receiverTask, Handler: g.handler, Annotation: annotationOf(g), Key: r.iteration, Payload: r.payload,
			})
			transmit(r.senders, r.receiver)
			if _, ok := r.receiver.NextDelivery(r.receiverTask, func(Message) bool { return true }); !ok {
				panic("benchmark: message not deliverable")
			}
			r.receiver.EndHandler(r.receiverTask)
			r.messages++
		}
		r.receiver.Send(r.receiverTask, 0, Message{To: 0, Handler: 9, Annotation: commutative.OrderedAnnotation(), Key: r.iteration, Payload: r.payload})
		transmit(r.receiver, r.senders)
		transmit(r.senders, r.receiver)
		if _, ok := r.senders.NextDelivery(0, func(Message) bool { return true }); ok {
			r.senders.EndHandler(0)
		}
	}
	if r.iteration%100 == 0 {
		r.senders.Checkpoint()
		r.receiver.Checkpoint()
	}
}

func BenchmarkMiniAppPatterns(b *testing.B) {
	for _, app := range miniApps {
		for _, kind := range []Kind{KindNone, KindFullDet, KindPartialDet} {
			b.Run(fmt.Sprintf("%s/%v", app.name, kind), func(b *testing.B) {
				r := newPatternRun(kind)
				b.ReportAllocs()
				b.ResetTimer()
				for r.messages < b.N {
					r.step(app.groups)
				}
				b.StopTimer()
				s, rs := r.senders.Stats(), r.receiver.Stats()
				n := float64(r.messages)
				b.ReportMetric(float64(s.Determinants+rs.Determinants)/n, "determinants/op")
				b.ReportMetric(float64(s.Determinants+rs.Determinants)/float64(s.Received+rs.Received), "determinants/reception")
				b.ReportMetric(float64(s.PiggybackedBytes+rs.PiggybackedBytes)/n, "piggyback-bytes/op")
				b.ReportMetric(float64(s.LoggedBytes+rs.LoggedBytes)/n, "log-bytes/op")
			})
		}
	}
}

// TestMiniAppDeterminants is the acceptance figure: PartialDet creates no
// determinant on the mini-app patterns, FullDet one per reception.
func TestMiniAppDeterminants(t *testing.T) {
	for _, app := range miniApps {
		for _, kind := range []Kind{KindNone, KindFullDet, KindPartialDet} {
			r := newPatternRun(kind)
			for range 200 {
				r.step(app.groups)
			}
			receptions := r.receiver.Stats().Received
			dets := r.receiver.Stats().Determinants
			switch kind {
			case KindFullDet:
				if dets != receptions {
					t.Errorf("%s FullDet: %d determinants for %d receptions", app.name, dets, receptions)
				}
			default:
				if dets != 0 {
					t.Errorf("%s %v: %d determinants", app.name, kind, dets)
				}
			}
		}
	}
}
