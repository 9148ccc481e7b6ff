package scheduler

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// JobCoordinator is the launcher's part of a job, as a pure state machine:
// it starts the job, runs quiescence detection, takes coordinated
// checkpoints at sync points, and recovers from PE failures. The caller
// feeds it what PEs report (On... methods) and the failures it detects,
// and delivers the Commands it returns; it performs no I/O and reads no
// clock.
type JobCoordinator struct {
	cfg   CoordinatorConfig
	live  []bool
	phase phase

	qd        *QuiescenceDetector
	roundOpen bool
	idle      []IdleStatus
	askers    []int

	// committed is the last committed checkpoint epoch; staging the one
	// being taken.
	committed, staging uint64
	// lastEpoch is the highest epoch ever staged: a checkpoint a failure
	// abandoned keeps its number, and the next one takes a new one, so
	// that late messages of the abandoned one are never counted.
	lastEpoch       uint64
	haveCommit      bool
	staged, stored  []bool
	files           []migrate.FileEntry
	checkpointBytes int
	// diskEpoch is the latest checkpoint written to disk completely (its
	// manifest asked for), 0 if none.
	diskEpoch uint64
	// failuresSinceCommit counts the failures since the last commit (or
	// rollback), against what the protocol survives (CheckFailures).
	failuresSinceCommit int
	// createdEpoch is the epoch of the checkpoint of the tasks as created
	// (InitialEpoch, or a later one if a failure interrupted it): the job
	// begins after it commits.
	createdEpoch uint64
	// committedBy marks the PEs that committed the last committed epoch.
	committedBy []bool
	// adopted is, per PE, the buddy that confirmed storing the copy of
	// the committed epoch that PE re-sent in the current recovery.
	adopted map[int]adoption

	// hosts says where each task is and where its checkpoint copy lives.
	hosts [][]taskHost

	generation      uint64
	pendingRestored []bool
	failedSince     []int
	relocations     []migrate.Relocation
	// atFailure is how far the job had got when the current recovery
	// began: the furthest step in the PEs' Restored answers. regaining
	// marks the live PEs whose tasks have not all offered it again.
	atFailure Progress
	regaining []bool

	loads     []migrate.TaskLoad
	loadsFrom []bool
	// moves are the moves of the migration under way (or of the last one);
	// undoMoves says the failure being recovered interrupted it.
	moves      []migrate.Move
	undoMoves  bool
	migrated   []bool
	movedTotal int

	done    bool
	outcome Outcome
	events  []string

	// Stall detection (stall.go): activity counts the job's progress,
	// lastActivity its value at the last CheckStall, quietChecks the
	// checks since it last changed; delivered is each PE's handler count.
	activity, lastActivity uint64
	quietChecks            int
	delivered              []uint64
	diagnosing             *diagnosis
	busy                   func(pe int) string
}

// CoordinatorConfig describes a job to coordinate.
type CoordinatorConfig struct {
	Size     int
	Protocol logging.Kind
	// Layout is the initial PE of every task, per collection (Layout).
	Layout [][]int
	// CheckpointDir, if set, receives every committed checkpoint.
	CheckpointDir string
	// Spread is the number of survivors a failed PE's tasks are restored
	// on (0: all).
	Spread int
	// Resumed says the tasks come from a checkpoint taken at a sync point
	// (a restart from disk): the job continues with Resume, not Begin.
	Resumed bool
	// Balancer is the load balancer run at every sync point before its
	// checkpoint: "" (none), "greedy" or "refine".
	Balancer string
}

// Command is something the caller must deliver: Event to PE To, or to
// every live PE when To is -1. Commands with To -2 (WriteManifest,
// ProgressRegained) are for the caller.
type Command struct {
	To    int
	Event any
}

// WriteManifest asks the caller to write a disk checkpoint's manifest.
type WriteManifest struct {
	Dir      string
	Manifest migrate.Manifest
}

// ProgressRegained tells the caller that the job has regained the
// progress it had when recovery Generation began: every task has offered
// step Step (or a later one) again. It comes once per recovery, and not
// at all if the job ends or another PE fails before.
type ProgressRegained struct {
	Generation uint64
	Step       uint64
}

// Stop ends every PE.
type Stop struct{ Status int }

// Outcome is how a job ended.
type Outcome struct {
	Status int
	Err    error
}

