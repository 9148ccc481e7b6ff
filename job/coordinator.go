package job

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// Coordinator makes the decisions of a whole job, as a pure state
// machine: it starts the job, runs quiescence detection, takes
// coordinated checkpoints at sync points, balances the load, recovers
// from PE failures and stops a job that makes no progress. Its driver
// feeds it what PEs report (the On... methods), the failures it detects
// (OnFailure), the outcome of the effects it was asked for, and time
// (Tick, CheckStall); every call returns the Commands the driver must
// carry out, in order. It performs no I/O, reads no clock and starts no
// goroutine: one goroutine drives it, on a real clock or a simulated one.
type Coordinator struct {
	cfg   Config
	live  []bool
	phase phase

	qd        *QuiescenceDetector
	roundOpen bool
	// confirming: the open round was started at once by the balanced
	// round before it (OnIdle), not by a tick. Quiescence takes two
	// rounds of the same counts; when the first finds every PE idle and
	// as many envelopes received as sent, the second goes out at once
	// instead of a tick later (a sync point used to wait for a tick of
	// the driver, 10 ms in the launcher, before its checkpoint). Only
	// one such round follows a tick's: if the counters moved, the job
	// is busy and the ticks pace the rounds again.
	confirming bool
	idle       []IdleStatus
	askers     []int

	// committed is the last committed checkpoint epoch; staging the one
	// being taken.
	committed, staging uint64
	// lastEpoch is the highest epoch ever staged: a checkpoint a failure
	// abandoned keeps its number, and the next one takes a new one, so
	// that late messages of the abandoned one are never counted.
	lastEpoch      uint64
	haveCommit     bool
	staged, stored []bool
	// commitFrom is the first PE maybeCommit has not seen ready for the
	// commit (staged, and its copy stored at its buddy, or dead): a PE
	// once ready stays so for the checkpoint, so each report resumes the
	// scan there and a checkpoint costs O(PEs) in all, not per report.
	commitFrom      int
	files           []migrate.FileEntry
	checkpointBytes int
	// stagingPeak is the most bytes one PE staged in the checkpoint
	// being taken, stagedPeak the same of the last committed one
	// (Config.LogPerCheckpoint).
	stagingPeak, stagedPeak int
	// With Config.MTBF: when the checkpoint being taken started, how long
	// the last one took (from TakeCheckpoint to the tasks' resumption),
	// and when it ended (Config.Now's time).
	checkpointStart, lastCheckpointTook, lastCheckpointEnd time.Duration
	// diskEpoch is the latest checkpoint written to disk completely (its
	// manifest reported written, OnManifestWritten), 0 if none.
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
	// failedAtCommit lists the PEs that failed after the last checkpoint
	// was committed, before every live PE reported it committed: their
	// recovery waits for those reports (recoverAfterCommit).
	failedAtCommit []int
	// adopted is, per PE, the buddy that confirmed storing the copy of
	// the committed epoch that PE re-sent in the current recovery.
	adopted map[int]adoption
	// protections are the buddies protect noted, by ward, not yet given
	// to the tasks (applyProtections).
	protections map[int]int
	// regainFrom: every PE below it has regained the progress of the
	// failure (OnReached); committedFrom: every live PE below it has
	// committed the checkpoint (everyLiveCommitted).
	regainFrom, committedFrom int

	// hosts says where each task is and where its checkpoint copy lives.
	hosts [][]taskHost

	generation      uint64
	pendingRestored []bool
	// restoredFrom is the first PE OnRestored has not seen answer (or
	// dead when the wait began): the scan resumes there, O(PEs) per
	// recovery in all.
	restoredFrom int
	failedSince  []int
	relocations  []migrate.Relocation
	// atFailure is how far the job had got when the current recovery
	// began: the furthest step in the PEs' Restored answers. regaining
	// marks the live PEs whose tasks have not all offered it again.
	atFailure Progress
	regaining []bool

	loads     []migrate.TaskLoad
	loadsFrom []bool
	// moves are the moves of the last migration, until the checkpoint
	// that records them commits (or a rollback undoes them); undoMoves
	// says the failure being recovered came before that commit. migrated
	// marks the PEs whose moved tasks have not all arrived (nil once all
	// have): a failure during the migration does not end it, the tasks
	// on their way between survivors are on no PE until they arrive, so
	// no checkpoint or balancing round starts before, and there is at
	// most one migration between two commits (OnIdle).
	moves      []migrate.Move
	undoMoves  bool
	migrated   []bool
	movedTotal int

	// passed is one past the step of the latest sync point the tasks were
	// resumed from without a checkpoint (Config.LogLimit), 0 if none:
	// every Resume carries it (Resume.Passed). It may lie sync periods
	// ahead: the next sync points are skipped (see skipNext).
	passed uint64
	// Skipping sync points under a log limit (skipNext): the sender logs
	// hold what was sent since step logSince (one past the sync step of
	// the last committed checkpoint; logKnown false: unknown, after a
	// failure or a checkpoint not taken at a known sync step). The
	// checkpoint being taken started at the sync point of step
	// stagedFrom-1 (0: elsewhere), and its Resume carries skipAfter as
	// Passed if that is higher (0: no skip).
	logSince, stagedFrom, skipAfter uint64
	skipAt                          int
	logKnown                        bool

	done    bool
	outcome Outcome
	notes   []string
	// started: the job has begun (or resumed, restarted from disk).
	started bool

	// Stall detection (stall.go): activity counts the job's progress,
	// lastActivity its value at the last CheckStall, quietChecks the
	// checks since it last changed; delivered is each PE's handler count.
	activity, lastActivity uint64
	quietChecks            int
	delivered              []uint64
	diagnosing             *diagnosis
	busy                   func(pe int) string

	// Loggers (loggers.go): loggerLive marks the live ones (nil until
	// first asked: all); lostLoggers are those that died, with entries
	// dumped to them, since the last commit; forceCheckpoint makes the
	// next sync point checkpoint whatever the logs hold.
	loggerLive  []bool
	lostLoggers []int
	// rollbackForLostEntries: the failure being handled may need log
	// entries a dead logger held, and rolls every task back.
	rollbackForLostEntries bool
	forceCheckpoint        bool
}

