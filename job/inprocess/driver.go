package inprocess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/migrate"
)

// The driver: it hands the coordinator what the PEs report (through
// control, each PE's scheduler.Control) and carries out the coordinator's
// commands over the in-memory queues (job.Driver).

type (
	ctlOutput struct {
		task, seq uint64
		line      string
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

type control struct {
	rank   int
	events chan<- any
	done   <-chan struct{}
}

func (c control) send(ev any) {
	select {
	case c.events <- ev:
	case <-c.done:
	}
}

func (c control) Output(task, seq uint64, line string) { c.send(ctlOutput{task, seq, line}) }

func (c control) Exit(status int) { c.send(ctlExit{c.rank, status}) }

func (c control) RequestQuiescence() { c.send(ctlQuiescence{c.rank}) }

func (c control) Idle(st job.IdleStatus) { c.send(ctlIdle{c.rank, st}) }

func (c control) Loads(l []migrate.TaskLoad) { c.send(ctlLoads{c.rank, l}) }

func (c control) Migrated() { c.send(ctlMigrated{c.rank}) }

func (c control) Progress(delivered uint64) { c.send(ctlProgress{c.rank, delivered}) }

func (c control) Committed(epoch uint64) { c.send(ctlCommitted{c.rank, epoch}) }

func (c control) Diagnosis(report string) { c.send(ctlDiagnosis{c.rank, report}) }

func (c control) Fail(err error) { c.send(ctlFail{c.rank, err}) }

func (c control) BuddyStored(e uint64, w int, g uint64) { c.send(ctlBuddyStored{c.rank, e, w, g}) }

func (c control) Reached(g, step uint64) { c.send(ctlReached{c.rank, g, step}) }

func (c control) Restored(g uint64, _ int, before job.Progress) {
	c.send(ctlRestored{c.rank, g, before})
}

func (c control) CheckpointStaged(e uint64, tasks, bytes int) {
	c.send(ctlStaged{c.rank, e, tasks, bytes})
}

func (c control) DiskWritten(e uint64, entry migrate.FileEntry, err error) {
	c.send(ctlDisk{c.rank, e, entry, err})
}

// driver drives the job's coordinator: it hands it what the PEs
// report, and is its job.Driver over the in-memory queues.
type driver struct {
	events chan any
	core   *job.Coordinator
	nets   []*memNet
	res    Result
	// printed writes each line of output once (tasks that re-execute
	// print theirs again).
	printed job.OutputFilter
	// pending are the commands not yet carried out (see perform).
	pending    []job.Command
	performing bool
	// debug, if set, receives the coordinator's notes.
	debug io.Writer
	// stallWindow is the period of stall checks; busy names what a PE
	// runs (PE.Busy).
	stallWindow time.Duration
	busy        func(pe int) string
	// first, if set, says which events for every PE go to PE firstPE
	// before the others (WithEventFirst).
	firstPE int
	first   func(ev job.Event) bool
}

var _ job.Driver = (*driver)(nil)

// perform carries out commands in order. The commands an effect's outcome
// brings (OnManifestWritten) come after those already queued.
func (c *driver) perform(cmds []job.Command) {
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

func (c *driver) Send(s job.Send) {
	if rank, one := s.To.PE(); one {
		c.nets[rank].Post(s.Event)
		return
	}
	lead := -1
	if c.first != nil && c.first(s.Event) && !c.nets[c.firstPE].dead.Load() {
		// The others get it once PE firstPE handled it (or stopped), so
		// that what it sent meanwhile is ahead of it in their queues.
		// The PEs' control events wait in the buffered queue meanwhile.
		lead = c.firstPE
		done := make(chan struct{})
		c.nets[lead].Post(handleFirst{s.Event, done})
		select {
		case <-done:
		case <-c.nets[lead].stopped:
		}
	}
	for r, n := range c.nets {
		if r != lead && !n.dead.Load() {
			n.Post(s.Event)
		}
	}
}

func (c *driver) WriteManifest(w job.WriteManifest) {
	c.perform(c.core.OnManifestWritten(w.Manifest.Epoch, migrate.WriteManifest(w.Dir, w.Manifest)))
}

// errNoDisk: a job in process has no checkpoint directory, so no
// recovery falls back to one.
var errNoDisk = errors.New("inprocess: a job run in process keeps no disk checkpoint")

func (c *driver) SendDiskRecords(sd job.SendDiskRecords) {
	c.perform(c.core.OnDiskRecordsSent(sd, errNoDisk))
}

func (c *driver) Started(job.Started) {}

func (c *driver) Restored(job.Restored) {}

func (c *driver) ProgressRegained(r job.ProgressRegained) {
	c.res.Regained = append(c.res.Regained, r)
}

func (c *driver) run(ctx context.Context, nets []*memNet) (Result, error) {
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
				if c.printed.Admit(ev.task, ev.seq) {
					c.res.Output = append(c.res.Output, ev.line)
				}
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
				panic(fmt.Sprintf("inprocess: unknown control event %T", ev))
			}
		}
	}
}
