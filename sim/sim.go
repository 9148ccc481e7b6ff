package sim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"

	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
	"github.com/gochare/gochare/scheduler/transport"
)

// Config is one simulated run.
type Config struct {
	Seed     uint64
	App      actor.App
	Args     []string
	PEs      int
	Protocol logging.Kind
	// CheckpointEvery is the sync period in steps (0: none); Balancer the
	// load balancer run at sync points ("": none).
	CheckpointEvery uint64
	Balancer        string
	// LogLimit, if > 0, makes the sync points optional, as the launcher's
	// default policy does (job.Config.LogLimit): one checkpoints (and
	// balances) only once a PE's sender log holds LogLimit bytes, and
	// the tasks pass the others without a checkpoint.
	LogLimit int
	// CheckpointDir, if set, receives every committed checkpoint, and a
	// failure that loses both in-memory copies falls back to it.
	CheckpointDir string
	// Disk, if CheckpointDir is empty, writes the checkpoints to a
	// temporary directory, removed after the run.
	Disk   bool
	Net    NetConfig
	Faults []Fault
	// Loggers is the number of logger processes of the job
	// (job.Config.Loggers); Dumping says the PEs dump log entries to them
	// (job.Config.Dumping: the coordinator then reckons a dead logger's
	// entries lost); the PEs dump only with LogQuota. LoggerFaults are
	// the loggers' deaths, as the launcher detects them.
	Loggers      int
	Dumping      bool
	LoggerFaults []LoggerFault
	// EventLogger (with Loggers) makes the loggers event loggers for the
	// protocol's records (simulated in eventlog.go), with links that
	// delay as EventLoggerLink says.
	EventLogger     bool
	EventLoggerLink LoggerLink
	// Failures is the protocols' f, the same on every PE and the
	// coordinator (gochare run --failures; 0: logging.DefaultFailures).
	Failures int
	// LogQuota, if above 0 (with Loggers), bounds each PE's sender log:
	// the PEs dump to simulated loggers (loggers.go), and Dumping is set.
	LogQuota int
	// TimeLimit is the simulated time after which a run that has not
	// ended is a hang (default 10 minutes).
	TimeLimit time.Duration
	// Trace, if set, receives a line for every event of the run.
	Trace io.Writer
	// OrderDependentStates says that the program's final task states
	// depend on the order of its order-dependent receptions, which two
	// failure-free runs may take differently: Check does not compare
	// them with the failure-free run's. The generated programs of
	// sim/gen are such (a grid task folds its tickets into a trace in
	// the order they come); their own audit checks that part, and the
	// digest they print, which Check compares, the rest of their states.
	OrderDependentStates bool
	// tamper, if set, is a test's fault in what the PEs tell of their
	// tasks (see histories.tamper), to show that the checks of the
	// tasks' histories catch it.
	tamper func(rank int, o *scheduler.Observation) int
}

// NetConfig is the simulated network between PEs and between PEs and the
// launcher.
type NetConfig struct {
	// A frame takes MinDelay to MaxDelay (uniform); one in SlowEvery (if
	// not 0) takes up to 20 times MaxDelay.
	MinDelay, MaxDelay time.Duration
	SlowEvery          int
	// Loss and Dup are the probabilities that a frame is lost or
	// arrives twice.
	Loss, Dup float64
	// Flaps is the number of times, in the first second, that the
	// connection between two PEs breaks: the frames in flight on it are
	// lost and both transport cores are told (PeerLost).
	Flaps int
}

// FaultKind is what happens to a PE.
type FaultKind uint8

const (
	// Crash kills the PE as SIGKILL does; the launcher notices its exit
	// after a random delay.
	Crash FaultKind = iota
	// Freeze stops the PE (it answers nothing, sends no heartbeat): the
	// launcher notices the missed heartbeats and kills it.
	Freeze
)

func (k FaultKind) String() string {
	if k == Freeze {
		return "freeze"
	}
	return "crash"
}

// Fault is one fault of a run. It strikes PE at time At, or, if
// AfterEvent is set, right after the PE handled the Nth coordinator event
// of that type (e.g. "TakeCheckpoint"), or, if AtStep is set, when one of
// its tasks offers a sync point at that step or later; whichever comes
// first.
type Fault struct {
	PE         int
	Kind       FaultKind
	At         time.Duration
	AfterEvent string
	Nth        int
	AtStep     uint64
}