// ErrNotAllAtSync reports a job that went quiet with only some tasks at a
// sync point.
var ErrNotAllAtSync = errors.New("scheduler: job is quiescent with only some tasks at a sync point")

type phase uint8

const (
	phaseStarting phase = iota
	phaseCheckpointing
	phaseRunning
	phaseRestoring
	phaseRollingBack
	phaseBalancing
	phaseMigrating
)

type taskHost struct {
	pe, checkpointPE, buddyPE int
}

// Layout returns the initial PE of every task of a job, per collection,
// the runtime's reducers included.
func Layout(job *actor.Job, numPEs int) [][]int {
	defs := append(append([]*actor.CollectionDef(nil), job.Collections()...), reducerCollection(job))
	layout := make([][]int, len(defs))
	for c, def := range defs {
		n := def.Shape.Size()
		layout[c] = make([]int, n)
		for lin := range layout[c] {
			layout[c][lin] = def.Map(lin, n, numPEs)
		}
	}
	return layout
}

// NewJobCoordinator returns a coordinator for a job whose PEs all joined.
func NewJobCoordinator(cfg CoordinatorConfig) *JobCoordinator {
	c := &JobCoordinator{cfg: cfg, live: make([]bool, cfg.Size), qd: NewQuiescenceDetector(cfg.Size), idle: make([]IdleStatus, cfg.Size),
		delivered: make([]uint64, cfg.Size), createdEpoch: InitialEpoch, adopted: map[int]adoption{}}
	for p := range c.live {
		c.live[p] = true
	}
	for _, homes := range cfg.Layout {
		hs := make([]taskHost, len(homes))
		for lin, pe := range homes {
			hs[lin] = taskHost{pe: pe, checkpointPE: pe, buddyPE: migrate.Buddy(pe, c.live)}
		}
		c.hosts = append(c.hosts, hs)
	}
	return c
}

// Done reports whether the job ended, and how.
func (c *JobCoordinator) Done() (Outcome, bool) { return c.outcome, c.done }

// Events returns and forgets the coordinator's notes (checkpoints
// committed, recoveries), for the launcher's log.
func (c *JobCoordinator) Events() []string {
	e := c.events
	c.events = nil
	return e
}

// Live reports which PEs are alive.
func (c *JobCoordinator) Live() []bool { return slices.Clone(c.live) }

func (c *JobCoordinator) note(format string, args ...any) {
	c.events = append(c.events, fmt.Sprintf(format, args...))
}

func (c *JobCoordinator) finish(status int, err error) []Command {
	if c.done {
		return nil
	}
	c.done, c.outcome = true, Outcome{Status: status, Err: err}
	return []Command{{To: -1, Event: Stop{Status: status}}}
}

// Ready is called once every PE is ready: the job starts with checkpoint 0
// of the tasks as created, so that a failure before the first sync point
// is recoverable too.
func (c *JobCoordinator) Ready() []Command { return c.startCheckpoint(InitialEpoch) }

// adoption is a buddy's confirmation that it stores a PE's re-sent copy.
type adoption struct {
	pe         int
	generation uint64
}

// protect counts ward's tasks protected by the buddy that confirmed its
// re-sent copy in the current recovery, once the recovery has placed them
// (their checkpoint PE is ward). A confirmation of an earlier recovery
// does not count: the copy then did not hold the tasks ward restored
// since.
func (c *JobCoordinator) protect(ward int) {
	a, ok := c.adopted[ward]
	if !ok || a.generation != c.generation || !c.live[a.pe] || a.pe == ward {
		return
	}
	for _, hs := range c.hosts {
		for lin := range hs {
			if h := &hs[lin]; h.checkpointPE == ward {
				h.buddyPE = a.pe
			}
		}
	}
}

// nextEpoch is the epoch of the next checkpoint.
func (c *JobCoordinator) nextEpoch() uint64 { return max(c.committed, c.lastEpoch) + 1 }

// InitialEpoch is the epoch of the checkpoint of the tasks as created.
const InitialEpoch = 1

func (c *JobCoordinator) startCheckpoint(epoch uint64) []Command {
	c.phase = phaseCheckpointing
	c.staging = epoch
	c.lastEpoch = max(c.lastEpoch, epoch)
	c.staged, c.stored = make([]bool, c.cfg.Size), make([]bool, c.cfg.Size)
	c.files, c.checkpointBytes = nil, 0
	return []Command{{To: -1, Event: TakeCheckpoint{Epoch: epoch}}}
}

