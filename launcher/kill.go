package launcher

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
)

// trigger is what makes an injected failure fire.
type trigger uint8

const (
	// atStep: a task of the PE offers a sync point at step N or later.
	atStep trigger = iota + 1
	// afterTime: After has passed since the job began.
	afterTime
	// atRecovery: the coordinator starts recovery N (it just sent Recover
	// or Rollback of generation N).
	atRecovery
	// atCheckpoint: the coordinator starts checkpoint epoch N (it just
	// sent TakeCheckpoint); epoch 1 is the checkpoint of the tasks as
	// created.
	atCheckpoint
	// atSetup: every PE has joined and got its setup, before the job
	// begins.
	atSetup
)

// kill is a failure the launcher injects: PE Rank gets Signal (SIGKILL, or
// SIGSTOP to leave a hung PE for the heartbeats to find) when its trigger
// fires.
type kill struct {
	Rank    int
	Trigger trigger
	// N is the step, recovery or epoch of the trigger; After its time.
	N      uint64
	After  time.Duration
	Signal syscall.Signal
	// fired: the signal was sent; missed: why it was not when due.
	fired  bool
	missed string
}

// String is the kill in --kill syntax.
func (k kill) String() string {
	var s string
	switch k.Trigger {
	case atStep:
		s = fmt.Sprintf("pe=%d,at=step:%d", k.Rank, k.N)
	case afterTime:
		s = fmt.Sprintf("pe=%d,after=%v", k.Rank, k.After)
	case atRecovery:
		s = fmt.Sprintf("pe=%d,at=recovery:%d", k.Rank, k.N)
	case atCheckpoint:
		s = fmt.Sprintf("pe=%d,at=checkpoint:%d", k.Rank, k.N)
	case atSetup:
		s = fmt.Sprintf("pe=%d,at=setup", k.Rank)
	}
	if k.Signal == syscall.SIGSTOP {
		s += ",signal=STOP"
	}
	return s
}

// signalName is the name InjectFailure carries.
func signalName(s syscall.Signal) string {
	if s == syscall.SIGSTOP {
		return "STOP"
	}
	return "KILL"
}

// killLimits is what a --kill is checked against: a kill that can never
// fire is refused before any PE starts.
type killLimits struct {
	PEs int
	// App is the application's name, for messages.
	App string
	// LastStep is the highest step the application's tasks offer, when
	// KnowLastStep (actor.App.LastStep).
	LastStep     uint64
	KnowLastStep bool
	// CheckpointEvery is the sync period: --checkpoint-every, or the
	// default policy's (LogLimit: the sync points checkpoint only once a
	// sender log is large enough, so lastEpoch is a bound).
	CheckpointEvery uint64
	LogLimit        bool
}

// lastEpoch is the highest checkpoint epoch a job can take: the initial
// checkpoint, then one at every CheckpointEvery-th step up to the last
// (with LogLimit, at most).
func (l killLimits) lastEpoch() (uint64, bool) {
	if l.CheckpointEvery == 0 {
		return 1, true
	}
	if !l.KnowLastStep {
		return 0, false
	}
	return 1 + (l.LastStep+1)/l.CheckpointEvery, true
}