// LoggerFault is the death of logger Logger, detected by the launcher at
// time At.
type LoggerFault struct {
	Logger int
	At     time.Duration
}

func (f LoggerFault) String() string { return fmt.Sprintf("logger %d dies at %v", f.Logger, f.At) }

func (f Fault) String() string {
	s := fmt.Sprintf("%v PE %d at %v", f.Kind, f.PE, f.At)
	if f.AfterEvent != "" {
		s += fmt.Sprintf(" or after %s #%d", f.AfterEvent, f.Nth)
	}
	if f.AtStep != 0 {
		s += fmt.Sprintf(" or at step %d", f.AtStep)
	}
	return s
}

// Result is the outcome of a run.
type Result struct {
	Status int
	Err    error
	Output []string
	// Stats are the PEs' counters at the end (zero for a dead PE); Dead
	// marks the PEs that died.
	Stats []scheduler.Stats
	Dead  []bool
	// Transport sums the transport cores' counters.
	Transport transport.Stats
	// End is the simulated time at which the run ended; Steps the events
	// it ran; Digest a hash of them (equal for two runs of one seed).
	End    time.Duration
	Steps  uint64
	Digest uint64
	// Hung says the run reached the time limit or ran out of events.
	Hung bool
	// Recoveries counts the recoveries that regained the progress lost.
	Recoveries int
	// LogLeaks lists the commits after which a PE's protocol still held
	// logs or determinants.
	LogLeaks []string
	// States are the final states of the tasks on the live PEs, by task:
	// each task's own state and the runtime's state of it (see
	// scheduler.PE.PackTasks).
	States map[migrate.TaskRef][]byte
	// Misplaced lists what contradicts the tasks' places: a task on two
	// live PEs at the end, a task set from a record no PE made, a task
	// acting on a PE it is not on.
	Misplaced []string
	// Deeds counts, for each task on a live PE at the end, the sends
	// and handlings of its final history (what its final state
	// reflects): a task behind the failure-free run's has fewer.
	Deeds map[migrate.TaskRef]Deeds
	// HandledTwice lists the messages a task's final history handled
	// twice; Orphans those it handled that the sender's final history
	// did not send, or sent with other contents (see histories.final).
	HandledTwice []string
	Orphans      []Orphan
	// Observed counts the sends and handlings the PEs told of.
	Observed int
	// Outcome is set by the caller of Check.
	Outcome Outcome
	// Notes are the coordinator's notes.
	Notes []string
	// LoggersDead counts the loggers that died before the job ended.
	LoggersDead int
}

// Timing of the simulated launcher and transport.
const (
	transportTick    = 5 * time.Millisecond
	resendTicks      = 20
	coordinatorTick  = 2 * time.Millisecond
	heartbeatEvery   = 100 * time.Millisecond
	heartbeatTimeout = 1 * time.Second
	stallTimeout     = 60 * time.Second
	// maxSteps bounds the events of one run, as TimeLimit bounds its
	// simulated time.
	maxSteps = 20_000_000
)

// ErrConfig reports a Config the simulator cannot run.
var ErrConfig = errors.New("sim: bad config")

