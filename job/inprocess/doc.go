// Package inprocess runs a whole job inside one process, for tests of
// applications and of the runtime: the real PEs (scheduler.PE), each on
// its own goroutine, connected by in-memory queues, under the real job
// coordinator (job.Coordinator) driven by a goroutine of its own. Real
// jobs run one PE per OS process over the network (package launcher).
//
// Run takes the application, its arguments, the number of PEs and
// Options: the protocol, the checkpoint period, the load balancer, the
// stall timeout, failures to inject (WithKill at a step,
// WithKillAfterEvent after a coordinator event), an order of delivery
// that otherwise depends on timing (WithEventFirst: one PE handles an
// event before the others get it), and WithDebug to see the
// coordinator's notes and, on an error, every PE's state. A killed PE
// stops at once and loses what it held, as with SIGKILL.
//
// Imports: actor, job, scheduler, logging and migrate.
package inprocess