// parseKill reads a --kill value (see the usage text):
//
//	pe=R,at=step:S        when a task of PE R offers a sync point at step S
//	pe=R,after=D          D after the job began (or resumed, after --restart)
//	pe=R,at=recovery:N    as soon as the coordinator starts recovery N
//	pe=R,at=checkpoint:E  as soon as the coordinator starts checkpoint E
//	random[,seed=N]       a random PE at a random step from 1 to the last
//
// each optionally followed by ",signal=STOP" (SIGSTOP instead of SIGKILL).
// A random kill is drawn from seed unless the value gives one; note
// reports the choice and the seed, so the run can be repeated. A kill
// that can never fire is an error wrapping errUsage.
func parseKill(v string, lim killLimits, seed uint64) (k kill, note string, err error) {
	bad := func(format string, args ...any) (kill, string, error) {
		return kill{}, "", fmt.Errorf("%w: --kill %q: %s", errUsage, v, fmt.Sprintf(format, args...))
	}
	never := func(format string, args ...any) (kill, string, error) {
		return kill{}, "", fmt.Errorf("%w: --kill %q can never fire: %s", errUsage, v, fmt.Sprintf(format, args...))
	}
	k = kill{Rank: -1, Signal: syscall.SIGKILL}
	fields := strings.Split(v, ",")
	random := fields[0] == "random"
	if random {
		fields = fields[1:]
	}
	seen := map[string]bool{}
	for _, f := range fields {
		name, val, ok := strings.Cut(f, "=")
		if !ok {
			return bad("want name=value fields, got %q", f)
		}
		if seen[name] {
			return bad("%s given twice", name)
		}
		seen[name] = true
		switch {
		case name == "signal":
			switch strings.TrimPrefix(strings.ToUpper(val), "SIG") {
			case "KILL":
				k.Signal = syscall.SIGKILL
			case "STOP":
				k.Signal = syscall.SIGSTOP
			default:
				return bad("signal must be KILL or STOP")
			}
		case random && name == "seed":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return bad("bad seed %q", val)
			}
			seed = n
		case random:
			return bad("random takes seed= and signal= only, not %s=", name)
		case name == "pe":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n >= lim.PEs {
				return bad("pe must be 0..%d (the job has %d PEs)", lim.PEs-1, lim.PEs)
			}
			k.Rank = n
		case name == "after" || name == "at":
			if k.Trigger != 0 {
				return bad("one trigger per kill (after= or at=)")
			}
			if name == "after" {
				d, err := time.ParseDuration(val)
				if err != nil || d < 0 {
					return bad("bad duration %q", val)
				}
				k.Trigger, k.After = afterTime, d
				continue
			}
			if val == "setup" {
				k.Trigger = atSetup
				continue
			}
			what, num, _ := strings.Cut(val, ":")
			n, err := strconv.ParseUint(num, 10, 64)
			trig := map[string]trigger{"step": atStep, "recovery": atRecovery, "checkpoint": atCheckpoint}[what]
			if trig == 0 || err != nil {
				return bad("want at=step:N, at=recovery:N, at=checkpoint:N or at=setup")
			}
			k.Trigger, k.N = trig, n
		default:
			return bad("unknown field %q", name)
		}
	}
	if random {
		if lim.PEs < 2 {
			return bad("random needs at least 2 PEs (a job cannot recover from losing its only PE)")
		}
		again := fmt.Sprintf("random,seed=%d", seed)
		if k.Signal == syscall.SIGSTOP {
			again += ",signal=STOP"
		}
		r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		k.Rank = r.IntN(lim.PEs)
		if lim.KnowLastStep && lim.LastStep >= 1 {
			k.Trigger, k.N = atStep, 1+r.Uint64N(lim.LastStep)
			return k, fmt.Sprintf("--kill %s chose %v (any PE, any step from 1 to %d)", again, k, lim.LastStep), nil
		}
		k.Trigger, k.After = afterTime, 500*time.Millisecond+time.Duration(r.Int64N(int64(1500*time.Millisecond)))
		return k, fmt.Sprintf("--kill %s chose %v (%s does not tell its last step for these arguments: a time-based kill, 0.5 to 2 s after the job began)", again, k, lim.App), nil
	}
	if k.Rank < 0 {
		return bad("which PE? give pe=R")
	}
	switch k.Trigger {
	case 0:
		return bad("give after=DURATION or at=step:N, at=recovery:N, at=checkpoint:N")
	case atStep:
		if k.N == 0 {
			return never("the earliest step a kill can use is 1")
		}
		if lim.KnowLastStep && k.N > lim.LastStep {
			return never("%s with these arguments offers steps up to %d", lim.App, lim.LastStep)
		}
	case atRecovery:
		if k.N == 0 {
			return never("recoveries count from 1")
		}
		if k.N > uint64(lim.PEs-1) {
			return never("a job of %d PEs has at most %d recoveries (one PE must survive)", lim.PEs, lim.PEs-1)
		}
	case atCheckpoint:
		if k.N == 0 {
			return never("checkpoint epochs count from 1 (the checkpoint of the tasks as created)")
		}
		if last, ok := lim.lastEpoch(); ok && k.N > last {
			if lim.LogLimit {
				return never("this job takes checkpoints 1 to %d at most (a sync point every %d steps, which checkpoints once a sender log holds --log-limit)", last, lim.CheckpointEvery)
			}
			return never("this job takes checkpoints 1 to %d (--checkpoint-every %d)", last, lim.CheckpointEvery)
		}
	}
	return k, "", nil
}