// Config describes a job to coordinate.
type Config struct {
	Size     int
	Protocol logging.Kind
	// Layout is the initial PE of every task, per collection, the
	// runtime's reducers included (scheduler.Layout).
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
	// LogLimit, when > 0, makes sync points optional: at one, the
	// coordinator checkpoints (and balances) only once some PE's sender
	// log holds LogLimit bytes or more, and otherwise resumes the tasks
	// at once. 0: every sync point checkpoints (--checkpoint-every K).
	LogLimit int
	// SyncEvery is the tasks' sync period under a LogLimit (the PEs'
	// CheckpointEvery: a task offers a sync point at every step s with
	// s+1 a multiple of it). Given, the coordinator skips a sync point
	// that would pass without a checkpoint anyway (skipNext); 0: every
	// sync point stops the tasks.
	SyncEvery uint64
	// Loggers is the number of logger processes of the job (loggers.go),
	// Dumping whether the PEs dump log entries to them (a log quota).
	Loggers int
	Dumping bool
	// EventLogger: the loggers are event loggers for the protocol's
	// records (logging.Config.EventLogger): any number of PE failures is
	// recovered by replay, and a logger's death is handled as with
	// Dumping (loggers.go).
	EventLogger bool
	// Failures is the protocols' f (logging.Config.Failures), the one
	// every PE runs (scheduler.Config.Failures): more PE failures since
	// the last committed checkpoint roll every task back to it
	// (recoverFrom). 0: logging.DefaultFailures.
	Failures int
	// LogPerCheckpoint, when > 0 with a LogLimit, raises the limit to
	// LogPerCheckpoint times the bytes the largest PE staged in the last
	// committed checkpoint, when that is higher (see logLimit and
	// DefaultLogPerCheckpoint): a job whose state is large checkpoints
	// as often as its log grows large against that state, not every
	// LogLimit bytes.
	LogPerCheckpoint int
	// MTBF, when > 0 with a LogLimit, also makes a sync point checkpoint
	// once Daly's period (DalyPeriod) for MTBF and the last checkpoint's
	// measured duration has passed since that checkpoint ended, whatever
	// the logs hold. Now is the driver's clock (time since any fixed
	// origin), read only then.
	MTBF time.Duration
	Now  func() time.Duration
}

