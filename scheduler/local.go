package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// Result is the outcome of a job run in process.
type Result struct {
	Status int
	Output []string
	Stats  []Stats
	// Regained lists, in order, the recoveries after which the job got
	// back to where it was at the failure before it ended.
	Regained []job.ProgressRegained
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
	jb, err := Define(app, args)
	if err != nil {
		return Result{}, err
	}
	core := job.NewCoordinator(job.Config{Size: pes, Protocol: o.protocol, Layout: Layout(jb, pes), Balancer: o.balancer})
	coord := &localCoordinator{events: make(chan any, 1024), debug: o.debug, core: core}
	done := make(chan struct{})
	nets := make([]*localNet, pes)
	for r := range nets {
		nets[r] = &localNet{rank: r, box: newMailbox(), nets: nets, events: coord.events, killAfter: o.eventKills[r]}
	}
	pesList := make([]*PE, pes)
	for r := 0; r < pes; r++ {
		var onStep func(uint64)
		if at, ok := o.kills[r]; ok {
			n := nets[r]
			onStep = func(step uint64) {
				if step >= at {
					n.kill()
				}
			}
		}
		pe, err := New(Config{
			OnStep: onStep, MeasureLoad: o.balancer != "",
			Rank: r, Size: pes, JobID: 1, App: app, Args: args, Protocol: o.protocol, CheckpointEvery: o.checkpointEvery,
			Net: nets[r], Control: localControl{rank: r, events: coord.events, done: done}, Stderr: stderr,
		})
		if err != nil {
			return Result{}, err
		}
		pesList[r] = pe
	}
	// ended[r] is closed when PE r's goroutine returns.
	ended := make([]chan struct{}, pes)
	for r := range nets {
		ended[r] = make(chan struct{})
		go func() {
			defer close(ended[r])
			nets[r].loop(pesList[r])
		}()
	}
	// waitPEs waits for the PE goroutines, except one stuck in application
	// code that never returns (a stalled job): it is left behind, and so
	// are its counters.
	waitPEs := func() []bool {
		stopped := make([]bool, pes)
		for r := range nets {
			if out, _ := core.Done(); !errors.Is(out.Err, job.ErrStalled) || pesList[r].Busy() == "" {
				<-ended[r]
				stopped[r] = true
			}
		}
		return stopped
	}
	stall := o.stallTimeout
	if stall <= 0 {
		stall = job.DefaultStallTimeout
	}
	coord.stallWindow = stall / job.StallChecks
	coord.busy = func(pe int) string { return pesList[pe].Busy() }
	res, err := coord.run(ctx, nets)
	close(done)
	for _, n := range nets {
		n.box.close()
	}
	stopped := waitPEs()
	if err != nil && o.debug != nil {
		for r, pe := range pesList {
			if stopped[r] {
				fmt.Fprint(o.debug, pe.DebugString())
			}
		}
		fmt.Fprintln(o.debug, core.DebugString())
	}
	for r, pe := range pesList {
		if !stopped[r] {
			res.Stats = append(res.Stats, Stats{})
			continue
		}
		res.Stats = append(res.Stats, pe.Stats())
	}
	return res, err
}

// Option changes how RunInProcess runs a job.
type Option func(*options)

type options struct {
	protocol        logging.Kind
	balancer        string
	checkpointEvery uint64
	kills           map[int]uint64
	eventKills      map[int]func(ev job.Event) bool
	stallTimeout    time.Duration
	debug           io.Writer
}

// WithKillAfterEvent makes PE pe die (as WithKill) right after it handled
// a coordinator event that match accepts: e.g. TakeCheckpoint (a failure
// while a checkpoint is taken), Recover (during a recovery) or Migrate.
func WithKillAfterEvent(pe int, match func(ev job.Event) bool) Option {
	return func(o *options) {
		if o.eventKills == nil {
			o.eventKills = map[int]func(job.Event) bool{}
		}
		o.eventKills[pe] = match
	}
}

// WithStallTimeout sets how long the job may make no progress before it
// stops with a diagnosis (default job.DefaultStallTimeout).
func WithStallTimeout(d time.Duration) Option { return func(o *options) { o.stallTimeout = d } }

// WithKill makes PE pe die (stop at once, lose everything) when one of its
// tasks offers a sync point at step atStep or later, as a SIGKILL would.
func WithKill(pe int, atStep uint64) Option {
	return func(o *options) {
		if o.kills == nil {
			o.kills = map[int]uint64{}
		}
		o.kills[pe] = atStep
	}
}

