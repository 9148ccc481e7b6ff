package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
	"github.com/gochare/gochare/scheduler/transport"
)

// simPE is one PE of the run: the real scheduler.PE, its real transport
// core, and what the simulated launcher knows of it.
type simPE struct {
	w    *world
	rank int
	pe   *scheduler.PE
	core *transport.Core
	// dead: killed (its process is gone); frozen: stopped, it runs
	// nothing and sends nothing until the launcher kills it; declared:
	// the launcher told the coordinator it failed.
	dead, frozen, declared bool
	faults                 []Fault
	struck                 []bool
	// counts counts the coordinator events the PE handled, by type.
	counts map[string]int
	// ctlRng draws the delays of the control connection and of the PE's
	// own posts; links[to] those of the frames to PE to.
	ctlRng *rand.Rand
	links  []*rand.Rand
	// slowCtl, if > 0, delays each command to this PE by up to that much
	// more (slowRng draws it): a PE descheduled on a loaded machine, while
	// the others, and the launcher's failure detection, move on.
	slowCtl time.Duration
	slowRng *rand.Rand
	// linkEpoch counts, per peer, the breaks of the connection to it: a
	// frame sent before a break is lost.
	linkEpoch []int
	// ctlLast and cmdLast are the arrival times of the last message on
	// the control connection each way (a TCP stream keeps order).
	ctlLast, cmdLast time.Duration
	// lastHeard is when the launcher last heard from the PE.
	lastHeard time.Duration
}

// strike makes fault f happen now, if the PE is still running.
func (p *simPE) strike(f Fault) {
	if p.dead || p.frozen {
		return
	}
	w := p.w
	if _, done := w.coord.Done(); done {
		return
	}
	w.note("FAULT: %v PE %d (events handled %v)", f.Kind, p.rank, p.counts)
	if f.Kind == Freeze {
		p.frozen = true
		return
	}
	p.kill()
	// The launcher notices the exit after a while.
	d := time.Millisecond + time.Duration(p.ctlRng.Int64N(int64(50*time.Millisecond)))
	w.at(d, fmt.Sprintf("launcher: PE %d exited", p.rank), p.declare)
}

func (p *simPE) kill() {
	if !p.dead {
		p.dead = true
		p.w.note("PE %d dies", p.rank)
	}
}

// declare tells the coordinator that the PE failed (once).
func (p *simPE) declare() {
	if p.declared {
		return
	}
	p.declared = true
	if p.w.eventLoggers != nil {
		// The loggers close its streams before any recovery asks them.
		p.w.eventLoggers.peFailed(p.rank)
	}
	p.w.perform(p.w.coord.OnFailure(p.rank))
}

func (p *simPE) faultAfter(name string) {
	p.counts[name]++
	for _, f := range p.faults {
		if f.AfterEvent == name && f.Nth == p.counts[name] {
			p.strike(f)
		}
	}
}

func (p *simPE) onStep(step uint64) {
	for _, f := range p.faults {
		if f.AtStep != 0 && step >= f.AtStep {
			p.strike(f)
		}
	}
}

func (p *simPE) running() bool { return !p.dead && !p.frozen }

// post carries a coordinator event to the PE over its control connection.
func (p *simPE) post(ev any) {
	if p.declared {
		return
	}
	w := p.w
	d := p.ctlDelay()
	if p.slowCtl > 0 {
		d += time.Duration(p.slowRng.Int64N(int64(p.slowCtl)))
	}
	arrive := max(w.now+d, p.cmdLast)
	p.cmdLast = arrive
	name := eventName(ev)
	what := fmt.Sprintf("launcher -> PE %d: %s %v", p.rank, name, ev)
	if dir := w.cfg.CheckpointDir; dir != "" {
		what = strings.ReplaceAll(what, dir, "$DIR") // differs between runs of a seed
	}
	w.at(arrive-w.now, what, func() {
		if !p.running() {
			return
		}
		p.pe.Event(ev)
		if _, ok := ev.(job.Event); ok {
			p.faultAfter(name)
		}
	})
}

