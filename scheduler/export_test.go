package scheduler

// The test applications, for the tests of package scheduler_test (which
// run whole jobs in process through job/inprocess, a package that imports
// this one).
var (
	RingApp       = ringApp
	ExpectedRing  = expectedRing
	Contribution  = contribution
	StepApp       = stepApp
	UnevenStepApp = unevenStepApp
	StepAppWith   = stepAppWith
	RateApp       = rateApp
)

// The tasks of the test applications.
type (
	MainTask   = mainTask
	Worker     = worker
	SyncWorker = syncWorker
)