// WithBalancer runs a load balancer ("greedy" or "refine") at every sync
// point the runtime takes.
func WithBalancer(name string) Option { return func(o *options) { o.balancer = name } }

// WithCheckpointEvery sets the sync period in steps (see Config).
func WithCheckpointEvery(k uint64) Option { return func(o *options) { o.checkpointEvery = k } }

// WithDebug writes to w the coordinator's notes as they come and, if the
// job ends with an error, the state of every PE and of the coordinator.
func WithDebug(w io.Writer) Option { return func(o *options) { o.debug = w } }

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
		rank int
		st   job.IdleStatus
	}
	ctlQuiescence struct{ rank int }
	ctlStaged     struct {
		rank         int
		epoch        uint64
		tasks, bytes int
	}
	ctlBuddyStored struct {
		rank       int
		epoch      uint64
		ward       int
		generation uint64
	}
	ctlDisk struct {
		rank  int
		epoch uint64
		entry migrate.FileEntry
		err   error
	}
	ctlRestored struct {
		rank       int
		generation uint64
		before     job.Progress
	}
	ctlReached struct {
		rank             int
		generation, step uint64
	}
	ctlFail struct {
		rank int
		err  error
	}
	ctlDied  struct{ rank int }
	ctlLoads struct {
		rank  int
		loads []migrate.TaskLoad
	}
	ctlMigrated  struct{ rank int }
	ctlCommitted struct {
		rank  int
		epoch uint64
	}
	ctlProgress struct {
		rank      int
		delivered uint64
	}
	ctlDiagnosis struct {
		rank   int
		report string
	}
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

func (c localControl) Output(line string)                    { c.send(ctlOutput{c.rank, line}) }
func (c localControl) Exit(status int)                       { c.send(ctlExit{c.rank, status}) }
func (c localControl) RequestQuiescence()                    { c.send(ctlQuiescence{c.rank}) }
func (c localControl) Idle(st job.IdleStatus)                { c.send(ctlIdle{c.rank, st}) }
func (c localControl) Loads(l []migrate.TaskLoad)            { c.send(ctlLoads{c.rank, l}) }
func (c localControl) Migrated()                             { c.send(ctlMigrated{c.rank}) }
func (c localControl) Progress(delivered uint64)             { c.send(ctlProgress{c.rank, delivered}) }
func (c localControl) Committed(epoch uint64)                { c.send(ctlCommitted{c.rank, epoch}) }
func (c localControl) Diagnosis(report string)               { c.send(ctlDiagnosis{c.rank, report}) }
func (c localControl) Fail(err error)                        { c.send(ctlFail{c.rank, err}) }
func (c localControl) BuddyStored(e uint64, w int, g uint64) { c.send(ctlBuddyStored{c.rank, e, w, g}) }
func (c localControl) Reached(g, step uint64)                { c.send(ctlReached{c.rank, g, step}) }
func (c localControl) Restored(g uint64, _ int, before job.Progress) {
	c.send(ctlRestored{c.rank, g, before})
}
func (c localControl) CheckpointStaged(e uint64, tasks, bytes int) {
	c.send(ctlStaged{c.rank, e, tasks, bytes})
}
func (c localControl) DiskWritten(e uint64, entry migrate.FileEntry, err error) {
	c.send(ctlDisk{c.rank, e, entry, err})
}

// localCoordinator drives the job's coordinator: it hands it what the PEs
// report, and is its job.Driver over the in-memory queues.
type localCoordinator struct {
	events chan any
	core   *job.Coordinator
	nets   []*localNet
	res    Result
	// pending are the commands not yet carried out (see perform).
	pending    []job.Command
	performing bool
	// debug, if set, receives the coordinator's notes.
	debug io.Writer
	// stallWindow is the period of stall checks; busy names what a PE
	// runs (PE.Busy).
	stallWindow time.Duration
	busy        func(pe int) string
}

var _ job.Driver = (*localCoordinator)(nil)

// perform carries out commands in order. The commands an effect's outcome
// brings (OnManifestWritten) come after those already queued.
func (c *localCoordinator) perform(cmds []job.Command) {
	c.pending = append(c.pending, cmds...)
	if c.performing {
		return
	}
	c.performing = true
	for len(c.pending) > 0 {
		cmd := c.pending[0]
		c.pending = c.pending[1:]
		cmd.Dispatch(c)
	}
	c.performing = false
}