// OnStaged records that PE pe staged its tasks.
func (c *JobCoordinator) OnStaged(pe int, epoch uint64, bytes int) []Command {
	if c.phase != phaseCheckpointing || epoch != c.staging || !c.live[pe] {
		return nil
	}
	c.staged[pe] = true
	c.noteProgress()
	c.checkpointBytes += bytes
	return c.maybeCommit()
}

// OnBuddyStored records that PE pe staged the copy of PE ward.
// Outside a checkpoint, it says that ward's copy of the committed epoch,
// re-sent in recovery generation (its buddy failed, or it restored
// tasks), is stored on pe: its tasks are protected there from then on
// (see adopted).
func (c *JobCoordinator) OnBuddyStored(pe int, epoch uint64, ward int, generation uint64) []Command {
	if ward < 0 || ward >= c.cfg.Size || pe < 0 || pe >= c.cfg.Size {
		return nil
	}
	if c.haveCommit && epoch == c.committed && !(c.phase == phaseCheckpointing && epoch == c.staging) {
		if c.live[pe] && pe != ward && generation == c.generation {
			c.adopted[ward] = adoption{pe: pe, generation: generation}
			c.protect(ward)
		}
		return nil
	}
	if c.phase != phaseCheckpointing || epoch != c.staging {
		return nil
	}
	c.stored[ward] = true
	c.noteProgress()
	return c.maybeCommit()
}

func (c *JobCoordinator) maybeCommit() []Command {
	for p, ok := range c.live {
		if ok && (!c.staged[p] || (!c.stored[p] && migrate.Buddy(p, c.live) >= 0)) {
			return nil
		}
	}
	c.committed, c.haveCommit = c.staging, true
	c.failuresSinceCommit = 0
	c.adopted = map[int]adoption{}
	for _, hs := range c.hosts {
		for lin := range hs {
			h := &hs[lin]
			h.checkpointPE, h.buddyPE = h.pe, migrate.Buddy(h.pe, c.live)
		}
	}
	c.note("checkpoint %d staged and copied to buddies: %d bytes", c.committed, c.checkpointBytes)
	// The job resumes once every PE has committed (and written its file):
	// a PE discards its logs when it commits, and must not receive
	// messages of the next period before.
	c.committedBy = make([]bool, c.cfg.Size)
	return []Command{{To: -1, Event: CommitCheckpoint{Epoch: c.committed, Dir: c.cfg.CheckpointDir}}}
}

// OnCommitted records that PE pe committed checkpoint epoch.
func (c *JobCoordinator) OnCommitted(pe int, epoch uint64) []Command {
	if c.phase != phaseCheckpointing || epoch != c.committed || c.committedBy == nil || !c.live[pe] {
		return nil
	}
	c.committedBy[pe] = true
	c.noteProgress()
	return c.maybeResume()
}

// maybeResume ends a checkpoint once every live PE committed it and, with
// a checkpoint directory, wrote its file.
func (c *JobCoordinator) maybeResume() []Command {
	for p, ok := range c.live {
		if ok && !c.committedBy[p] {
			return nil
		}
	}
	if c.cfg.CheckpointDir == "" {
		return c.resumeAfterCheckpoint()
	}
	if len(c.files) < c.liveCount() {
		return nil
	}
	slices.SortFunc(c.files, func(a, b migrate.FileEntry) int { return a.PE - b.PE })
	m := migrate.Manifest{Epoch: c.committed, NumPEs: c.cfg.Size, Files: c.files}
	for id, homes := range c.cfg.Layout {
		m.Collections = append(m.Collections, migrate.CollectionInfo{ID: id, Size: len(homes)})
	}
	c.diskEpoch = c.committed
	return append([]Command{{To: -2, Event: WriteManifest{Dir: c.cfg.CheckpointDir, Manifest: m}}}, c.resumeAfterCheckpoint()...)
}

// OnDiskWritten records a PE's checkpoint file.
func (c *JobCoordinator) OnDiskWritten(pe int, epoch uint64, entry migrate.FileEntry, err error) []Command {
	if err != nil {
		return c.finish(1, fmt.Errorf("scheduler: PE %d could not write checkpoint %d: %w", pe, epoch, err))
	}
	if epoch != c.committed || c.phase != phaseCheckpointing {
		return nil
	}
	c.files = append(c.files, entry)
	c.noteProgress()
	return c.maybeResume()
}