// Run runs one job under the simulator.
func Run(cfg Config) (Result, error) {
	if cfg.PEs < 1 {
		return Result{}, fmt.Errorf("%w: %d PEs", ErrConfig, cfg.PEs)
	}
	if cfg.TimeLimit <= 0 {
		cfg.TimeLimit = 10 * time.Minute
	}
	if cfg.Net.MaxDelay <= 0 {
		cfg.Net.MinDelay, cfg.Net.MaxDelay = 20*time.Microsecond, time.Millisecond
	}
	if cfg.Disk && cfg.CheckpointDir == "" {
		dir, err := os.MkdirTemp("", "gochare-sim-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(dir)
		cfg.CheckpointDir = dir
	}
	jb, err := scheduler.Define(cfg.App, cfg.Args)
	if err != nil {
		return Result{}, err
	}
	w := &world{cfg: cfg, clock: newClock(cfg.Trace), loads: newRand(cfg.Seed, 1), hist: newHistories(cfg.PEs, cfg.tamper)}
	mt := jb.MainTarget()
	w.main = migrate.TaskRef{Collection: int(mt.Collection), Lin: jb.Collections()[mt.Collection].Shape.Linear(mt.Index)}
	w.coord = job.NewCoordinator(job.Config{Size: cfg.PEs, Protocol: cfg.Protocol, Layout: scheduler.Layout(jb, cfg.PEs),
		Balancer: cfg.Balancer, CheckpointDir: cfg.CheckpointDir, LogLimit: cfg.LogLimit, SyncEvery: cfg.CheckpointEvery, Loggers: cfg.Loggers, Dumping: cfg.Dumping,
		EventLogger: cfg.EventLogger, Failures: cfg.Failures})
	w.pes = make([]*simPE, cfg.PEs)
	if cfg.LogQuota > 0 {
		w.loggers = newSimLoggers(w)
	}
	if cfg.EventLogger {
		w.eventLoggers = newSimEventLoggers(w)
	}
	for r := range w.pes {
		p := &simPE{w: w, rank: r, counts: map[string]int{}, ctlRng: newRand(cfg.Seed, 2, r), links: make([]*rand.Rand, cfg.PEs),
			linkEpoch: make([]int, cfg.PEs)}
		for to := range p.links {
			p.links[to] = newRand(cfg.Seed, 3, r, to)
		}
		if slow := newRand(cfg.Seed, 9, r); slow.IntN(8) == 0 {
			p.slowCtl, p.slowRng = time.Millisecond+time.Duration(slow.Int64N(int64(30*time.Millisecond))), slow
			w.note("PE %d is slow: each command reaches it up to %v late", r, p.slowCtl)
		}
		for _, f := range cfg.Faults {
			if f.PE == r {
				p.faults = append(p.faults, f)
			}
		}
		p.core, err = transport.NewCore(transport.CoreConfig{Rank: r, Size: cfg.PEs, ResendTicks: resendTicks}, p.transmit, p.deliver)
		if err != nil {
			return Result{}, err
		}
		var dumps scheduler.DumpSink
		if w.loggers != nil {
			dumps = simDumps{s: w.loggers, p: p}
		}
		var eventLog scheduler.EventLogSink
		if w.eventLoggers != nil {
			eventLog = simEventLog{s: w.eventLoggers, p: p}
		}
		pe, err := scheduler.New(scheduler.Config{
			LogQuota: cfg.LogQuota, Loggers: cfg.Loggers, Dumps: dumps, EventLogger: cfg.EventLogger, EventLog: eventLog, Failures: cfg.Failures,
			Rank: r, Size: cfg.PEs, JobID: 1, App: cfg.App, Args: cfg.Args, Protocol: cfg.Protocol,
			CheckpointEvery: cfg.CheckpointEvery, Net: (*simNet)(p), Control: (*simControl)(p),
			OnStep:  p.onStep,
			Observe: func(o scheduler.Observation) { w.hist.observe(r, o) },
		})
		if err != nil {
			return Result{}, err
		}
		p.pe = pe
		w.pes[r] = p
	}
	return w.run(), nil
}

// world is one run: the PEs, the launcher's side and the clock.
type world struct {
	cfg Config
	*clock
	pes   []*simPE
	coord *job.Coordinator
	// printed writes each line of output once, as the launcher does.
	printed job.OutputFilter
	// loads draws the handler loads the PEs report (the simulator's
	// clock has no CPU time of its own).
	loads *rand.Rand
	// hist follows the tasks' histories; main is the job's main task.
	hist *histories
	main migrate.TaskRef
	// pending are the coordinator's commands not yet carried out.
	pending    []job.Command
	performing bool
	res        Result
	// loggers hold the PEs' dumps (nil without Config.LogQuota), and
	// eventLoggers their records (nil without Config.EventLogger).
	loggers      *simLoggers
	eventLoggers *simEventLoggers
}

func (w *world) run() Result {
	w.res.Dead = make([]bool, len(w.pes))
	for _, p := range w.pes {
		p.lastHeard = 0
		for _, f := range p.faults {
			if f.At > 0 {
				w.at(f.At, fmt.Sprintf("fault %v", f), func() { p.strike(f) })
			}
		}
		// The transport ticks and heartbeats of PEs start at random
		// phases.
		phase := time.Duration(p.ctlRng.Int64N(int64(transportTick)))
		w.at(phase, fmt.Sprintf("tick transport %d", p.rank), p.tick)
		w.at(phase, fmt.Sprintf("tick heartbeat %d", p.rank), p.heartbeat)
	}
	for _, f := range w.cfg.LoggerFaults {
		w.at(f.At, f.String(), func() {
			if _, done := w.coord.Done(); !done {
				w.res.LoggersDead++
				if w.loggers != nil {
					w.loggers.kill(f.Logger)
				}
				if w.eventLoggers != nil {
					w.eventLoggers.kill(f.Logger)
				}
				w.perform(w.coord.OnLoggerFailure(f.Logger))
			}
		})
	}
	flaps := newRand(w.cfg.Seed, 4)
	for range w.cfg.Net.Flaps {
		a, b := flaps.IntN(len(w.pes)), flaps.IntN(len(w.pes))
		if a == b {
			continue
		}
		w.at(time.Duration(flaps.Int64N(int64(time.Second))), fmt.Sprintf("connection %d-%d breaks", a, b), func() { w.flap(a, b) })
	}
	w.at(coordinatorTick, "tick coordinator", w.tick)
	w.at(stallTimeout/job.StallChecks, "tick stall", w.checkStall)
	w.perform(w.coord.Ready())
	for {
		for _, n := range w.coord.Notes() {
			w.note("coordinator: %s", n)
			w.res.Notes = append(w.res.Notes, n)
		}
		if out, done := w.coord.Done(); done {
			w.res.Status, w.res.Err = out.Status, out.Err
			break
		}
		if w.now > w.cfg.TimeLimit || w.steps > maxSteps || !w.step() {
			w.res.Hung = true
			w.res.Err = fmt.Errorf("sim: the job did not end by %v (%d events)", w.now, w.steps)
			break
		}
	}
	for r, p := range w.pes {
		w.res.Dead[r] = p.dead
		ts := p.core.Stats()
		addTransport(&w.res.Transport, ts)
		if p.dead {
			w.res.Stats = append(w.res.Stats, scheduler.Stats{})
			continue
		}
		w.res.Stats = append(w.res.Stats, p.pe.Stats())
	}
	w.res.End, w.res.Steps, w.res.Digest = w.now, w.steps, w.sum()
	w.finalStates()
	return w.res
}

// finalStates reads the final states of the tasks on the live PEs and
// checks the final histories of the tasks.
func (w *world) finalStates() {
	w.res.States = map[migrate.TaskRef][]byte{}
	final := make([][]uint64, len(w.pes))
	for r, p := range w.pes {
		if p.dead {
			continue
		}
		recs, err := p.pe.PackTasks()
		if err != nil {
			w.res.Misplaced = append(w.res.Misplaced, fmt.Sprintf("PE %d: %v", r, err))
			continue
		}
		final[r] = make([]uint64, 0, len(recs))
		for _, rec := range recs {
			ref := rec.Ref()
			if _, ok := w.res.States[ref]; ok {
				w.res.Misplaced = append(w.res.Misplaced, fmt.Sprintf("task %d[%d] is on two PEs at the end, one of them PE %d", ref.Collection, ref.Lin, r))
			}
			state := append(rec.Task[:len(rec.Task):len(rec.Task)], rec.Runtime...)
			if ref == w.main {
				state = maskStartTime(state)
			}
			w.res.States[ref] = state
			final[r] = append(final[r], scheduler.TaskID(int32(ref.Collection), ref.Lin))
		}
	}
	w.res.Misplaced = append(w.res.Misplaced, w.hist.problems...)
	deeds, twice, orphans := w.hist.final(final)
	w.res.HandledTwice, w.res.Orphans, w.res.Observed = twice, orphans, w.hist.deeds
	w.res.Deeds = map[migrate.TaskRef]Deeds{}
	for task, n := range deeds {
		if !isSystemTask(task) {
			w.res.Deeds[taskRef(task)] = n
		}
	}
}

// appkitMain begins the packed state of the main task of a program built
// with appkit (every workload's), which apps/appkit/main.go documents:
// "APPM", version 1, a byte of flags, then the wall time of Start
// (int64, little-endian).
const appkitMain = "APPM\x01"

// maskStartTime zeroes the wall time of Start in the packed state of an
// appkit main task: the one part of a final state that differs between
// any two runs (the simulator cannot give the programs its clock: they
// read time.Now). The rest of it (flags, PE count, the results) is
// compared.
func maskStartTime(state []byte) []byte {
	const at = len(appkitMain) + 1
	if len(state) < at+8 || string(state[:len(appkitMain)]) != appkitMain {
		return state
	}
	clear(state[at : at+8])
	return state
}

func addTransport(sum *transport.Stats, s transport.Stats) {
	sum.FramesSent += s.FramesSent
	sum.Resends += s.Resends
	sum.Duplicates += s.Duplicates
	sum.OutOfOrder += s.OutOfOrder
	sum.Malformed += s.Malformed
}

// flap breaks the connection between PEs a and b: what is in flight on
// it is lost, and the transport of each live end hears of it.
func (w *world) flap(a, b int) {
	pa, pb := w.pes[a], w.pes[b]
	pa.linkEpoch[b]++
	pb.linkEpoch[a]++
	if pa.running() {
		pa.core.PeerLost(b)
	}
	if pb.running() {
		pb.core.PeerLost(a)
	}
}

// tick is the launcher's periodic work: quiescence rounds and failure
// detection by heartbeats.
func (w *world) tick() {
	if _, done := w.coord.Done(); done {
		return
	}
	for _, p := range w.pes {
		if !p.declared && w.now-p.lastHeard > heartbeatTimeout {
			w.note("launcher: PE %d missed heartbeats for %v: killed", p.rank, w.now-p.lastHeard)
			p.kill()
			p.declare()
		}
	}
	w.perform(w.coord.Tick())
	w.at(coordinatorTick, "tick coordinator", w.tick)
}

func (w *world) checkStall() {
	window := stallTimeout / job.StallChecks
	w.perform(w.coord.CheckStall(window, func(int) string { return "" }))
	w.at(window, "tick stall", w.checkStall)
}

// perform carries out commands in order; those an effect's outcome
// brings come after those already queued.
func (w *world) perform(cmds []job.Command) {
	w.pending = append(w.pending, cmds...)
	if w.performing {
		return
	}
	w.performing = true
	for len(w.pending) > 0 {
		cmd := w.pending[0]
		w.pending = w.pending[1:]
		cmd.Dispatch(w)
	}
	w.performing = false
}

var _ job.Driver = (*world)(nil)

func (w *world) Send(s job.Send) {
	if rank, one := s.To.PE(); one {
		w.pes[rank].post(s.Event)
		return
	}
	for _, p := range w.pes {
		p.post(s.Event)
	}
}

func (w *world) WriteManifest(m job.WriteManifest) {
	w.perform(w.coord.OnManifestWritten(m.Manifest.Epoch, migrate.WriteManifest(m.Dir, m.Manifest)))
}

var errNoDisk = errors.New("sim: this run keeps no disk checkpoint")

// SendDiskRecords reads a disk checkpoint and gives each live PE the
// records of its tasks, as the launcher does.
func (w *world) SendDiskRecords(sd job.SendDiskRecords) {
	if sd.Dir == "" {
		w.perform(w.coord.OnDiskRecordsSent(sd, errNoDisk))
		return
	}
	byCollection, _, err := migrate.ReadEpoch(sd.Dir, sd.Epoch)
	if err == nil && len(byCollection) != len(sd.Hosts) {
		err = fmt.Errorf("the checkpoint has %d collections, the job %d", len(byCollection), len(sd.Hosts))
	}
	if err != nil {
		w.perform(w.coord.OnDiskRecordsSent(sd, err))
		return
	}
	perPE := make([][]migrate.TaskRecord, len(w.pes))
	for coll, hosts := range sd.Hosts {
		for lin, pe := range hosts {
			perPE[pe] = append(perPE[pe], byCollection[coll][lin])
		}
	}
	for pe, recs := range perPE {
		w.pes[pe].post(scheduler.DiskRecords{Generation: sd.Generation, Records: recs, Last: true})
	}
	w.perform(w.coord.OnDiskRecordsSent(sd, nil))
}

func (w *world) Started(job.Started)   {}
func (w *world) Restored(job.Restored) {}
func (w *world) ProgressRegained(job.ProgressRegained) {
	w.res.Recoveries++
}

// eventName is the name of an event's type without its package.
func eventName(ev any) string {
	t := reflect.TypeOf(ev)
	if t == nil {
		return "nil"
	}
	return t.Name()
}

// FaultEvents are the coordinator events after which a fault can strike.
var FaultEvents = []string{"TakeCheckpoint", "CommitCheckpoint", "Migrate", "CollectLoads", "Recover",
	"NoticeFailure", "Rollback", "Resume", "Probe", "WatchProgress"}