// killAtStep is the step at which PE rank's first step kill is due (0:
// none). Only the earliest can fire: the PE is dead after it.
func killAtStep(kills []kill, rank int) uint64 {
	var at uint64
	for _, k := range kills {
		if k.Rank == rank && k.Trigger == atStep && (at == 0 || k.N < at) {
			at = k.N
		}
	}
	return at
}

// fire injects failure k now, if its PE is still alive.
func (c *coordinator) fire(k *kill, began time.Time) {
	p := c.peers[k.Rank]
	if p == nil || p.gone {
		k.missed = fmt.Sprintf("PE %d had already failed when it came due", k.Rank)
		c.cfg.Log.Warn("injected failure not fired", "kill", k.String(), "reason", k.missed)
		return
	}
	if c.core == nil {
		p.doomed = true
	}
	attrs := []any{"pe", k.Rank, "kill", k.String(), "signal", "SIG" + signalName(k.Signal)}
	if !began.IsZero() {
		attrs = append(attrs, "after_begin_ms", time.Since(began).Milliseconds())
	}
	if c.cfg.Spawned[k.Rank] && c.killProcess != nil {
		pid, err := c.killProcess(k.Rank, k.Signal)
		if err != nil {
			// Its end is not reported yet.
			k.missed = fmt.Sprintf("PE %d could not be signalled: %v", k.Rank, err)
			c.cfg.Log.Warn("injected failure not fired", "kill", k.String(), "reason", k.missed)
			return
		}
		k.fired = true
		c.cfg.Log.Info("injected failure", append(attrs, "pid", pid)...)
		return
	}
	// A PE the launcher did not start signals itself.
	k.fired = true
	p.send(&controlpb.ToPE{Msg: &controlpb.ToPE_InjectFailure{InjectFailure: &controlpb.InjectFailure{Signal: signalName(k.Signal)}}})
	c.cfg.Log.Info("injected failure", append(attrs, "by", "the PE itself")...)
}

// fireWhere fires every pending kill that match selects.
func (c *coordinator) fireWhere(began time.Time, match func(k *kill) bool) {
	for i := range c.cfg.Kills {
		k := &c.cfg.Kills[i]
		if !k.fired && k.missed == "" && match(k) {
			c.fire(k, began)
		}
	}
}

// killDue fires the time-based kills whose time has come.
func (c *coordinator) killDue(now, began time.Time) {
	if began.IsZero() {
		return
	}
	c.fireWhere(began, func(k *kill) bool { return k.Trigger == afterTime && now.Sub(began) >= k.After })
}

// onKillDue takes a PE's report that one of its tasks offered step, at
// or past its kill step: the PE waits to be killed.
func (c *coordinator) onKillDue(rank int, step uint64, began time.Time) {
	var due *kill
	for i := range c.cfg.Kills {
		k := &c.cfg.Kills[i]
		if k.Rank == rank && k.Trigger == atStep && !k.fired && k.missed == "" && k.N <= step && (due == nil || k.N < due.N) {
			due = k
		}
	}
	if due == nil {
		// Not asked for: the PE stopped working all the same, so it must
		// not stay.
		c.cfg.Log.Error("PE reports a kill due that was not asked for; killing it", "pe", rank, "step", step)
		due = &kill{Rank: rank, Trigger: atStep, N: step, Signal: syscall.SIGKILL}
	}
	c.cfg.Log.Info("kill due: a task reached its step", "pe", rank, "kill", due.String(), "step", step)
	c.fire(due, began)
}

// reportUnfiredKills warns, at the end of the job, of every kill that did
// not fire.
func (c *coordinator) reportUnfiredKills() {
	for _, k := range c.cfg.Kills {
		if k.fired {
			continue
		}
		why := k.missed
		if why == "" {
			if p := c.peers[k.Rank]; p != nil && p.gone {
				why = fmt.Sprintf("PE %d had already failed", k.Rank)
			} else {
				why = "the job ended before it was due"
			}
		}
		c.cfg.Log.Warn("injected failure did not fire", "kill", k.String(), "reason", why)
	}
}
