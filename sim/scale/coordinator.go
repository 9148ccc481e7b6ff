package scale

import (
	"fmt"
	"reflect"
	"time"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// Phase counts the coordinator's messages of one phase of a job: those
// it sends (a Send to every PE counts once per live PE) and the reports
// it takes, by type, and the time its calls took.
type Phase struct {
	Out, In map[string]int
	Elapsed time.Duration
}

// OutTotal and InTotal are the messages each way.
func (p Phase) OutTotal() int { return sum(p.Out) }
func (p Phase) InTotal() int  { return sum(p.In) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// CoordinatorRun is what the real job.Coordinator of a job of PEs PEs
// exchanges with them: in a checkpoint, in one quiescence round, and in
// the recovery from one failure, from the failure to the progress
// regained.
type CoordinatorRun struct {
	PEs                              int
	Checkpoint, Quiescence, Recovery Phase
	// Relocated is the number of tasks the failure relocated.
	Relocated int
}

// CoordinatorFailure drives a real job.Coordinator of pes PEs, each
// hosting tasksPerPE tasks of one collection, under kind: the initial
// checkpoint, a quiescence round, then the failure of PE failed and its
// recovery. Every PE answers at once, in rank order (the order that
// costs the coordinator's scans of its per-PE tables most).
func CoordinatorFailure(pes, tasksPerPE, failed int, kind logging.Kind) (CoordinatorRun, error) {
	if pes < 2 || failed < 0 || failed >= pes || tasksPerPE < 1 {
		return CoordinatorRun{}, fmt.Errorf("%w: coordinator of %d PEs, %d tasks each, failure of PE %d", ErrConfig, pes, tasksPerPE, failed)
	}
	layout := make([]int, pes*tasksPerPE)
	for lin := range layout {
		layout[lin] = lin / tasksPerPE
	}
	c := job.NewCoordinator(job.Config{Size: pes, Protocol: kind, Layout: [][]int{layout}})
	res := CoordinatorRun{PEs: pes}
	d := &counter{live: pes}

	d.start(&res.Checkpoint)
	d.take(c.Ready())
	for pe := range pes {
		d.report("Staged", c.OnStaged(pe, job.InitialEpoch, 1))
		d.report("BuddyStored", c.OnBuddyStored((pe+1)%pes, job.InitialEpoch, pe, 0))
	}
	for pe := range pes {
		d.report("Committed", c.OnCommitted(pe, job.InitialEpoch))
	}
	d.stop()
	if !d.seen("Begin") {
		return res, fmt.Errorf("scale: the coordinator of %d PEs did not begin the job after its checkpoint", pes)
	}

	d.start(&res.Quiescence)
	probe, ok := firstEvent[job.Probe](c.Tick())
	if !ok {
		return res, fmt.Errorf("scale: no quiescence round")
	}
	d.phase.Out["Probe"] += pes
	for pe := range pes {
		// Busy: every PE sent and received one envelope more than the
		// round before (there is none), and PE 0's second is still in
		// flight, so the round completes, the job is not quiescent, and
		// the next round waits for a tick (a balanced round would start
		// the confirming one at once: job.Coordinator.OnIdle).
		sent := uint64(1)
		if pe == 0 {
			sent = 2
		}
		d.report("Idle", c.OnIdle(pe, job.IdleStatus{Round: probe.Round, Sent: sent, Received: 1}))
	}
	d.stop()

	d.start(&res.Recovery)
	d.fail(c.OnFailure(failed))
	rec, ok := d.last.(job.Recover)
	if !ok {
		return res, fmt.Errorf("scale: the coordinator answered the failure of PE %d with %T, not Recover", failed, d.last)
	}
	res.Relocated = len(rec.Relocations)
	for pe := range pes {
		if pe != failed {
			d.report("Restored", c.OnRestored(pe, rec.Generation, job.Progress{Step: 10, Offered: true}))
		}
	}
	live := c.Live()
	for pe := range pes {
		if live[pe] {
			d.report("BuddyStored", c.OnBuddyStored(migrate.Buddy(pe, live), 1, pe, rec.Generation))
		}
	}
	for pe := range pes {
		if pe != failed {
			d.report("Reached", c.OnReached(pe, rec.Generation, 10))
		}
	}
	d.stop()
	if !d.seen("ProgressRegained") {
		return res, fmt.Errorf("scale: the coordinator of %d PEs did not regain progress after the failure", pes)
	}
	return res, nil
}

// counter counts a coordinator's commands and the reports it takes.
type counter struct {
	live  int
	phase *Phase
	began time.Time
	spent time.Duration
	last  job.Event
	names map[string]bool
}

func (d *counter) start(p *Phase) {
	p.Out, p.In = map[string]int{}, map[string]int{}
	d.phase, d.spent, d.names = p, 0, map[string]bool{}
	d.began = time.Now()
}

func (d *counter) stop() { d.phase.Elapsed = time.Since(d.began) }

func (d *counter) seen(name string) bool { return d.names[name] }

func (d *counter) fail(cmds []job.Command) {
	d.live--
	d.take(cmds)
}

func (d *counter) report(name string, cmds []job.Command) {
	d.phase.In[name]++
	d.take(cmds)
}

func (d *counter) take(cmds []job.Command) {
	for _, cmd := range cmds {
		s, ok := cmd.(job.Send)
		if !ok {
			d.names[typeName(cmd)] = true
			continue
		}
		name := typeName(s.Event)
		d.names[name] = true
		d.last = s.Event
		if _, one := s.To.PE(); one {
			d.phase.Out[name]++
		} else {
			d.phase.Out[name] += d.live
		}
	}
}

func firstEvent[E job.Event](cmds []job.Command) (E, bool) {
	for _, cmd := range cmds {
		if s, ok := cmd.(job.Send); ok {
			if e, ok := s.Event.(E); ok {
				return e, true
			}
		}
	}
	var zero E
	return zero, false
}

func typeName(v any) string { return reflect.TypeOf(v).Name() }