func (c *JobCoordinator) resumeAfterCheckpoint() []Command {
	c.phase = phaseRunning
	c.qd.Reset()
	c.roundOpen = false
	if c.committed == c.createdEpoch && !c.cfg.Resumed {
		return []Command{{To: -1, Event: Begin{}}}
	}
	return []Command{{To: -1, Event: Resume{}}}
}

func (c *JobCoordinator) liveCount() int {
	n := 0
	for _, ok := range c.live {
		if ok {
			n++
		}
	}
	return n
}

// Tick starts a quiescence round when none is open.
func (c *JobCoordinator) Tick() []Command {
	if c.done || c.phase != phaseRunning || c.roundOpen || c.diagnosing != nil {
		return nil
	}
	c.roundOpen = true
	return []Command{{To: -1, Event: Probe{Round: c.qd.StartRound()}}}
}

// OnQuiescenceRequest records that PE pe asked for quiescence detection.
func (c *JobCoordinator) OnQuiescenceRequest(pe int) {
	if !slices.Contains(c.askers, pe) {
		c.askers = append(c.askers, pe)
	}
}

// OnIdle takes a PE's answer to a probe.
func (c *JobCoordinator) OnIdle(pe int, st IdleStatus) []Command {
	if c.phase != phaseRunning || !c.live[pe] {
		return nil
	}
	c.idle[pe] = st
	complete, quiescent := c.qd.Reply(pe, st.Round, st.Sent, st.Received)
	if !complete {
		return nil
	}
	c.roundOpen = false
	if !quiescent {
		return nil
	}
	atSync, syncTasks := 0, 0
	for p, ok := range c.live {
		if ok {
			atSync += c.idle[p].AtSync
			syncTasks += c.idle[p].SyncTasks
		}
	}
	switch {
	case atSync > 0 && atSync == syncTasks && c.cfg.Balancer != "":
		c.phase = phaseBalancing
		c.loads, c.loadsFrom = nil, make([]bool, c.cfg.Size)
		return []Command{{To: -1, Event: CollectLoads{}}}
	case atSync > 0 && atSync == syncTasks:
		return c.startCheckpoint(c.nextEpoch())
	case len(c.askers) > 0:
		c.noteProgress()
		var cmds []Command
		for _, p := range c.askers {
			if c.live[p] {
				cmds = append(cmds, Command{To: p, Event: QuiescenceDetected{}})
			}
		}
		c.askers = nil
		c.qd.Reset()
		return cmds
	case atSync > 0:
		return c.diagnose(fmt.Errorf("%w (%d of %d)", ErrNotAllAtSync, atSync, syncTasks))
	}
	return c.diagnose(ErrQuiescentWithoutExit)
}

// OnLoads takes a PE's task loads at a balancing sync point.
func (c *JobCoordinator) OnLoads(pe int, loads []migrate.TaskLoad) []Command {
	if c.phase != phaseBalancing || !c.live[pe] || c.loadsFrom[pe] {
		return nil
	}
	c.loadsFrom[pe] = true
	c.noteProgress()
	c.loads = append(c.loads, loads...)
	for p, ok := range c.live {
		if ok && !c.loadsFrom[p] {
			return nil
		}
	}
	slices.SortFunc(c.loads, func(a, b migrate.TaskLoad) int { return migrate.CompareTaskRefs(a.Task, b.Task) })
	var moves []migrate.Move
	if c.cfg.Balancer == "refine" {
		moves = migrate.Refine(c.loads, c.cfg.Size, c.live, 0.05)
	} else {
		moves = migrate.Greedy(c.loads, c.cfg.Size, c.live)
	}
	if len(moves) == 0 {
		c.note("load balancing (%s): no task moves", c.cfg.Balancer)
		return c.startCheckpoint(c.nextEpoch())
	}
	for _, mv := range moves {
		c.hosts[mv.Task.Collection][mv.Task.Lin].pe = mv.To
	}
	c.moves = moves
	c.movedTotal += len(moves)
	c.note("load balancing (%s): %d tasks move", c.cfg.Balancer, len(moves))
	c.phase = phaseMigrating
	c.migrated = slices.Clone(c.live)
	return []Command{{To: -1, Event: Migrate{Moves: moves}}}
}

