// Package logtest is a deterministic simulator for the protocols of
// package logging: several PEs and tasks in one goroutine, one seeded
// *rand.Rand choosing every delivery, delay, reordering, duplication and
// crash. Crashes drop a PE's volatile state (its protocol instance and the
// messages in flight from and to it) and keep the checkpoints; a second
// crash may come while the first one's tasks are still replaying. The
// protocols run as the runtime runs them (f = logging.DefaultFailures
// unless Config.Failures says otherwise), and a crash logging.CheckFailures
// refuses ends the run as it ends the job (Result.Stopped). Tasks move
// between PEs at checkpoints (ExportTask, ImportTask); the other PEs learn
// of a move some events later and meanwhile send to the old PE, which
// forwards (Forward).
//
// The synthetic program has ordered steps, commutative regions and, with
// Config.OrderDependent, side messages whose effect really depends on the
// order in which they are handled. A PE takes in envelopes and runs
// handlers for a slice of random length before it transmits its Ready, as
// the scheduler does; the envelopes of one Ready to one PE travel as one
// group. Run checks after every step that no task handles a message twice,
// that no envelope leaves a PE before the determinants its send depends on
// are stable or carried with it or with an earlier envelope of its group,
// and that a replay never diverges from a recorded determinant (the
// protocol panics if it would); at the end, that each task's final digest
// equals that of a failure-free re-execution following the reception
// orders the run ended with (a task that handled an orphan message makes
// that re-execution impossible, which is reported too).
//
// It imports logging and commutative, and is meant for tests.
package logtest