// The default checkpoint policy of a job that logs messages and was given
// no checkpoint period: its tasks offer a sync point every DefaultSyncEvery
// steps, and the coordinator checkpoints at the first one where a PE's
// sender log holds DefaultLogLimit bytes or more. The log, and the memory
// and replay time it costs, thus stays below DefaultLogLimit plus what a PE
// sends in DefaultSyncEvery steps, and a job whose log stays small pays no
// checkpoint and a barrier at the first sync point, then one every few
// sync periods (the coordinator skips those that would pass: skipNext).
//
// 16 MiB, chosen by measurement (docs/benchmarks.md, "Sender log",
// 2026-11-24 afternoon): every byte of a log longer than any before is
// memory new to the process, which on the test machine costs about
// 3 ns a byte of CPU (a page fault and a clear, in the guest and in its
// host) against a fraction of that for a copy into memory already used,
// while the checkpoint that empties the log lets the next period reuse
// the same chunks. On stencil3d 128³ in 32³ blocks at 1 PE (3.2 MB logged
// per step, 20 MB of state) partialdet took 1.02-1.11× none's CPU time
// with 16 MiB, 1.13-1.34× with 64 MiB and 1.36× with 256 MiB; on leanmd
// (7.5 MB per step, 0.1 MB of state) 1.06-1.22×, 0.92-1.30× and
// 1.29-2.03×, at 2 PEs 0.98× and 1.51×. Where a checkpoint's copy costs
// more than the log it saves it loses: stencil3d at 2 PEs, whose
// checkpoints cross the transport, 1.45-1.64× against 1.14-1.20× with
// 256 MiB (give such a job a higher --log-limit; DefaultLogPerCheckpoint
// now does).
//
// 4 MiB since (docs/benchmarks.md, "pd3"): below the state's rule
// (DefaultLogPerCheckpoint) the limit only matters to a job whose state
// is small, whose checkpoint costs little more than a sync point that
// passes (LeanMD: 0.1 MB of state, 4-26 ms a checkpoint); with 16 MiB such
// a job wrote 16 MiB plus up to two sync periods of sends into memory new
// to the process before its first checkpoint (LeanMD 3×3×3 on 4 PEs: a
// peak of 23.9 MB per PE, with a page clear for each of it: 6.5 % of the
// job's CPU samples, in clear_page_erms under the log's chunks), and with
// 4 MiB it checkpoints at every sync point or every second one (since a
// multicast's payload is logged once, a period's log is 3.9 MB), its log
// peaks at 8.3 MB and the later periods write into the same chunks.
// A PE's log and the memory it holds stay below the limit plus what it
// sends in one or two sync periods (skipNext).
//
// DefaultLogPerCheckpoint raises that limit for a job with a large
// state: a PE's log may grow to that many times the bytes the largest PE
// staged in the last checkpoint. A checkpoint costs about δ ≈ c × S (S a
// PE's staged bytes, c ≈ 3.5 ns a byte here: pack, send to the buddy,
// the buddy's copy), and with a limit L on a log that grows r bytes a
// second checkpoints come every L / r seconds, so their share of the run
// is c × S × r / L. With L = k × S that is c × r / k, whatever the state:
// at k = 8, 1.6 % for stencil3d 128³ on 2 PEs (about 37 MB logged a
// second per PE), where 16 MiB gave a checkpoint every 60-70 steps, and
// on stencil3d 256³ (74 MB per PE staged) a checkpoint every 560 steps
// instead of every 20, each of which took 0.3-0.6 s
// (docs/benchmarks.md, "The default checkpoint policy"). The memory a PE
// then holds for its log stays below 8 times its checkpoint, which the
// PE already holds twice (its own and its buddy's copy).
const (
	DefaultLogLimit         = 4 << 20
	DefaultSyncEvery        = 10
	DefaultLogPerCheckpoint = 8
)

// DalyPeriod is Daly's (2006) higher-order estimate of the optimal
// checkpoint interval (compute time between checkpoints) for checkpoint
// time delta and mean time between failures m:
//
//	τ = sqrt(2δM)·[1 + ⅓·sqrt(δ/(2M)) + (1/9)·δ/(2M)] − δ   for δ < 2M
//	τ = M                                                    otherwise
func DalyPeriod(delta, m time.Duration) time.Duration {
	d, M := delta.Seconds(), m.Seconds()
	if d <= 0 || M <= 0 {
		return 0
	}
	if d >= 2*M {
		return m
	}
	x := d / (2 * M)
	t := math.Sqrt(2*d*M)*(1+math.Sqrt(x)/3+x/9) - d
	return time.Duration(t * float64(time.Second))
}

// Outcome is how a job ended.
type Outcome struct {
	Status int
	Err    error
}

// ErrNotAllAtSync reports a job that went quiet with only some tasks at a
// sync point.
var ErrNotAllAtSync = errors.New("job: quiescent with only some tasks at a sync point")