// OnMigrated records that every task moved to PE pe arrived; once all
// have, the checkpoint records the new placement.
func (c *JobCoordinator) OnMigrated(pe int) []Command {
	if c.phase != phaseMigrating || !c.live[pe] {
		return nil
	}
	c.migrated[pe] = false
	c.noteProgress()
	if slices.Contains(c.migrated, true) {
		return nil
	}
	return c.startCheckpoint(c.nextEpoch())
}

// Moved is the number of task moves load balancing made.
func (c *JobCoordinator) Moved() int { return c.movedTotal }

// OnExit ends the job with a task's status.
func (c *JobCoordinator) OnExit(pe int, status int) []Command { return c.finish(status, nil) }

// OnError ends the job with a PE's error.
func (c *JobCoordinator) OnError(pe int, err error) []Command {
	return c.finish(1, fmt.Errorf("PE %d: %w", pe, err))
}

// OnFailure handles the death of PE pe.
func (c *JobCoordinator) OnFailure(pe int) []Command {
	if c.done || !c.live[pe] {
		return nil
	}
	c.live[pe] = false
	c.noteProgress()
	if d := c.diagnosing; d != nil {
		// The job is stopping with a diagnosis: a failure now only adds
		// to it.
		d.want[pe] = false
		d.reports[pe] = fmt.Sprintf("PE %d failed during the diagnosis", pe)
		if !slices.Contains(d.want, true) {
			return c.finishDiagnosis()
		}
		return nil
	}
	c.qd.Exclude(pe)
	if c.liveCount() == 0 {
		return c.finish(1, fmt.Errorf("%w: no PE left", migrate.ErrUnrecoverable))
	}
	if !c.haveCommit {
		if c.cfg.Resumed {
			return c.finish(1, fmt.Errorf("%w: PE %d failed before the restarted job's first checkpoint was complete; restart it again",
				migrate.ErrUnrecoverable, pe))
		}
		return c.recreate(pe)
	}

	// A checkpoint or a balancing round under way is abandoned: recovery
	// starts from the last committed checkpoint, and the tasks that wait
	// at the sync point take the next one once the restored tasks are
	// back there (with a new epoch number: see nextEpoch).
	var cmds []Command
	c.undoMoves = c.phase == phaseMigrating
	switch c.phase {
	case phaseCheckpointing:
		if c.staging > c.committed {
			c.note("checkpoint %d abandoned: PE %d failed while it was taken; recovery starts from checkpoint %d", c.staging, pe, c.committed)
			break
		}
		// Committed: only its files were being written, and without PE
		// pe's there is no complete disk copy of it (--restart takes the
		// one before). The PEs wait for Resume: they get it first.
		c.note("checkpoint %d has no complete disk copy: PE %d failed while it was written", c.committed, pe)
		if c.cfg.Protocol != logging.KindNone {
			cmds = c.resumeAfterCheckpoint()
		}
	case phaseBalancing:
		c.note("load balancing abandoned: PE %d failed", pe)
	case phaseMigrating:
		// Moves between survivors complete. A task moving to the failed
		// PE stays where it was (its PE kept what it sent); one leaving
		// it counts as its task: its PE may not have sent it, and the
		// PE it was going to drops it if it came (see PE.undoMoves).
		for _, mv := range c.moves {
			switch {
			case mv.To == pe:
				c.hosts[mv.Task.Collection][mv.Task.Lin].pe = mv.From
			case mv.From == pe:
				c.hosts[mv.Task.Collection][mv.Task.Lin].pe = pe
			}
		}
		c.note("migration interrupted: PE %d failed while tasks moved; moves to it are undone, its own tasks are recovered", pe)
	}
	c.phase = phaseRunning
	return append(cmds, c.recoverFrom(pe)...)
}

