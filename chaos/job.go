package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gochare/gochare/internal/child"
)

// jobSpec is one job: `Exe Args...`, with the failures the campaign
// injects itself.
type jobSpec struct {
	Exe  string
	Args []string
	// Deadline: past it the job is a hang.
	Deadline time.Duration
	// Failures are injected by the campaign (see Failure); AtTime ones
	// are placed on RunTime, the failure-free job's time from the start of
	// its PEs to its end.
	Failures []Failure
	RunTime  time.Duration
	// Loggers is the number of loggers the job starts: failures at a
	// moment are placed once their process ids are known too.
	Loggers int
	// Dump: on a hang, ask the PEs and the launcher for goroutine dumps
	// (SIGQUIT) before killing them.
	Dump bool
}

// jobResult is what a job did.
type jobResult struct {
	Outcome
	Wall time.Duration
	// RunTime is the time from the launcher's "started PEs" line to the
	// end (0 when the line never came).
	RunTime    time.Duration
	PIDs       []int
	LoggerPIDs []int
	// Injected lists what the campaign did to the job, with times since
	// its start; Missed the campaign's failures that did not happen, and
	// why.
	Injected []string
	Missed   []string
	// SelfKills are the ranks that announced killing themselves (the
	// launcher's injected failures at a step).
	SelfKills []int
	// FailureNotices counts the launcher's "PE failed" lines until the
	// campaign began to stop the job (past its deadline, the PEs it ends
	// are announced too).
	FailureNotices int
	// LoggerFailureNotices counts the launcher's "logger failed; the job
	// goes on" lines, as FailureNotices.
	LoggerFailureNotices int
	// EarlyFailureNotices counts the launcher's lines for PEs that failed
	// before the job began (started again or left out).
	EarlyFailureNotices int
	// EarlyInjection: the campaign injected a failure before the
	// launcher announced that the job began (before its first
	// checkpoint).
	EarlyInjection bool
	// Interrupted: the campaign was interrupted during the job.
	Interrupted bool
	// Output is every line, in arrival order, stderr lines prefixed "! ".
	Output []string
}

// Delays of the stopping sequence of a job past its deadline or
// interrupted: the PEs have dumpGrace to print their goroutines before the
// launcher is asked for its own, then killGrace before everything is
// killed; after the launcher ended, its output has drainGrace to arrive.
const (
	dumpGrace  = 3 * time.Second
	killGrace  = 3 * time.Second
	drainGrace = 5 * time.Second
)

type outputLine struct {
	stderr bool
	text   string
}

// action is something the job runner does at a time: signal a PE, or a
// step of stopping the job.
type action struct {
	at   time.Time
	what string
	do   func()
}

// runJob runs spec and returns what happened. It returns an error only
// when the job could not be started.
func runJob(ctx context.Context, spec jobSpec) (jobResult, error) {
	var res jobResult
	outR, outW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("chaos: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return res, fmt.Errorf("chaos: %w", err)
	}
	cmd := exec.Command(spec.Exe, spec.Args...)
	cmd.Stdout, cmd.Stderr = outW, errW
	// Its own process group, so that a terminal's ^C reaches the campaign
	// only (which stops the job itself); and it dies with the campaign.
	cmd.SysProcAttr = child.Attr()
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return res, fmt.Errorf("chaos: start %s: %w", spec.Exe, err)
	}

	lines := make(chan outputLine, 256)
	readersDone := make(chan struct{}, 2)
	read := func(r io.Reader, stderr bool) {
		defer func() { readersDone <- struct{}{} }()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- outputLine{stderr: stderr, text: sc.Text()}
		}
	}
	go read(outR, false)
	go read(errR, true)
	exited := make(chan *os.ProcessState, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState
	}()

	j := &jobRun{spec: spec, cmd: cmd, start: start, res: &res}
	j.schedule(start.Add(spec.Deadline), "deadline", func() {
		res.TimedOut = true
		res.StderrAtDeadline = len(res.Stderr)
		j.stop(spec.Dump)
	})
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var state *os.ProcessState
	var drainTimeout <-chan time.Time
	readersLeft := 2
	ctxDone := ctx.Done()
	for readersLeft > 0 || state == nil {
		timer.Reset(j.nextIn())
		select {
		case l := <-lines:
			j.line(l)
		case <-readersDone:
			readersLeft--
		case st := <-exited:
			state = st
			exited = nil
			res.Wall = time.Since(start)
			if j.started != (time.Time{}) {
				res.RunTime = time.Since(j.started)
			}
			j.pending = nil
			drainTimeout = time.After(drainGrace)
		case <-drainTimeout:
			// Something else holds the pipes open: stop reading.
			outR.Close()
			errR.Close()
			drainTimeout = nil
		case <-ctxDone:
			ctxDone = nil
			res.Interrupted = true
			j.interrupt()
		case <-timer.C:
			j.runDue()
		}
	}
	outR.Close()
	errR.Close()
	res.ExitCode = state.ExitCode()
	for _, f := range j.pendingFailures() {
		why := "the job ended first"
		switch {
		case j.started.IsZero():
			why += " (the launcher's started PEs line never came)"
		case f.Trigger == AtTime && j.spec.Loggers > 0 && j.res.LoggerPIDs == nil:
			why += " (the launcher's started loggers line never came)"
		}
		res.Missed = append(res.Missed, fmt.Sprintf("%s: %s", f, why))
	}
	if res.Wall > 0 {
		j.endedFirst(start.Add(res.Wall))
	}
	return res, nil
}

