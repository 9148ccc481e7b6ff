package logtest

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// Handlers of the synthetic program.
const (
	handlerOrdered        uint32 = 1 // one message per step: an ordered step
	handlerRegion         uint32 = 2 // several messages per step: a commutative region
	handlerOrderDependent uint32 = 3 // side messages consumed whenever they arrive
)

// program is the synthetic application: a layered exchange of steps. At step
// s task t expects one message from each task of senders[t][s]; one sender
// makes it an ordered step, more a commutative region. Handlers may also
// send order-dependent side messages whose effect depends on when they are
// consumed.
type program struct {
	tasks, steps int
	barrier      int // the step whose sends wait for a checkpoint; 0: none
	// senders[t][s] are the tasks that send to t at step s (1-based s).
	senders [][][]commutative.TaskID
	// receivers[u][s] are the tasks u sends to at step s.
	receivers      [][][]commutative.TaskID
	orderDependent bool
	// orderFree: side messages go to even tasks only (Config.OrderFree).
	orderFree bool
	// wrongAnnotation makes region handlers order-dependent while still
	// declared commutative: the mistake the checker must catch.
	wrongAnnotation bool
}

func newProgram(cfg Config, rng *rand.Rand) *program {
	p := &program{
		tasks: cfg.Tasks, steps: cfg.Steps, barrier: cfg.Barrier,
		orderDependent: cfg.OrderDependent, wrongAnnotation: cfg.WrongAnnotation, orderFree: cfg.OrderFree,
	}
	p.senders = make([][][]commutative.TaskID, cfg.Tasks)
	p.receivers = make([][][]commutative.TaskID, cfg.Tasks)
	for t := range cfg.Tasks {
		p.senders[t] = make([][]commutative.TaskID, cfg.Steps+1)
		p.receivers[t] = make([][]commutative.TaskID, cfg.Steps+1)
	}
	for s := 1; s <= cfg.Steps; s++ {
		for t := range cfg.Tasks {
			from := []commutative.TaskID{commutative.TaskID((t + cfg.Tasks - 1) % cfg.Tasks)}
			for range rng.IntN(4) {
				u := commutative.TaskID(rng.IntN(cfg.Tasks))
				if !slices.Contains(from, u) {
					from = append(from, u)
				}
			}
			slices.Sort(from)
			p.senders[t][s] = from
			for _, u := range from {
				p.receivers[u][s] = append(p.receivers[u][s], commutative.TaskID(t))
			}
		}
	}
	return p
}

// appTask is a task's application state; copying it (with cloned slots)
// is its checkpoint.
type appTask struct {
	id    commutative.TaskID
	step  int // completed steps
	value uint64
	// sideValue and sideCount are changed by order-dependent messages.
	sideValue uint64
	sideCount uint64
	slots     []uint64
	// deferred: the next step's sends wait for a checkpoint (start and
	// barrier).
	deferred bool
}

func (a appTask) clone() appTask {
	a.slots = slices.Clone(a.slots)
	return a
}

func (a appTask) digest() uint64 {
	return mix(mix(mix(a.value, a.sideValue), a.sideCount), uint64(a.step))
}

// runtime is what handlers need: a way to send.
type runtime interface {
	send(from commutative.TaskID, msg logging.Message)
}

func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ (b + 0x632be59bd9b4e019 + a<<6 + a>>2)
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return x
}

func payload(value uint64, ttl uint8) []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 9), value)
	return append(b, ttl)
}

func readPayload(b []byte) (uint64, uint8) { return binary.LittleEndian.Uint64(b), b[8] }

func (p *program) newTask(id commutative.TaskID) appTask {
	return appTask{id: id, slots: make([]uint64, p.tasks), deferred: true}
}

// admits is the program's keyed buffering: step messages only for the next
// step, side messages at any time.
func (p *program) admits(a *appTask, m logging.Message) bool {
	return m.Handler == handlerOrderDependent || m.Key == uint64(a.step+1)
}

// sendStep sends a's messages of step a.step+1.
func (p *program) sendStep(rt runtime, a *appTask) {
	s := a.step + 1
	if s > p.steps {
		return
	}
	for _, t := range p.receivers[a.id][s] {
		msg := logging.Message{To: t, Key: uint64(s), Payload: payload(mix(a.value, uint64(s)<<32|uint64(t)), 0)}
		if n := len(p.senders[t][s]); n == 1 {
			msg.Handler, msg.Annotation = handlerOrdered, commutative.OrderedAnnotation()
		} else {
			msg.Handler, msg.Annotation = handlerRegion, commutative.CommutativeAnnotation(n)
		}
		rt.send(a.id, msg)
	}
}

func (p *program) sendSide(rt runtime, a *appTask, to commutative.TaskID, value uint64, ttl uint8) {
	if p.orderFree {
		to &^= 1
	}
	rt.send(a.id, logging.Message{
		To: to, Handler: handlerOrderDependent, Annotation: commutative.OrderDependentAnnotation(),
		Payload: payload(value, ttl),
	})
}

// completeStep finishes a step: the next step's sends go out now, or wait
// for the checkpoint at the barrier.
func (p *program) completeStep(rt runtime, a *appTask) {
	a.step++
	if a.step+1 == p.barrier {
		a.deferred = true
		return
	}
	p.sendStep(rt, a)
}

// resume performs deferred sends.
func (p *program) resume(rt runtime, a *appTask) {
	a.deferred = false
	p.sendStep(rt, a)
}

// handle runs the handler of m on a.
func (p *program) handle(rt runtime, a *appTask, m logging.Message) {
	value, ttl := readPayload(m.Payload)
	switch m.Handler {
	case handlerOrdered:
		a.value = mix(a.value, value)
		if p.orderDependent && (int(a.id)+a.step)%3 == 0 {
			p.sendSide(rt, a, commutative.TaskID((int(a.id)+a.step+1)%p.tasks), mix(a.value, 7), 2)
		}
	case handlerRegion:
		sender := m.ID.Sender
		if p.wrongAnnotation {
			a.value = mix(a.value, value)
		} else {
			a.slots[sender] = value
		}
		if p.orderDependent && (int(sender)+a.step)%3 == 0 {
			p.sendSide(rt, a, sender, mix(a.value, value), 1)
		}
	case handlerOrderDependent:
		a.sideValue = mix(mix(a.sideValue, value), a.value)
		a.sideCount++
		if ttl > 0 {
			p.sendSide(rt, a, commutative.TaskID(a.sideValue%uint64(p.tasks)), mix(a.sideValue, 3), ttl-1)
		}
	}
}

// complete runs after m's handler: an ordered step completes at once, a
// region when the protocol says its last message was handled.
func (p *program) complete(rt runtime, a *appTask, m logging.Message, regionComplete bool) {
	switch {
	case m.Handler == handlerOrdered:
		p.completeStep(rt, a)
	case m.Handler == handlerRegion && regionComplete:
		if !p.wrongAnnotation {
			for _, u := range p.senders[a.id][a.step+1] {
				a.value = mix(a.value, a.slots[u])
				a.slots[u] = 0
			}
		}
		p.completeStep(rt, a)
	}
}
