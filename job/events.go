package job

import "github.com/gochare/gochare/migrate"

// Event is what the coordinator tells PEs; a Send carries it. The set is
// closed: only the types of this file implement Event, and each one
// dispatches to its own method of PEHandler. An event added here
// therefore does not compile until every PEHandler (the PE that applies
// it, the launcher that encodes it for the control connection) handles
// it.
type Event interface {
	// Dispatch calls the method of h for this event.
	Dispatch(h PEHandler)
	// event seals the set.
	event()
}

// PEHandler handles every Event, one method per type. scheduler.PE
// applies them; the launcher encodes them as control messages.
type PEHandler interface {
	Begin(Begin)
	Resume(Resume)
	Stop(Stop)
	Probe(Probe)
	QuiescenceDetected(QuiescenceDetected)
	TakeCheckpoint(TakeCheckpoint)
	CommitCheckpoint(CommitCheckpoint)
	CollectLoads(CollectLoads)
	Migrate(Migrate)
	Recover(Recover)
	NoticeFailure(NoticeFailure)
	Rollback(Rollback)
	WatchProgress(WatchProgress)
	ReportProgress(ReportProgress)
	Diagnose(Diagnose)
}

// Events of the job's life.
type (
	// Begin starts the job: the PE holding the main element delivers
	// Start.
	Begin struct{}
	// Resume ends a sync point: the tasks waiting there go on
	// (ResumeFromSync). Passed is one past the step of the latest sync
	// point the job passed without a checkpoint (Config.LogLimit), 0 if
	// none: a task that reaches a sync point of a lower step again (it
	// re-executes, restored from an earlier checkpoint) goes on by itself,
	// as it did the first time. Every Resume carries it, so every live PE
	// holds the coordinator's value whatever tasks it had then.
	Resume struct{ Passed uint64 }
	// Stop ends the job with Status. The process that hosts a PE acts
	// on it (the PE itself has nothing left to do).
	Stop struct{ Status int }
)

// Events of quiescence detection.
type (
	// Probe asks for the PE's quiescence counters once it is idle
	// (answered with IdleStatus).
	Probe struct{ Round uint64 }
	// QuiescenceDetected tells a PE that asked that the job is quiescent.
	QuiescenceDetected struct{ Number uint64 }
)

// Events of checkpoints.
type (
	// TakeCheckpoint stages checkpoint Epoch: every PE packs its tasks
	// and sends a copy to its buddy.
	TakeCheckpoint struct{ Epoch uint64 }
	// CommitCheckpoint makes checkpoint Epoch the one to recover from;
	// with Dir set, the PE also writes it there.
	CommitCheckpoint struct {
		Epoch uint64
		Dir   string
	}
)

// Events of load balancing.
type (
	// CollectLoads asks for the loads of the PE's sync tasks.
	CollectLoads struct{}
	// Migrate moves tasks.
	Migrate struct{ Moves []migrate.Move }
)

// Events of recovery.
type (
	// Recover restores the failed PEs' tasks where the relocations say
	// (message logging). UndoMoves says the failure came after a
	// migration and before the checkpoint that records its moves
	// committed: every PE settles the moves that involve the failed PE.
	Recover struct {
		Generation  uint64
		Failed      []int
		Relocations []migrate.Relocation
		UndoMoves   bool
	}
	// NoticeFailure starts replay once every relocated task is restored.
	NoticeFailure struct {
		Generation  uint64
		Failed      []int
		Relocations []migrate.Relocation
	}
	// Rollback restores every task from checkpoint Epoch
	// (checkpoint/restart, or a failure beyond what the protocol's
	// records survive). With FromDisk, from the disk checkpoint of that
	// epoch, whose records the driver reads and gives each PE (see
	// SendDiskRecords). With Recreate, the job's first checkpoint never
	// committed, and the PE creates its tasks afresh.
	Rollback struct {
		Generation  uint64
		Epoch       uint64
		Failed      []int
		Relocations []migrate.Relocation
		FromDisk    bool
		Recreate    bool
	}
	// WatchProgress asks for Reached once every local task of a
	// collection with sync points has offered step Step, or a later one,
	// since it was placed on this PE (restored, rolled back or created).
	WatchProgress struct {
		Generation uint64
		Step       uint64
	}
)

// Events of stall detection.
type (
	// ReportProgress asks a PE how many handlers it has run.
	ReportProgress struct{}
	// Diagnose asks a PE what its tasks wait for.
	Diagnose struct{}
)

func (e Begin) Dispatch(h PEHandler)              { h.Begin(e) }
func (e Resume) Dispatch(h PEHandler)             { h.Resume(e) }
func (e Stop) Dispatch(h PEHandler)               { h.Stop(e) }
func (e Probe) Dispatch(h PEHandler)              { h.Probe(e) }
func (e QuiescenceDetected) Dispatch(h PEHandler) { h.QuiescenceDetected(e) }
func (e TakeCheckpoint) Dispatch(h PEHandler)     { h.TakeCheckpoint(e) }
func (e CommitCheckpoint) Dispatch(h PEHandler)   { h.CommitCheckpoint(e) }
func (e CollectLoads) Dispatch(h PEHandler)       { h.CollectLoads(e) }
func (e Migrate) Dispatch(h PEHandler)            { h.Migrate(e) }
func (e Recover) Dispatch(h PEHandler)            { h.Recover(e) }
func (e NoticeFailure) Dispatch(h PEHandler)      { h.NoticeFailure(e) }
func (e Rollback) Dispatch(h PEHandler)           { h.Rollback(e) }
func (e WatchProgress) Dispatch(h PEHandler)      { h.WatchProgress(e) }
func (e ReportProgress) Dispatch(h PEHandler)     { h.ReportProgress(e) }
func (e Diagnose) Dispatch(h PEHandler)           { h.Diagnose(e) }

func (Begin) event()              {}
func (Resume) event()             {}
func (Stop) event()               {}
func (Probe) event()              {}
func (QuiescenceDetected) event() {}
func (TakeCheckpoint) event()     {}
func (CommitCheckpoint) event()   {}
func (CollectLoads) event()       {}
func (Migrate) event()            {}
func (Recover) event()            {}
func (NoticeFailure) event()      {}
func (Rollback) event()           {}
func (WatchProgress) event()      {}
func (ReportProgress) event()     {}
func (Diagnose) event()           {}