func (p *simPE) ctlDelay() time.Duration {
	d := time.Duration(p.ctlRng.Int64N(int64(500 * time.Microsecond)))
	// One delivery in 250 finds its PE descheduled for up to 100 ms, as
	// on a loaded machine: the other PEs, and the launcher's failure
	// detection, move on meanwhile.
	if d < 2*time.Microsecond {
		d *= 50000
	}
	return 10*time.Microsecond + d
}

// report carries a report of the PE to the launcher over its control
// connection; the launcher ignores a PE it declared failed.
func (p *simPE) report(what string, handle func()) {
	if !p.running() {
		return
	}
	w := p.w
	arrive := max(w.now+p.ctlDelay(), p.ctlLast)
	p.ctlLast = arrive
	w.at(arrive-w.now, fmt.Sprintf("PE %d -> launcher: %s", p.rank, what), func() {
		if p.declared {
			return
		}
		p.lastHeard = w.now
		if handle != nil {
			handle()
		}
	})
}

func (p *simPE) heartbeat() {
	if !p.running() {
		return
	}
	p.report("heartbeat", nil)
	p.w.at(heartbeatEvery, fmt.Sprintf("tick heartbeat %d", p.rank), p.heartbeat)
}

func (p *simPE) tick() {
	if !p.running() {
		return
	}
	p.core.Tick()
	p.w.at(transportTick, fmt.Sprintf("tick transport %d", p.rank), p.tick)
}

// transmit puts a frame on the simulated network: it may be lost,
// duplicated, delayed, and so overtaken by later frames.
func (p *simPE) transmit(to int, f *transport.Frame) {
	if !p.running() {
		return
	}
	w, rng, net := p.w, p.links[to], &p.w.cfg.Net
	copies := 1
	if rng.Float64() < net.Loss {
		copies = 0
	} else if rng.Float64() < net.Dup {
		copies = 2
	}
	for range copies {
		c := &transport.Frame{From: f.From, Seq: f.Seq, Ack: f.Ack, ResendFrom: f.ResendFrom,
			Head: append([]byte(nil), f.Head...), Data: append([]byte(nil), f.Data...)}
		d := net.MinDelay + time.Duration(rng.Int64N(int64(net.MaxDelay-net.MinDelay)+1))
		if net.SlowEvery > 0 && rng.IntN(net.SlowEvery) == 0 {
			d += time.Duration(rng.Int64N(int64(20 * net.MaxDelay)))
		}
		dst, epoch := w.pes[to], p.linkEpoch[to]
		w.at(d, fmt.Sprintf("frame %d -> %d seq %d ack %d resend %d, %d bytes", p.rank, to, f.Seq, f.Ack, f.ResendFrom, len(f.Head)+len(f.Data)), func() {
			if !dst.running() || p.linkEpoch[to] != epoch {
				return
			}
			if err := dst.core.Receive(c); err != nil {
				w.note("PE %d transport: %v", to, err)
			}
		})
	}
}

func (p *simPE) deliver(from int, payload []byte) { p.pe.Receive(from, payload) }

// simNet is a PE's scheduler.Net: the real transport core over the
// simulated network.
type simNet simPE

func (n *simNet) Send(to int, payload []byte) {
	if (*simPE)(n).running() {
		n.core.Send(to, payload)
	}
}

func (n *simNet) Flush() {
	if (*simPE)(n).running() {
		n.core.Flush()
	}
}

func (n *simNet) Backlog() int { return n.core.Backlog() }

func (n *simNet) Forget(peer int) { n.core.Forget(peer) }

// Post runs the event on the PE a little later (the PE's own work).
func (n *simNet) Post(ev any) {
	p := (*simPE)(n)
	if !p.running() {
		return
	}
	d := time.Duration(p.ctlRng.Int64N(int64(20 * time.Microsecond)))
	p.w.at(d, fmt.Sprintf("PE %d: %s", p.rank, eventName(ev)), func() {
		if p.running() {
			p.pe.Event(ev)
		}
	})
}

// simControl is a PE's scheduler.Control: its reports reach the
// coordinator over the simulated control connection.
type simControl simPE

func (c *simControl) p() *simPE            { return (*simPE)(c) }
func (c *simControl) wd() *world           { return c.p().w }
func (c *simControl) co() *job.Coordinator { return c.p().w.coord }