// ErrSyncStepsDiffer reports a job under a log limit (Config.LogLimit)
// found with its tasks waiting at sync points of different steps: the
// coordinator could not tell which ones it passes without a checkpoint
// (the tasks of every collection with sync points must offer them at the
// same steps, and a task that re-executes must pass by itself those the
// job passed).
var ErrSyncStepsDiffer = errors.New("job: tasks wait at sync points of different steps")

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

// NewCoordinator returns a coordinator for a job whose PEs all joined.
func NewCoordinator(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg, live: make([]bool, cfg.Size), qd: NewQuiescenceDetector(cfg.Size), idle: make([]IdleStatus, cfg.Size),
		delivered: make([]uint64, cfg.Size), createdEpoch: InitialEpoch, adopted: map[int]adoption{},
		// The logs of a job that begins count from its first step; those
		// of one restarted from disk from a step not known here.
		logKnown: !cfg.Resumed}
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
func (c *Coordinator) Done() (Outcome, bool) { return c.outcome, c.done }

// Notes returns and forgets the coordinator's notes (checkpoints
// committed, recoveries), for the driver's log.
func (c *Coordinator) Notes() []string {
	n := c.notes
	c.notes = nil
	return n
}

// Live reports which PEs are alive.
func (c *Coordinator) Live() []bool { return slices.Clone(c.live) }

func (c *Coordinator) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

func (c *Coordinator) finish(status int, err error) []Command {
	if c.done {
		return nil
	}
	c.done, c.outcome = true, Outcome{Status: status, Err: err}
	return []Command{toEvery(Stop{Status: status})}
}

// Ready is called once every PE is ready: the job starts with checkpoint 0
// of the tasks as created, so that a failure before the first sync point
// is recoverable too.
func (c *Coordinator) Ready() []Command { return c.startCheckpoint(InitialEpoch) }

// nextEpoch is the epoch of the next checkpoint.
func (c *Coordinator) nextEpoch() uint64 { return max(c.committed, c.lastEpoch) + 1 }

// InitialEpoch is the epoch of the checkpoint of the tasks as created.
const InitialEpoch = 1

func (c *Coordinator) startCheckpoint(epoch uint64) []Command {
	c.stagedFrom, c.skipAfter = 0, 0 // OnIdle sets them for its own
	c.phase = phaseCheckpointing
	c.staging = epoch
	c.lastEpoch = max(c.lastEpoch, epoch)
	c.staged, c.stored = make([]bool, c.cfg.Size), make([]bool, c.cfg.Size)
	c.commitFrom = 0
	c.files, c.checkpointBytes, c.stagingPeak = nil, 0, 0
	if c.dalyClock() {
		c.checkpointStart = c.cfg.Now()
	}
	return []Command{toEvery(TakeCheckpoint{Epoch: epoch})}
}

// OnStaged records that PE pe staged its tasks.
func (c *Coordinator) OnStaged(pe int, epoch uint64, bytes int) []Command {
	if c.phase != phaseCheckpointing || epoch != c.staging || !c.live[pe] {
		return nil
	}
	c.staged[pe] = true
	c.noteProgress()
	c.checkpointBytes += bytes
	c.stagingPeak = max(c.stagingPeak, bytes)
	return c.maybeCommit()
}