type signalled struct {
	f  Failure
	at time.Time
}

// endGrace is how close to the launcher's exit a kill that no notice
// answered counts as coming after the job's end was decided.
const endGrace = time.Second

// endedFirst counts as missed the kills that the launcher announced in no
// way (no failure notice at all, no late-failure line) and that came
// within endGrace of its exit: the job's end was decided, and the PE was
// ending by itself or being stopped by the launcher, whose own stop
// takes the death as its own. A failure missed earlier in a job shows as
// a stall or a wrong result, not as a quiet right end.
func (j *jobRun) endedFirst(exited time.Time) {
	res := j.res
	// quiet: the launcher announced no failure of f's kind of process.
	quiet := func(f Failure) bool {
		if f.Logger {
			return res.LoggerFailureNotices == 0
		}
		return res.FailureNotices+res.EarlyFailureNotices == 0
	}
	// quietOf: the launcher announced no failure of f's process (a
	// failure of another PE, with its recovery, may have come just
	// before the job's end).
	quietOf := func(f Failure) bool {
		if f.Logger {
			return quiet(f)
		}
		return res.EarlyFailureNotices == 0 && !slices.Contains(j.announced, f.PE)
	}
	for _, g := range j.gone {
		// The process had ended and was reaped: it ended with the job
		// unless the launcher said it failed or went on well after.
		if quietOf(g.f) && exited.Sub(g.at) < endGrace {
			res.Missed = append(res.Missed, fmt.Sprintf("%s: the job ended first (its PE had exited, and the launcher %v after)", g.f, exited.Sub(g.at).Round(time.Millisecond)))
		} else {
			res.Missed = append(res.Missed, fmt.Sprintf("%s: the process is gone (reaped)", g.f))
		}
	}
	for _, s := range j.signalled {
		if !quiet(s.f) || exited.Sub(s.at) >= endGrace || slices.ContainsFunc(res.Missed, func(m string) bool { return strings.HasPrefix(m, s.f.String()+":") }) {
			continue
		}
		res.Missed = append(res.Missed, fmt.Sprintf("%s: the job ended first (the launcher exited %v after the kill and announced no failure)", s.f, exited.Sub(s.at).Round(time.Millisecond)))
	}
}

// jobRun is the state of a running job, owned by runJob's loop.
type jobRun struct {
	spec    jobSpec
	cmd     *exec.Cmd
	start   time.Time
	started time.Time // the "started PEs" line
	began   bool      // the "job begins" line came
	res     *jobResult
	pending []action
	// planned are the campaign's failures not yet scheduled or done.
	planned []Failure
	// signalled are the failures the campaign carried out, with when.
	signalled []signalled
	// gone are the failures not carried out because the PE's process had
	// ended and been reaped, with when: the job was ending, unless the
	// launcher went on well after (endedFirst).
	gone []signalled
	// announced are the PEs the launcher's failure notices named.
	announced []int
	stopping  bool
}

func (j *jobRun) schedule(at time.Time, what string, do func()) {
	j.pending = append(j.pending, action{at: at, what: what, do: do})
	slices.SortStableFunc(j.pending, func(a, b action) int { return a.at.Compare(b.at) })
}

func (j *jobRun) nextIn() time.Duration {
	if len(j.pending) == 0 {
		return time.Hour
	}
	return max(time.Until(j.pending[0].at), 0)
}

func (j *jobRun) runDue() {
	now := time.Now()
	for len(j.pending) > 0 && !j.pending[0].at.After(now) {
		a := j.pending[0]
		j.pending = j.pending[1:]
		a.do()
	}
}

// pendingFailures are the campaign's failures that never happened.
func (j *jobRun) pendingFailures() []Failure {
	if j.started.IsZero() {
		return j.spec.Failures
	}
	return j.planned
}