func (c *simControl) Output(task, seq uint64, line string) {
	what := "output " + line
	if timing.MatchString(line) {
		what = "output (a time)" // differs between runs of a seed
	}
	c.p().report(what, func() {
		if w := c.wd(); w.printed.Admit(task, seq) {
			w.res.Output = append(w.res.Output, line)
		}
	})
}

func (c *simControl) Exit(status int) {
	c.p().report(fmt.Sprintf("exit %d", status), func() { c.wd().perform(c.co().OnExit(c.rank, status)) })
}

func (c *simControl) Idle(st job.IdleStatus) {
	c.p().report(fmt.Sprintf("idle %+v", st), func() { c.wd().perform(c.co().OnIdle(c.rank, st)) })
}

func (c *simControl) RequestQuiescence() {
	c.p().report("request quiescence", func() { c.co().OnQuiescenceRequest(c.rank) })
}

func (c *simControl) CheckpointStaged(epoch uint64, tasks, bytes int) {
	c.p().report(fmt.Sprintf("staged %d", epoch), func() { c.wd().perform(c.co().OnStaged(c.rank, epoch, bytes)) })
}

func (c *simControl) BuddyStored(epoch uint64, ward int, generation uint64) {
	c.p().report(fmt.Sprintf("buddy stored %d of PE %d gen %d", epoch, ward, generation), func() {
		c.wd().perform(c.co().OnBuddyStored(c.rank, epoch, ward, generation))
	})
}

func (c *simControl) Committed(epoch uint64) {
	// Committed is reported right after the PE committed and its protocol
	// dropped what the checkpoint made unneeded: its logs hold nothing.
	if ps := c.pe.Stats().Protocol; c.p().running() && (ps.LogBytes != 0 || ps.LoggedMessages != 0 || ps.StoredDeterminants != 0) {
		w := c.wd()
		w.res.LogLeaks = append(w.res.LogLeaks, fmt.Sprintf("PE %d after committing checkpoint %d at %v: %d logged messages (%d bytes), %d determinants",
			c.rank, epoch, w.now, ps.LoggedMessages, ps.LogBytes, ps.StoredDeterminants))
	}
	c.p().report(fmt.Sprintf("committed %d", epoch), func() { c.wd().perform(c.co().OnCommitted(c.rank, epoch)) })
}

func (c *simControl) DiskWritten(epoch uint64, entry migrate.FileEntry, err error) {
	c.p().report(fmt.Sprintf("disk written %d err %v", epoch, err), func() {
		c.wd().perform(c.co().OnDiskWritten(c.rank, epoch, entry, err))
	})
}

func (c *simControl) Restored(generation uint64, tasks int, before job.Progress) {
	c.p().report(fmt.Sprintf("restored gen %d tasks %d", generation, tasks), func() {
		c.wd().perform(c.co().OnRestored(c.rank, generation, before))
	})
}

func (c *simControl) Reached(generation, step uint64) {
	c.p().report(fmt.Sprintf("reached gen %d step %d", generation, step), func() {
		c.wd().perform(c.co().OnReached(c.rank, generation, step))
	})
}

func (c *simControl) Fail(err error) {
	c.p().report(fmt.Sprintf("fail %v", err), func() { c.wd().perform(c.co().OnError(c.rank, err)) })
}

// Loads reports the loads of the PE's sync tasks: the simulator has no
// CPU time, so each load is drawn from the run's seed.
func (c *simControl) Loads(loads []migrate.TaskLoad) {
	c.p().report(fmt.Sprintf("loads of %d tasks", len(loads)), func() {
		for i := range loads {
			loads[i].Load = c.wd().loads.Float64()
		}
		c.wd().perform(c.co().OnLoads(c.rank, loads))
	})
}

func (c *simControl) Migrated() {
	c.p().report("migrated", func() { c.wd().perform(c.co().OnMigrated(c.rank)) })
}

func (c *simControl) Progress(delivered uint64) {
	c.p().report(fmt.Sprintf("progress %d", delivered), func() { c.co().OnProgress(c.rank, delivered) })
}

func (c *simControl) Diagnosis(report string) {
	c.p().report("diagnosis "+report, func() { c.wd().perform(c.co().OnDiagnosis(c.rank, report)) })
}