// OnBuddyStored records that PE pe staged the copy of PE ward.
// Outside a checkpoint, it says that ward's copy of the committed epoch,
// re-sent in recovery generation (its buddy failed, or it restored
// tasks), is stored on pe: its tasks are protected there from then on
// (see adopted).
func (c *Coordinator) OnBuddyStored(pe int, epoch uint64, ward int, generation uint64) []Command {
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

func (c *Coordinator) maybeCommit() []Command {
	for ; c.commitFrom < len(c.live); c.commitFrom++ {
		p := c.commitFrom
		if c.live[p] && (!c.staged[p] || (!c.stored[p] && migrate.Buddy(p, c.live) >= 0)) {
			return nil
		}
	}
	c.committed, c.haveCommit = c.staging, true
	c.stagedPeak = c.stagingPeak
	c.failuresSinceCommit = 0
	// The PEs empty their logs as they commit: they count from the
	// checkpoint's sync step on, if it is known.
	c.logSince, c.logKnown = c.stagedFrom, c.stagedFrom > 0 || c.committed == InitialEpoch && !c.cfg.Resumed
	c.loggersCommitted()
	c.moves = nil // the checkpoint records the placement they made
	c.adopted = map[int]adoption{}
	clear(c.protections) // every task's buddy is set anew
	buddies := c.buddies()
	for _, hs := range c.hosts {
		for lin := range hs {
			h := &hs[lin]
			h.checkpointPE, h.buddyPE = h.pe, buddies[h.pe]
		}
	}
	c.note("checkpoint %d staged and copied to buddies: %d bytes", c.committed, c.checkpointBytes)
	// The job resumes once every PE has committed (and written its file):
	// a PE discards its logs when it commits, and must not receive
	// messages of the next period before.
	c.committedBy, c.committedFrom = make([]bool, c.cfg.Size), 0
	return []Command{toEvery(CommitCheckpoint{Epoch: c.committed, Dir: c.cfg.CheckpointDir})}
}

// OnCommitted records that PE pe committed checkpoint epoch.
func (c *Coordinator) OnCommitted(pe int, epoch uint64) []Command {
	if c.phase != phaseCheckpointing || epoch != c.committed || c.committedBy == nil || !c.live[pe] {
		return nil
	}
	c.committedBy[pe] = true
	c.noteProgress()
	return c.maybeResume()
}

// maybeResume ends a checkpoint once every live PE committed it and, with
// a checkpoint directory, wrote its file.
func (c *Coordinator) maybeResume() []Command {
	if !c.everyLiveCommitted() {
		return nil
	}
	if len(c.failedAtCommit) > 0 {
		return c.recoverAfterCommit()
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
	return append([]Command{WriteManifest{Dir: c.cfg.CheckpointDir, Manifest: m}}, c.resumeAfterCheckpoint()...)
}

// everyLiveCommitted says whether every live PE reported the last
// committed checkpoint committed.
//
// A PE below committedFrom has committed or died, and neither changes
// back while committedBy stands: each answer costs O(1) amortized.
func (c *Coordinator) everyLiveCommitted() bool {
	if c.committedBy == nil {
		return !slices.Contains(c.live, true)
	}
	for ; c.committedFrom < len(c.live); c.committedFrom++ {
		if p := c.committedFrom; c.live[p] && !c.committedBy[p] {
			return false
		}
	}
	return true
}

// OnManifestWritten takes the outcome of a WriteManifest: written, the
// epoch is the disk checkpoint a recovery can fall back to; not written,
// the job stops with the error (it was asked to keep its checkpoints on
// disk and cannot).
func (c *Coordinator) OnManifestWritten(epoch uint64, err error) []Command {
	if err != nil {
		return c.finish(1, fmt.Errorf("job: could not write the manifest of checkpoint %d in %s: %w", epoch, c.cfg.CheckpointDir, err))
	}
	c.diskEpoch = max(c.diskEpoch, epoch)
	return nil
}

// OnDiskWritten records a PE's checkpoint file.
func (c *Coordinator) OnDiskWritten(pe int, epoch uint64, entry migrate.FileEntry, err error) []Command {
	if err != nil {
		return c.finish(1, fmt.Errorf("job: PE %d could not write checkpoint %d: %w", pe, epoch, err))
	}
	if epoch != c.committed || c.phase != phaseCheckpointing {
		return nil
	}
	c.files = append(c.files, entry)
	c.noteProgress()
	return c.maybeResume()
}

func (c *Coordinator) resumeAfterCheckpoint() []Command {
	if c.dalyClock() {
		c.lastCheckpointEnd = c.cfg.Now()
		c.lastCheckpointTook = c.lastCheckpointEnd - c.checkpointStart
	}
	c.phase = phaseRunning
	c.qd.Reset()
	c.roundOpen = false
	if c.skipAfter > c.passed {
		c.passed = c.skipAfter
		c.noteSkipped(c.stagedFrom-1+c.cfg.SyncEvery, c.skipAfter-1, c.skipAt)
	}
	c.skipAfter = 0
	cmds := []Command{toEvery(Resume{Passed: c.passed})}
	if c.committed == c.createdEpoch && !c.cfg.Resumed {
		cmds = []Command{toEvery(Begin{})}
	}
	if !c.started {
		c.started = true
		cmds = append(cmds, Started{Resumed: c.cfg.Resumed})
	}
	return cmds
}

// buddies returns every PE's buddy among the live PEs (migrate.Buddy),
// computed once for a pass over the tasks.
func (c *Coordinator) buddies() []int {
	b := make([]int, len(c.live))
	for p := range b {
		b[p] = migrate.Buddy(p, c.live)
	}
	return b
}

func (c *Coordinator) liveCount() int {
	n := 0
	for _, ok := range c.live {
		if ok {
			n++
		}
	}
	return n
}

// Tick starts a quiescence round when none is open.
func (c *Coordinator) Tick() []Command {
	if c.done || c.phase != phaseRunning || c.roundOpen || c.diagnosing != nil {
		return nil
	}
	c.roundOpen, c.confirming = true, false
	return []Command{toEvery(Probe{Round: c.qd.StartRound()})}
}

// OnQuiescenceRequest records that PE pe asked for quiescence detection.
func (c *Coordinator) OnQuiescenceRequest(pe int) {
	if !slices.Contains(c.askers, pe) {
		c.askers = append(c.askers, pe)
	}
}

// OnIdle takes a PE's answer to a probe.
func (c *Coordinator) OnIdle(pe int, st IdleStatus) []Command {
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
		if c.qd.Balanced() && !c.confirming {
			// Every PE was idle and nothing is in flight: the round
			// that confirms it starts now, not at the next tick (a
			// sync point waits for two rounds). One such round in a
			// row: if the counters moved, the tick paces the next.
			c.confirming = true
			c.roundOpen = true
			return []Command{toEvery(Probe{Round: c.qd.StartRound()})}
		}
		c.confirming = false
		return nil
	}
	c.confirming = false
	if c.migrating() {
		// Quiescent, but tasks moved before a failure are still on their
		// way (their records are not envelopes the counters count).
		return nil
	}
	atSync, syncTasks, maxLog, maxLogPE := 0, 0, 0, -1
	// syncStep and lowStep: the highest and lowest step the waiting tasks
	// offer (known: of those whose PE knows it).
	var syncStep, lowStep uint64
	known := false
	for p, ok := range c.live {
		if ok {
			st := c.idle[p]
			if st.AtSync > 0 && st.SyncStepsKnown {
				if !known {
					syncStep, lowStep, known = st.SyncStep, st.LowSyncStep, true
				}
				syncStep, lowStep = max(syncStep, st.SyncStep), min(lowStep, st.LowSyncStep)
			}
			atSync += st.AtSync
			syncTasks += st.SyncTasks
			if maxLogPE < 0 || st.LogBytes > maxLog {
				maxLog, maxLogPE = st.LogBytes, p
			}
		}
	}
	if atSync > 0 && atSync == syncTasks && c.cfg.LogLimit > 0 && lowStep != syncStep {
		return c.diagnose(fmt.Errorf("%w (%d to %d)", ErrSyncStepsDiffer, lowStep, syncStep))
	}
	if atSync > 0 && atSync == syncTasks && c.cfg.LogLimit > 0 && len(c.moves) == 0 {
		if !known {
			// Not seen: only tasks moved by load balancing wait at a step
			// their PE does not know, and their moves are not committed.
			// A checkpoint is always right.
			c.note("sync point checkpoints: no PE knows the step its waiting tasks offer")
		} else if c.forceCheckpoint {
			c.note("sync point of step %d checkpoints: a logger failed with log entries dumped to it", syncStep)
		} else if due, why := c.dalyDue(); due {
			c.note("sync point of step %d checkpoints: %s", syncStep, why)
		} else if limit := c.logLimit(); maxLog < limit {
			// An optional sync point, and no log is large enough to need
			// a checkpoint yet: the tasks go on, without balancing
			// either. A task that reaches this sync point again,
			// restored from the checkpoint before it, goes on by itself
			// (Resume.Passed). (A sync point whose migration is not
			// committed yet checkpoints whatever the logs: see below.)
			c.passed = max(c.passed, syncStep+1)
			c.qd.Reset()
			c.note("sync point of step %d passed without a checkpoint: the largest sender log holds %d bytes (PE %d), under the limit of %d", syncStep, maxLog, maxLogPE, limit)
			if next, at, ok := c.skipNext(syncStep, maxLog, maxLog); ok {
				c.passed = max(c.passed, next+1)
				c.noteSkipped(syncStep+c.cfg.SyncEvery, next, at)
			}
			return []Command{toEvery(Resume{Passed: c.passed})}
		} else {
			c.note("sync point of step %d checkpoints: PE %d's sender log holds %d bytes, the limit is %d", syncStep, maxLogPE, maxLog, c.logLimit())
		}
	}
	// A checkpoint taken here empties the logs at step syncStep+1; the
	// sync point after it is skipped if the logs would still be under
	// the limit there (resumeAfterCheckpoint).
	from, skipAfter, skipAt := uint64(0), uint64(0), 0
	if atSync > 0 && atSync == syncTasks && known && lowStep == syncStep {
		from = syncStep + 1
		if next, at, ok := c.skipNext(syncStep, maxLog, 0); ok && len(c.moves) == 0 {
			skipAfter, skipAt = next+1, at
		}
	}
	defer func() {
		if c.phase == phaseCheckpointing && c.stagedFrom == 0 {
			c.stagedFrom, c.skipAfter, c.skipAt = from, skipAfter, skipAt
		}
	}()
	switch {
	case atSync > 0 && atSync == syncTasks && c.cfg.Balancer != "" && len(c.moves) > 0:
		// This sync point balanced already: a failure abandoned its
		// migration or the checkpoint after it, and the tasks came back
		// here. Its moves stand (as the failures settled them) until the
		// checkpoint records them; a second migration before that commit
		// would leave what the first one's tasks sent before they moved
		// on PEs no failure settles any more.
		c.note("load balancing (%s) skipped: the moves of this sync point's migration are not committed yet", c.cfg.Balancer)
		return c.startCheckpoint(c.nextEpoch())
	case atSync > 0 && atSync == syncTasks && c.cfg.Balancer != "":
		c.phase = phaseBalancing
		c.loads, c.loadsFrom = nil, make([]bool, c.cfg.Size)
		return []Command{toEvery(CollectLoads{})}
	case atSync > 0 && atSync == syncTasks:
		return c.startCheckpoint(c.nextEpoch())
	case len(c.askers) > 0:
		c.noteProgress()
		var cmds []Command
		for _, p := range c.askers {
			if c.live[p] {
				cmds = append(cmds, Send{To: ToPE(p), Event: QuiescenceDetected{}})
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

// skipNext decides whether the tasks waiting at the sync point of step
// may go on past the next ones too, up to that of step next (a multiple
// of Config.SyncEvery later): only over sync points that would pass
// without a checkpoint anyway. The logs grew to logged bytes (the
// largest) in the steps since they last started empty (logSince), and
// hold after bytes once the tasks go on (logged, or 0 after a
// checkpoint); at the same rate they would hold at at the sync point of
// step next. The next sync point is skipped if the logs would be under
// the limit there by a 32nd of a period's growth (a log that grows
// faster than it did then passes the limit by up to two periods' growth
// before the next checkpoint, instead of one); more are skipped while
// the growth until the sync point after the last one skipped, where the
// tasks stop next, stays within half the room left under the limit, up
// to maxSkippedPeriods: a log growing up to twice as fast as it did is
// then still under the limit there, and the coordinator measures again.
// A sync point skipped is one the tasks pass by themselves
// (Resume.Passed), as those a task re-executes: it costs no barrier (the
// tasks of a step no longer wait for the slowest) and no quiescence
// rounds. The checkpoints then
// come at the steps they would have come at, as long as the logs grow as
// they did. With Daly's period (Config.MTBF) only the next sync point
// is skipped, and only if the period does not run out before it.
func (c *Coordinator) skipNext(step uint64, logged, after int) (next uint64, at int, ok bool) {
	k := c.cfg.SyncEvery
	if k == 0 || c.cfg.LogLimit <= 0 || c.cfg.Balancer != "" || c.forceCheckpoint || !c.logKnown || step+1 <= c.logSince {
		return 0, 0, false
	}
	steps := step + 1 - c.logSince
	perPeriod := uint64(logged) * k / steps
	at = after + int(perPeriod)
	limit := uint64(c.logLimit())
	if uint64(at)+perPeriod/32 >= limit {
		return 0, 0, false
	}
	periods := uint64(1)
	if period, ok := c.dalyPeriod(); ok {
		// The same for Daly's period, at the pace of the steps since the
		// last checkpoint ended.
		since := c.cfg.Now() - c.lastCheckpointEnd
		timePerPeriod := since * time.Duration(k) / time.Duration(steps)
		then := timePerPeriod
		if after > 0 {
			then += since
		}
		if then+timePerPeriod/32 >= period {
			return 0, 0, false
		}
	} else if !c.dalyClock() {
		// The tasks stop next one period after the last sync point
		// skipped: periods+1 periods' growth within half the room.
		periods = maxSkippedPeriods
		if perPeriod > 0 {
			periods = min(periods, max(2, (limit-uint64(after))/2/perPeriod)-1)
		}
		at = after + int(periods*perPeriod)
	}
	return step + periods*k, at, true
}

// maxSkippedPeriods bounds the sync points skipped at once (skipNext):
// a log that barely grew may grow later, and the coordinator measures it
// again at least once every maxSkippedPeriods+1 sync periods.
const maxSkippedPeriods = 8

// noteSkipped notes the sync points skipped from step first to step
// last, where the largest log would hold about at bytes.
func (c *Coordinator) noteSkipped(first, last uint64, at int) {
	if first >= last {
		c.note("sync point of step %d skipped: the largest sender log would hold about %d bytes there", last, at)
		return
	}
	c.note("sync points of steps %d to %d skipped: the largest sender log would hold about %d bytes at step %d", first, last, at, last)
}

// logLimit is the log size at which an optional sync point checkpoints:
// Config.LogLimit, or Config.LogPerCheckpoint times the bytes the
// largest PE staged in the last committed checkpoint if that is higher.
func (c *Coordinator) logLimit() int {
	limit := c.cfg.LogLimit
	if k := c.cfg.LogPerCheckpoint; k > 0 && c.stagedPeak > 0 {
		limit = max(limit, k*c.stagedPeak)
	}
	return limit
}

// dalyClock reports whether the coordinator times its checkpoints
// (Config.MTBF and Config.Now given).
func (c *Coordinator) dalyClock() bool { return c.cfg.MTBF > 0 && c.cfg.Now != nil }

// dalyPeriod is Daly's period for Config.MTBF and the duration of the
// last checkpoint, once one was measured.
func (c *Coordinator) dalyPeriod() (time.Duration, bool) {
	if !c.dalyClock() || c.lastCheckpointTook <= 0 {
		return 0, false
	}
	return DalyPeriod(c.lastCheckpointTook, c.cfg.MTBF), true
}

// dalyDue reports whether Daly's period has passed since the last
// checkpoint ended, and says so.
func (c *Coordinator) dalyDue() (bool, string) {
	period, ok := c.dalyPeriod()
	if !ok {
		return false, ""
	}
	since := c.cfg.Now() - c.lastCheckpointEnd
	if since < period {
		return false, ""
	}
	return true, fmt.Sprintf("%v since the last checkpoint, Daly's period for an MTBF of %v and a checkpoint of %v is %v",
		since.Round(time.Millisecond), c.cfg.MTBF, c.lastCheckpointTook.Round(time.Millisecond), period.Round(time.Millisecond))
}

// OnLoads takes a PE's task loads at a balancing sync point.
func (c *Coordinator) OnLoads(pe int, loads []migrate.TaskLoad) []Command {
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
	return []Command{toEvery(Migrate{Moves: moves})}
}

// OnMigrated records that every task moved to PE pe arrived; once all
// have, the checkpoint records the new placement. A report that comes
// after a failure interrupted the migration counts all the same: the job
// takes no checkpoint before every live PE made it.
func (c *Coordinator) OnMigrated(pe int) []Command {
	if c.migrated == nil || !c.live[pe] || !c.migrated[pe] {
		return nil
	}
	c.migrated[pe] = false
	c.noteProgress()
	if c.migrating() {
		return nil
	}
	c.migrated = nil
	if c.phase != phaseMigrating {
		return nil // the next quiescent sync point takes the checkpoint
	}
	return c.startCheckpoint(c.nextEpoch())
}

// migrating reports whether a live PE still waits for tasks moved to it.
func (c *Coordinator) migrating() bool {
	for p, waits := range c.migrated {
		if waits && c.live[p] {
			return true
		}
	}
	return false
}

// Moved is the number of task moves load balancing made.
func (c *Coordinator) Moved() int { return c.movedTotal }

// OnExit ends the job with a task's status.
func (c *Coordinator) OnExit(pe int, status int) []Command { return c.finish(status, nil) }

// OnError ends the job with a PE's error.
func (c *Coordinator) OnError(pe int, err error) []Command {
	return c.finish(1, fmt.Errorf("PE %d: %w", pe, err))
}

// DebugString summarises the coordinator's state.
func (c *Coordinator) DebugString() string {
	return fmt.Sprintf("coordinator phase %d live %v committed %d staging %d passed %d roundOpen %v qd round %d idle %+v pendingRestored %v atFailure %+v regaining %v",
		c.phase, c.live, c.committed, c.staging, c.passed, c.roundOpen, c.qd.round, c.idle, c.pendingRestored, c.atFailure, c.regaining)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