// recoverFrom starts the recovery from PE pe's failure.
func (c *JobCoordinator) recoverFrom(pe int) []Command {
	c.generation++
	c.qd.Reset()
	c.roundOpen = false
	c.atFailure, c.regaining = Progress{}, nil
	c.failuresSinceCommit++
	if c.cfg.Protocol == logging.KindNone {
		return c.rollback(pe)
	}
	// More failures since the checkpoint than the protocol's records
	// survive: one of them may have taken a record a survivor depends on,
	// and replaying only the failed PEs' tasks could go wrong unseen.
	// Every task goes back to the checkpoint instead, which needs no
	// record.
	if err := logging.CheckFailures(c.cfg.Protocol, logging.Config{PEs: c.cfg.Size}, c.failuresSinceCommit); err != nil {
		c.note("PE %d failed: %v; every task rolls back to checkpoint %d instead", pe, err, c.committed)
		return c.rollback(pe)
	}
	// A restore still under way that was to take a task's copy from the
	// PE that just failed takes it from the task's other copy.
	replanned, err := c.replanCopies(pe)
	if err != nil {
		return c.unrecoverableFromMemory(pe, err)
	}
	// Under message logging a failed PE's tasks are those it hosted.
	tasksOf := func(p int) []migrate.HostedTask { return c.tasksWhere(func(h taskHost) bool { return h.pe == p }) }
	relocs, err := migrate.PlanRecovery([]int{pe}, tasksOf, c.live, c.cfg.Spread, -1)
	if err != nil {
		return c.unrecoverableFromMemory(pe, err)
	}
	for _, r := range relocs {
		c.hosts[r.Task.Collection][r.Task.Lin].pe = r.ToPE
	}
	c.failedSince = append(c.failedSince, pe)
	// A task relocated twice keeps only its last place.
	c.relocations = slices.DeleteFunc(c.relocations, func(old migrate.Relocation) bool {
		return slices.ContainsFunc(relocs, func(r migrate.Relocation) bool { return r.Task == old.Task })
	})
	c.relocations = append(c.relocations, relocs...)
	c.note("PE %d failed: restoring %d tasks on %d survivors (generation %d)", pe, len(relocs), c.spreadOver(relocs), c.generation)
	c.phase = phaseRestoring
	c.pendingRestored = slices.Clone(c.live)
	return []Command{{To: -1, Event: Recover{Generation: c.generation, Failed: []int{pe}, Relocations: append(replanned, relocs...), UndoMoves: c.undoMoves}}}
}

// replanCopies finds, while a restore is under way, the relocations whose
// target has not reported its tasks restored and whose copy was to come
// from PE pe, which just failed: they take the task's other copy (its own
// PE's or its buddy's), and are returned to be sent again. If neither
// survives, the error wraps migrate.ErrUnrecoverable.
func (c *JobCoordinator) replanCopies(pe int) ([]migrate.Relocation, error) {
	if c.pendingRestored == nil {
		return nil, nil
	}
	var replanned []migrate.Relocation
	for i, r := range c.relocations {
		if r.CopyPE != pe || !c.live[r.ToPE] || !c.pendingRestored[r.ToPE] {
			continue
		}
		h := c.hosts[r.Task.Collection][r.Task.Lin]
		switch {
		case r.CheckpointPE != pe && c.live[r.CheckpointPE]:
			r.CopyPE = r.CheckpointPE
		case h.buddyPE >= 0 && h.buddyPE != pe && c.live[h.buddyPE]:
			r.CopyPE = h.buddyPE
		default:
			return nil, fmt.Errorf("%w: PE %d failed while it gave PE %d the checkpoint of task %v, whose other copy was on failed PE %d",
				migrate.ErrUnrecoverable, pe, r.ToPE, r.Task, r.CheckpointPE)
		}
		c.relocations[i] = r
		replanned = append(replanned, r)
	}
	return replanned, nil
}

func (c *JobCoordinator) spreadOver(relocs []migrate.Relocation) int {
	to := map[int]bool{}
	for _, r := range relocs {
		to[r.ToPE] = true
	}
	return len(to)
}

// rollback sends every task back to the last committed checkpoint.
func (c *JobCoordinator) rollback(pe int) []Command {
	// In a rollback every task goes back to its checkpoint: a failed PE's
	// tasks are those whose checkpoint it held.
	tasksOf := func(p int) []migrate.HostedTask {
		return c.tasksWhere(func(h taskHost) bool { return h.checkpointPE == p })
	}
	var dead []int
	for p, ok := range c.live {
		if !ok {
			dead = append(dead, p)
		}
	}
	relocs, err := migrate.PlanRecovery(dead, tasksOf, c.live, c.cfg.Spread, -1)
	if err != nil {
		return c.unrecoverableFromMemory(pe, err)
	}
	for _, hs := range c.hosts {
		for lin := range hs {
			hs[lin].pe = hs[lin].checkpointPE
		}
	}
	for _, r := range relocs {
		c.hosts[r.Task.Collection][r.Task.Lin].pe = r.ToPE
	}
	c.note("PE %d failed: every task rolls back to checkpoint %d (generation %d)", pe, c.committed, c.generation)
	// Every task restarts from the checkpoint with fresh protocol state:
	// no record, and no recovery under way, is left.
	c.failuresSinceCommit = 0
	c.failedSince, c.relocations = nil, nil
	c.phase = phaseRollingBack
	c.pendingRestored = slices.Clone(c.live)
	return []Command{{To: -1, Event: Rollback{Generation: c.generation, Epoch: c.committed, Failed: dead, Relocations: relocs}}}
}