func (c *localCoordinator) Send(s job.Send) {
	if rank, one := s.To.PE(); one {
		c.nets[rank].Post(s.Event)
		return
	}
	for _, n := range c.nets {
		if !n.dead.Load() {
			n.Post(s.Event)
		}
	}
}

func (c *localCoordinator) WriteManifest(w job.WriteManifest) {
	c.perform(c.core.OnManifestWritten(w.Manifest.Epoch, migrate.WriteManifest(w.Dir, w.Manifest)))
}

// errNoDisk: a job in process has no checkpoint directory, so no
// recovery falls back to one.
var errNoDisk = errors.New("scheduler: a job run in process keeps no disk checkpoint")

func (c *localCoordinator) SendDiskRecords(sd job.SendDiskRecords) {
	c.perform(c.core.OnDiskRecordsSent(sd, errNoDisk))
}

func (c *localCoordinator) Started(job.Started)   {}
func (c *localCoordinator) Restored(job.Restored) {}

func (c *localCoordinator) ProgressRegained(r job.ProgressRegained) {
	c.res.Regained = append(c.res.Regained, r)
}

func (c *localCoordinator) run(ctx context.Context, nets []*localNet) (Result, error) {
	c.nets = nets
	deliver := c.perform
	deliver(c.core.Ready())
	// Quiescence rounds are paced so that idle PEs do not spin.
	pace := time.NewTicker(time.Millisecond)
	defer pace.Stop()
	stall := time.NewTicker(c.stallWindow)
	defer stall.Stop()
	for {
		if out, done := c.core.Done(); done {
			c.res.Status = out.Status
			return c.res, out.Err
		}
		for _, note := range c.core.Notes() {
			if c.debug != nil {
				fmt.Fprintln(c.debug, "coordinator:", note)
			}
		}
		select {
		case <-pace.C:
			deliver(c.core.Tick())
		case <-stall.C:
			deliver(c.core.CheckStall(c.stallWindow, c.busy))
		case <-ctx.Done():
			return c.res, ctx.Err()
		case ev := <-c.events:
			switch ev := ev.(type) {
			case ctlOutput:
				c.res.Output = append(c.res.Output, ev.line)
			case ctlExit:
				deliver(c.core.OnExit(ev.rank, ev.status))
			case ctlQuiescence:
				c.core.OnQuiescenceRequest(ev.rank)
			case ctlIdle:
				deliver(c.core.OnIdle(ev.rank, ev.st))
			case ctlStaged:
				deliver(c.core.OnStaged(ev.rank, ev.epoch, ev.bytes))
			case ctlBuddyStored:
				deliver(c.core.OnBuddyStored(ev.rank, ev.epoch, ev.ward, ev.generation))
			case ctlDisk:
				deliver(c.core.OnDiskWritten(ev.rank, ev.epoch, ev.entry, ev.err))
			case ctlRestored:
				deliver(c.core.OnRestored(ev.rank, ev.generation, ev.before))
			case ctlReached:
				deliver(c.core.OnReached(ev.rank, ev.generation, ev.step))
			case ctlFail:
				deliver(c.core.OnError(ev.rank, ev.err))
			case ctlDied:
				deliver(c.core.OnFailure(ev.rank))
			case ctlLoads:
				deliver(c.core.OnLoads(ev.rank, ev.loads))
			case ctlMigrated:
				deliver(c.core.OnMigrated(ev.rank))
			case ctlCommitted:
				deliver(c.core.OnCommitted(ev.rank, ev.epoch))
			case ctlProgress:
				c.core.OnProgress(ev.rank, ev.delivered)
			case ctlDiagnosis:
				deliver(c.core.OnDiagnosis(ev.rank, ev.report))
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
	dead atomic.Bool
	// events is the coordinator's queue (to report the PE's death);
	// killAfter, if set, says after which event the PE dies.
	events    chan<- any
	killAfter func(ev job.Event) bool
}

// kill makes the PE die as a SIGKILL would: it stops at once, and what it
// would still send is lost.
func (n *localNet) kill() {
	if n.dead.Swap(true) {
		return
	}
	n.box.close()
	n.events <- ctlDied{n.rank}
}

type localPayload struct {
	from    int
	payload []byte
}

func (n *localNet) Send(to int, payload []byte) {
	if n.dead.Load() {
		return
	}
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
		if n.dead.Load() {
			return
		}
		if p, isPayload := item.(localPayload); isPayload {
			pe.Receive(p.from, p.payload)
		} else {
			pe.Event(item)
			if ev, ok := item.(job.Event); ok && n.killAfter != nil && n.killAfter(ev) {
				n.kill()
			}
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
