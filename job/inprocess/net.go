package inprocess

import (
	"sync"
	"sync/atomic"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/scheduler"
)

// The PEs' network. Each PE has one queue (a mailbox) of the payloads
// other PEs send it and of the events posted to it, in order, which its
// goroutine drains (loop); sending a payload puts it in the
// destination's queue.

// memNet is a PE's scheduler.Net over the in-process queues.
type memNet struct {
	rank int
	box  *mailbox
	nets []*memNet
	dead atomic.Bool
	// events is the coordinator's queue (to report the PE's death);
	// killAfter, if set, says after which event the PE dies.
	events    chan<- any
	killAfter func(ev job.Event) bool
	// stopped is closed when the PE's goroutine returns.
	stopped chan struct{}
}

// handleFirst is an event the PE handles before the driver gives it to
// the other PEs (WithEventFirst): done is closed once it has.
type handleFirst struct {
	ev   job.Event
	done chan struct{}
}

// kill makes the PE die as a SIGKILL would: it stops at once, and what it
// would still send is lost.
func (n *memNet) kill() {
	if n.dead.Swap(true) {
		return
	}
	n.box.close()
	n.events <- ctlDied{n.rank}
}

// parcel is an item of a queue: a payload, with the PE that sent it, or
// (payload nil) an event. Queued as a value, a payload costs no
// allocation of its own.
type parcel struct {
	from    int
	payload []byte
	event   any
}

func (n *memNet) Send(to int, payload []byte) {
	if n.dead.Load() {
		return
	}
	n.nets[to].box.put(parcel{from: n.rank, payload: payload})
}

func (n *memNet) Flush() {}

func (n *memNet) Post(ev any) { n.box.put(parcel{event: ev}) }

func (n *memNet) Backlog() int { return 0 }

func (n *memNet) loop(pe *scheduler.PE) {
	for {
		item, ok := n.box.get()
		if !ok {
			return
		}
		if n.dead.Load() {
			return
		}
		if item.event == nil {
			pe.Receive(item.from, item.payload)
			continue
		}
		switch it := item.event.(type) {
		case handleFirst:
			pe.Event(it.ev)
			close(it.done)
			n.maybeKill(it.ev)
		default:
			pe.Event(it)
			if ev, ok := it.(job.Event); ok {
				n.maybeKill(ev)
			}
		}
	}
}

// maybeKill kills the PE if it is to die after ev.
func (n *memNet) maybeKill(ev job.Event) {
	if n.killAfter != nil && n.killAfter(ev) {
		n.kill()
	}
}

// mailbox is an unbounded FIFO queue with a blocking get. Its items are
// items[head:]; once get has taken them all, the next put starts again
// at the front of the array (and a full array half taken moves its rest
// to the front), so the queue allocates nothing once its array is as
// large as the most items it holds.
type mailbox struct {
	mu     sync.Mutex
	items  []parcel
	head   int
	closed bool
	ready  chan struct{}
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) put(v parcel) {
	m.mu.Lock()
	if !m.closed {
		if len(m.items) == cap(m.items) && m.head >= len(m.items)/2 {
			// Full with half of it taken: move the rest to the front.
			n := copy(m.items, m.items[m.head:])
			clear(m.items[n:])
			m.items, m.head = m.items[:n], 0
		}
		m.items = append(m.items, v)
	}
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) get() (parcel, bool) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return parcel{}, false
		}
		if m.head < len(m.items) {
			v := m.items[m.head]
			m.items[m.head] = parcel{}
			m.head++
			if m.head == len(m.items) {
				m.items, m.head = m.items[:0], 0
			}
			m.mu.Unlock()
			return v, true
		}
		m.mu.Unlock()
		<-m.ready
	}
}

func (m *mailbox) close() {
	m.mu.Lock()
	m.closed = true
	m.items, m.head = nil, 0
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}
