package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/logging"
)

// ErrQuiescentWithoutExit reports a job in which nothing is left to do
// although nobody called Exit or asked for quiescence detection.
var ErrQuiescentWithoutExit = errors.New("scheduler: job is quiescent but no task called Exit (a message that never comes?)")

// Result is the outcome of a job run in process.
type Result struct {
	Status int
	Output []string
	Stats  []Stats
}

// RunInProcess runs app on pes PEs inside this process, each PE on its own
// goroutine and the PEs connected by in-memory queues. It exists to test
// applications and the scheduler; real jobs run one PE per OS process
// (package launcher) over the network transport.
func RunInProcess(ctx context.Context, app actor.App, args []string, pes int, stderr io.Writer, opts ...Option) (Result, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	coord := &localCoordinator{events: make(chan any, 1024), qd: NewQuiescenceDetector(pes)}
	done := make(chan struct{})
	nets := make([]*localNet, pes)
	for r := range nets {
		nets[r] = &localNet{rank: r, box: newMailbox(), nets: nets}
	}
	pesList := make([]*PE, pes)
	for r := 0; r < pes; r++ {
		pe, err := New(Config{
			Rank: r, Size: pes, JobID: 1, App: app, Args: args, Protocol: o.protocol,
			Net: nets[r], Control: localControl{rank: r, events: coord.events, done: done}, Stderr: stderr,
		})
		if err != nil {
			return Result{}, err
		}
		pesList[r] = pe
	}
	var wg sync.WaitGroup
	for r := range nets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nets[r].loop(pesList[r])
		}()
	}
	for _, n := range nets {
		n.Post(Begin{})
	}
	res, err := coord.run(ctx, nets)
	close(done)
	for _, n := range nets {
		n.box.close()
	}
	wg.Wait()
	for _, pe := range pesList {
		res.Stats = append(res.Stats, pe.Stats())
	}
	return res, err
}

// Option changes how RunInProcess runs a job.
type Option func(*options)

type options struct {
	protocol logging.Kind
}

// WithProtocol runs the job under a fault-tolerance protocol (default
// logging.KindNone).
func WithProtocol(k logging.Kind) Option { return func(o *options) { o.protocol = k } }

type (
	ctlOutput struct {
		rank int
		line string
	}
	ctlExit struct {
		rank, status int
	}
	ctlIdle struct {
		rank                  int
		round, sent, received uint64
	}
	ctlQuiescence struct{ rank int }
)

type localControl struct {
	rank   int
	events chan<- any
	done   <-chan struct{}
}

func (c localControl) send(ev any) {
	select {
	case c.events <- ev:
	case <-c.done:
	}
}

func (c localControl) Output(line string) { c.send(ctlOutput{c.rank, line}) }
func (c localControl) Exit(status int)    { c.send(ctlExit{c.rank, status}) }
func (c localControl) RequestQuiescence() { c.send(ctlQuiescence{c.rank}) }
func (c localControl) Idle(round, sent, received uint64) {
	c.send(ctlIdle{c.rank, round, sent, received})
}

type localCoordinator struct {
	events chan any
	qd     *QuiescenceDetector
}

func (c *localCoordinator) run(ctx context.Context, nets []*localNet) (Result, error) {
	var res Result
	var waiting []int // PEs that asked for quiescence detection
	probe := func() {
		round := c.qd.StartRound()
		for _, n := range nets {
			n.Post(Probe{Round: round})
		}
	}
	probe()
	for {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case ev := <-c.events:
			switch ev := ev.(type) {
			case ctlOutput:
				res.Output = append(res.Output, ev.line)
			case ctlExit:
				res.Status = ev.status
				return res, nil
			case ctlQuiescence:
				waiting = append(waiting, ev.rank)
			case ctlIdle:
				complete, quiescent := c.qd.Reply(ev.rank, ev.round, ev.sent, ev.received)
				if !complete {
					continue
				}
				if quiescent {
					if len(waiting) == 0 {
						return res, ErrQuiescentWithoutExit
					}
					for _, r := range waiting {
						nets[r].Post(QuiescenceDetected{})
					}
					waiting = nil
					c.qd.Reset()
				}
				probe()
			default:
				panic(fmt.Sprintf("scheduler: unknown control event %T", ev))
			}
		}
	}
}

// localNet connects in-process PEs.
type localNet struct {
	rank int
	box  *mailbox
	nets []*localNet
}

type localPayload struct {
	from    int
	payload []byte
}

func (n *localNet) Send(to int, payload []byte) {
	n.nets[to].box.put(localPayload{n.rank, payload})
}
func (n *localNet) Flush()       {}
func (n *localNet) Post(ev any)  { n.box.put(ev) }
func (n *localNet) Backlog() int { return 0 }

func (n *localNet) loop(pe *PE) {
	for {
		item, ok := n.box.get()
		if !ok {
			return
		}
		if p, isPayload := item.(localPayload); isPayload {
			pe.Receive(p.from, p.payload)
		} else {
			pe.Event(item)
		}
	}
}

// mailbox is an unbounded FIFO queue with a blocking get.
type mailbox struct {
	mu     sync.Mutex
	items  []any
	closed bool
	ready  chan struct{}
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) put(v any) {
	m.mu.Lock()
	if !m.closed {
		m.items = append(m.items, v)
	}
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) get() (any, bool) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, false
		}
		if len(m.items) > 0 {
			v := m.items[0]
			m.items[0] = nil
			m.items = m.items[1:]
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
	m.items = nil
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}
