package inprocess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// Result is the outcome of a job run in process.
type Result struct {
	Status int
	Output []string
	Stats  []scheduler.Stats
	// Regained lists, in order, the recoveries after which the job got
	// back to where it was at the failure before it ended.
	Regained []job.ProgressRegained
}

// Run runs app on pes PEs inside this process, each PE on its own
// goroutine and the PEs connected by in-memory queues, under the job's
// coordinator. It exists to test applications and the scheduler; real
// jobs run one PE per OS process (package launcher) over the network
// transport.
func Run(ctx context.Context, app actor.App, args []string, pes int, stderr io.Writer, opts ...Option) (Result, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	jb, err := scheduler.Define(app, args)
	if err != nil {
		return Result{}, err
	}
	syncEvery, logLimit := o.checkpointEvery, 0
	if o.logLimit > 0 && o.checkpointEvery == 0 && o.protocol != logging.KindNone {
		// The launcher's default policy (see job.DefaultLogLimit).
		syncEvery, logLimit = job.DefaultSyncEvery, o.logLimit
	}
	core := job.NewCoordinator(job.Config{Size: pes, Protocol: o.protocol, Layout: scheduler.Layout(jb, pes), Balancer: o.balancer, LogLimit: logLimit, SyncEvery: syncEvery,
		Loggers: o.loggers, Dumping: o.logQuota > 0})
	drv := &driver{events: make(chan any, 1024), debug: o.debug, core: core, firstPE: -1}
	if o.first != nil {
		drv.firstPE, drv.first = o.firstPE, o.first
	}
	done := make(chan struct{})
	nets := make([]*memNet, pes)
	for r := range nets {
		nets[r] = &memNet{rank: r, box: newMailbox(), nets: nets, events: drv.events, killAfter: o.eventKills[r], stopped: make(chan struct{})}
	}
	pesList := make([]*scheduler.PE, pes)
	var loggers *memLoggers
	if o.logQuota != 0 {
		loggers = newMemLoggers(o.loggers, o.loggerDies)
	}
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
		var dumps scheduler.DumpSink
		if loggers != nil {
			dumps = loggers.sink(nets[r])
		}
		pe, err := scheduler.New(scheduler.Config{
			LogQuota: o.logQuota, Loggers: o.loggers, Dumps: dumps,
			OnStep: onStep, MeasureLoad: o.balancer != "", CheckAnnotations: o.checkAnnotations,
			Rank: r, Size: pes, JobID: 1, App: app, Args: args, Protocol: o.protocol, CheckpointEvery: syncEvery,
			Net: nets[r], Control: control{rank: r, events: drv.events, done: done}, Stderr: stderr,
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
			defer close(nets[r].stopped)
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
	drv.stallWindow = stall / job.StallChecks
	drv.busy = func(pe int) string { return pesList[pe].Busy() }
	res, err := drv.run(ctx, nets)
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
			res.Stats = append(res.Stats, scheduler.Stats{})
			continue
		}
		res.Stats = append(res.Stats, pe.Stats())
	}
	return res, err
}

// Option changes how Run runs a job.
type Option func(*options)

type options struct {
	logQuota, loggers int
	loggerDies        func(logger, dumps int) bool
	protocol          logging.Kind
	balancer          string
	checkpointEvery   uint64
	logLimit          int
	kills             map[int]uint64
	eventKills        map[int]func(ev job.Event) bool
	stallTimeout      time.Duration
	debug             io.Writer
	firstPE           int
	first             func(ev job.Event) bool
	// checkAnnotations is WithCheckAnnotations's number of orders.
	checkAnnotations int
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

// WithEventFirst makes an event for every PE that match accepts reach
// PE pe first, and the other PEs only once pe has handled it: what pe
// sent while handling it (the records of the tasks it moves away, for
// Migrate) is then ahead of the event in the others' queues, an order
// that the network allows and that otherwise depends on timing.
func WithEventFirst(pe int, match func(ev job.Event) bool) Option {
	return func(o *options) { o.firstPE, o.first = pe, match }
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

// WithCheckAnnotations re-runs every completed commutative region in
// orders other orders and stops the job at the first region they do not
// agree on (scheduler.Config.CheckAnnotations, --check-annotations).
func WithCheckAnnotations(orders int) Option {
	return func(o *options) { o.checkAnnotations = orders }
}

// WithCheckpointEvery sets the sync period in steps (see Config).
func WithCheckpointEvery(k uint64) Option { return func(o *options) { o.checkpointEvery = k } }

// WithLogLimit runs a job without WithCheckpointEvery under a logging
// protocol as the launcher does by default: a sync point every
// job.DefaultSyncEvery steps, which checkpoints once a PE's sender log
// holds bytes or more (job.Config.LogLimit; the launcher's default is
// job.DefaultLogLimit).
func WithLogLimit(bytes int) Option { return func(o *options) { o.logLimit = bytes } }

// WithDebug writes to w the coordinator's notes as they come and, if the
// job ends with an error, the state of every PE and of the coordinator.
func WithDebug(w io.Writer) Option { return func(o *options) { o.debug = w } }

// WithLogQuota bounds each PE's sender log to bytes by dumping to
// loggers in-memory loggers (see scheduler.Config.LogQuota), which store
// every dump and acknowledge it from a goroutine of their own. dies, if
// set, is asked before each dump a logger takes in (its number, the dumps
// it took in so far): true makes that logger die there, losing what it
// holds, and every PE is told.
func WithLogQuota(bytes, loggers int, dies func(logger, dumps int) bool) Option {
	return func(o *options) { o.logQuota, o.loggers, o.loggerDies = bytes, loggers, dies }
}

// WithProtocol runs the job under a fault-tolerance protocol (default
// logging.KindNone).
func WithProtocol(k logging.Kind) Option { return func(o *options) { o.protocol = k } }
