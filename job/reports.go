package job

// What PEs report to the coordinator, besides plain numbers (the
// Coordinator's On... methods take the rest).

// Progress is how far tasks got: the highest step they offered at a sync
// point (ctx.AtSync), if they offered any.
type Progress struct {
	Step    uint64
	Offered bool
}

// Max returns the further of p and q.
func (p Progress) Max(q Progress) Progress {
	if !p.Offered || (q.Offered && q.Step > p.Step) {
		return q
	}
	return p
}

// IdleStatus answers a quiescence probe.
type IdleStatus struct {
	Round, Sent, Received uint64
	// AtSync is the number of local tasks waiting at a sync point, of
	// SyncTasks local tasks of collections that use sync points.
	AtSync, SyncTasks int
	// SyncStep is the step of the sync point the waiting tasks offer: the
	// highest, and LowSyncStep the lowest, should they wait at different
	// ones (which Config.LogLimit does not accept), of the waiting tasks
	// whose step the PE knows; SyncStepsKnown says it knows one. (A task
	// moved to the PE by load balancing waits at the sync point it left,
	// at a step the PE was not told.)
	SyncStep, LowSyncStep uint64
	SyncStepsKnown        bool
	// LogBytes is the size of the PE's sender log (logging.Stats.LogBytes):
	// with Config.LogLimit, what decides whether a sync point checkpoints.
	LogBytes int
}