func (j *jobRun) note(format string, args ...any) {
	j.res.Injected = append(j.res.Injected, fmt.Sprintf("%.3f s: ", time.Since(j.start).Seconds())+fmt.Sprintf(format, args...))
}

func (j *jobRun) line(l outputLine) {
	if l.stderr {
		j.res.Stderr = append(j.res.Stderr, l.text)
		j.res.Output = append(j.res.Output, "! "+l.text)
	} else {
		j.res.Stdout = append(j.res.Stdout, l.text)
		j.res.Output = append(j.res.Output, l.text)
		return
	}
	if pids, ok := StartedPIDs(l.text); ok && j.started.IsZero() {
		j.started = time.Now()
		j.res.PIDs = pids
		j.planned = slices.Clone(j.spec.Failures)
		if j.spec.Loggers == 0 {
			j.scheduleTimed()
		}
		return
	}
	if pids, ok := LoggerPIDs(l.text); ok && j.res.LoggerPIDs == nil {
		j.res.LoggerPIDs = pids
		if !j.started.IsZero() {
			j.scheduleTimed()
		}
		return
	}
	if IsLoggerFailureNotice(l.text) && !j.stopping {
		j.res.LoggerFailureNotices++
		for _, f := range j.spec.Failures {
			if f.Trigger == AtLoggerFailure && j.res.LoggerFailureNotices == 1 {
				j.scheduleFailure(time.Now().Add(time.Duration(f.DelayMS)*time.Millisecond), f)
			}
		}
		return
	}
	if n, ok := LoggerKilledAtEnd(l.text); ok && !j.stopping {
		for _, f := range j.spec.Failures {
			if f.Logger && f.PE == n && f.Signal == SigStop && f.ResumeMS == 0 && !slices.Contains(j.planned, f) {
				j.res.Missed = append(j.res.Missed, fmt.Sprintf("%s: the job ended first (the launcher killed the stopped logger at the job's end)", f))
			}
		}
		return
	}
	// A logger's failure after the job's end, when none was announced
	// before (the launcher may also report so the exit of a logger it
	// declared dead and killed just before the end).
	if IsLateLoggerFailure(l.text) && !j.stopping && j.res.LoggerFailureNotices == 0 {
		for _, f := range j.spec.Failures {
			if f.Logger && !slices.Contains(j.planned, f) && !slices.ContainsFunc(j.res.Missed, func(m string) bool { return strings.HasPrefix(m, f.String()+":") }) {
				j.res.Missed = append(j.res.Missed, fmt.Sprintf("%s: the job ended first (the launcher says the logger failed after the job's end was decided)", f))
				break
			}
		}
		return
	}
	if IsJobBegin(l.text) {
		j.began = true
		return
	}
	if rank, ok := SelfKill(l.text); ok {
		j.res.SelfKills = append(j.res.SelfKills, rank)
		return
	}
	if rank, ok := LateFailure(l.text); ok && !j.stopping {
		for _, f := range j.spec.Failures {
			if f.PE == rank && !f.Logger && !slices.Contains(j.planned, f) && !slices.ContainsFunc(j.res.Missed, func(m string) bool { return strings.HasPrefix(m, f.String()+":") }) {
				j.res.Missed = append(j.res.Missed, fmt.Sprintf("%s: the job ended first (PE %d died after a task asked the job to exit)", f, rank))
				break
			}
		}
		return
	}
	if IsEarlyFailureNotice(l.text) && !j.stopping {
		j.res.EarlyFailureNotices++
		return
	}
	if IsFailureNotice(l.text) && !j.stopping {
		j.res.FailureNotices++
		if rank, ok := FailedPE(l.text); ok {
			j.announced = append(j.announced, rank)
		}
		for _, f := range j.spec.Failures {
			if f.Trigger == AtRecovery && f.Recovery == j.res.FailureNotices {
				j.scheduleFailure(time.Now().Add(time.Duration(f.DelayMS)*time.Millisecond), f)
			}
		}
	}
}

// scheduleTimed schedules the failures at a moment of the run, once the
// PEs' (and loggers') process ids are known, on the time the PEs were
// started.
func (j *jobRun) scheduleTimed() {
	for _, f := range j.spec.Failures {
		if f.Trigger == AtTime {
			at := j.started.Add(time.Duration(f.Fraction * float64(j.spec.RunTime)))
			j.scheduleFailure(at, f)
		}
	}
}