// tasksWhere lists the tasks whose placement matches, for PlanRecovery.
func (c *JobCoordinator) tasksWhere(match func(taskHost) bool) []migrate.HostedTask {
	var ts []migrate.HostedTask
	for coll, hs := range c.hosts {
		for lin, h := range hs {
			if match(h) {
				ts = append(ts, migrate.HostedTask{Task: migrate.TaskRef{Collection: coll, Lin: lin}, CheckpointPE: h.checkpointPE, BuddyPE: h.buddyPE})
			}
		}
	}
	return ts
}

// OnRestored records that PE pe restored every task it was given, and how
// far its tasks had got before the recovery began.
func (c *JobCoordinator) OnRestored(pe int, generation uint64, before Progress) []Command {
	if generation != c.generation || c.pendingRestored == nil || !c.live[pe] {
		return nil
	}
	c.pendingRestored[pe] = false
	c.noteProgress()
	c.atFailure = c.atFailure.Max(before)
	if slices.Contains(c.pendingRestored, true) {
		return nil
	}
	c.pendingRestored = nil
	// The restored tasks' own copies are on their new PEs (each PE adopts
	// the records it restored before it answers). Their buddy copies, and
	// those of PEs whose buddy failed, are on their way to the new
	// buddies: a task counts as protected there only once that buddy says
	// it stored the copy (OnBuddyStored). Until then it keeps the buddy
	// it had if that one is alive and another PE: it still holds the
	// task's record (under the ward it had).
	for _, hs := range c.hosts {
		for lin := range hs {
			h := &hs[lin]
			if !c.live[h.checkpointPE] {
				h.checkpointPE = h.pe
			}
			if h.buddyPE >= 0 && (!c.live[h.buddyPE] || h.buddyPE == h.checkpointPE) {
				h.buddyPE = -1
			}
		}
	}
	for ward := range c.adopted {
		c.protect(ward)
	}
	if c.phase == phaseRollingBack && !c.haveCommit {
		// The tasks are as created again: the job starts with their
		// checkpoint, as it did the first time.
		c.createdEpoch = c.nextEpoch()
		return c.startCheckpoint(c.createdEpoch)
	}
	if c.phase == phaseRollingBack {
		return append(c.resumeAfterCheckpoint(), c.watchProgress()...)
	}
	c.phase = phaseRunning
	notice := NoticeFailure{Generation: c.generation, Failed: c.failedSince, Relocations: c.relocations}
	c.failedSince, c.relocations = nil, nil
	c.note("restored; survivors resend their logs to the restored tasks")
	return append([]Command{{To: -1, Event: notice}}, c.watchProgress()...)
}

// watchProgress asks the PEs to tell when their tasks are back where the
// job was at the failure. Before any task offered a step there is nothing
// to regain, and nothing is reported.
func (c *JobCoordinator) watchProgress() []Command {
	if !c.atFailure.Offered {
		return nil
	}
	c.regaining = slices.Clone(c.live)
	return []Command{{To: -1, Event: WatchProgress{Generation: c.generation, Step: c.atFailure.Step}}}
}

// OnReached records that every task on PE pe offered the watched step
// again; once all live PEs have, the progress at the failure is regained.
// Answers to the watch of an earlier recovery are ignored.
func (c *JobCoordinator) OnReached(pe int, generation, step uint64) []Command {
	if c.done || generation != c.generation || c.regaining == nil || !c.live[pe] || step != c.atFailure.Step {
		return nil
	}
	c.regaining[pe] = false
	if slices.Contains(c.regaining, true) {
		return nil
	}
	c.regaining = nil
	return []Command{{To: -2, Event: ProgressRegained{Generation: generation, Step: step}}}
}