func (j *jobRun) scheduleFailure(at time.Time, f Failure) {
	j.schedule(at, f.String(), func() {
		if j.stopping {
			return
		}
		j.planned = slices.DeleteFunc(j.planned, func(g Failure) bool { return g == f })
		sig := syscall.SIGKILL
		if f.Signal == SigStop {
			sig = syscall.SIGSTOP
		}
		pid, err := j.signalProcess(f.Logger, f.PE, sig)
		if err != nil {
			if errors.Is(err, errReaped) {
				j.gone = append(j.gone, signalled{f, time.Now()})
				return
			}
			j.res.Missed = append(j.res.Missed, fmt.Sprintf("%s: %v", f, err))
			return
		}
		j.note("%s (pid %d)", f, pid)
		j.signalled = append(j.signalled, signalled{f, time.Now()})
		if !j.began {
			j.res.EarlyInjection = true
		}
		if f.Signal == SigStop && f.ResumeMS > 0 {
			j.schedule(time.Now().Add(time.Duration(f.ResumeMS)*time.Millisecond), "resume", func() {
				if _, err := j.signalProcess(f.Logger, f.PE, syscall.SIGCONT); err == nil {
					what := "pe"
					if f.Logger {
						what = "logger"
					}
					j.note("SIGCONT %s %d", what, f.PE)
				}
			})
		}
	})
}

// errNotOurs is returned for a PE or logger process that is no longer the
// launcher's child (it ended, and its pid may be another process's);
// errReaped for one the launcher has reaped (no such process now).
var (
	errNotOurs = errors.New("chaos: the process is gone")
	errReaped  = fmt.Errorf("%w: the launcher reaped it", errNotOurs)
)

// signalProcess sends sig to PE rank (or logger rank), after checking
// that its pid is still a child of this job's launcher (the launcher has
// not reaped it, so the pid names the process), and returns the pid.
func (j *jobRun) signalProcess(logger bool, rank int, sig syscall.Signal) (int, error) {
	pids, what := j.res.PIDs, "PE"
	if logger {
		pids, what = j.res.LoggerPIDs, "logger"
	}
	if rank < 0 || rank >= len(pids) {
		return 0, fmt.Errorf("chaos: no %s %d (the launcher listed %d)", what, rank, len(pids))
	}
	pid := pids[rank]
	state, ppid, err := procStat(pid)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		// ESRCH: read while the process was being reaped.
		return pid, fmt.Errorf("%w: pid %d", errReaped, pid)
	}
	if err != nil || ppid != j.cmd.Process.Pid {
		return pid, fmt.Errorf("%w: pid %d", errNotOurs, pid)
	}
	if state == "Z" || state == "X" {
		// Ended by itself and not yet reaped: a signal would succeed and
		// change nothing, and the launcher announces no failure.
		return pid, fmt.Errorf("%w: pid %d had exited: the job ended first", errNotOurs, pid)
	}
	return pid, syscall.Kill(pid, sig)
}

// procStat reads the state and the parent of process pid from /proc.
func procStat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("chaos: /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", 0, fmt.Errorf("chaos: /proc/%d/stat: %q", pid, s)
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err
}

// stop ends a job that overran its deadline: with dump, the PEs get
// SIGQUIT (and SIGCONT, so that a stopped one prints too) and the
// launcher SIGQUIT dumpGrace later, so their goroutines are on record;
// then everything gets SIGKILL.
func (j *jobRun) stop(dump bool) {
	if j.stopping {
		return
	}
	j.stopping = true
	j.pending = nil
	kill := func() {
		j.note("SIGKILL to the PEs and the launcher")
		j.signalAll(syscall.SIGKILL)
		j.cmd.Process.Signal(syscall.SIGKILL)
	}
	if !dump {
		kill()
		return
	}
	j.note("deadline: SIGQUIT to the PEs (goroutine dumps)")
	j.signalAll(syscall.SIGQUIT)
	j.signalAll(syscall.SIGCONT)
	j.schedule(time.Now().Add(dumpGrace), "dump launcher", func() {
		j.note("SIGQUIT to the launcher")
		j.cmd.Process.Signal(syscall.SIGQUIT)
		j.schedule(time.Now().Add(killGrace), "kill", kill)
	})
}

// interrupt stops a job when the campaign is interrupted: the launcher
// gets SIGINT and stops its PEs itself; what is left gets SIGKILL
// killGrace later.
func (j *jobRun) interrupt() {
	if j.stopping {
		return
	}
	j.stopping = true
	j.pending = nil
	j.signalAll(syscall.SIGCONT)
	j.cmd.Process.Signal(os.Interrupt)
	j.schedule(time.Now().Add(killGrace), "kill", func() {
		j.signalAll(syscall.SIGKILL)
		j.cmd.Process.Signal(syscall.SIGKILL)
	})
}

// signalAll signals the PEs and the loggers.
func (j *jobRun) signalAll(sig syscall.Signal) {
	for r := range j.res.PIDs {
		j.signalProcess(false, r, sig)
	}
	for l := range j.res.LoggerPIDs {
		j.signalProcess(true, l, sig)
	}
}
