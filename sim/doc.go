// Package sim is the whole-job deterministic simulator: it runs a real
// job, every piece of the runtime for real, on one goroutine under one
// seed, and checks that faults do not change its results.
//
// A run (Run, Config) drives N real PEs (scheduler.PE with the
// application's real handlers and the real logging protocol), each with
// the real transport core (transport.Core: sequence numbers, acks,
// resends, window) over a simulated network that delays every frame at
// random (so frames overtake each other, across channels and within one),
// loses and duplicates frames; and the real job coordinator
// (job.Coordinator) driven as a job.Driver by a simulated launcher: its
// control connections (ordered, delayed), quiescence rounds, stall
// checks, checkpoint manifests and disk records, and failure detection
// (a crashed PE's exit is noticed after a random delay; a frozen PE
// misses its heartbeats and is killed after the heartbeat timeout). Time
// is simulated: every event is an item of one queue ordered by (time,
// sequence number), so a seed replays the same run, event for event
// (Result.Digest). The loads a balancer sees are drawn from the seed:
// the simulator has no CPU time.
//
// Faults (Fault) strike a PE at a time, right after it handled the n-th
// coordinator event of a type (during a checkpoint, a migration, a
// recovery...), or when one of its tasks reaches a step: a crash (as
// SIGKILL) or a freeze (a PE that stops answering).
//
// Scenario derives a whole run from a seed: a workload (Workloads: the
// mini-apps in small configurations; a new program is a new row), the PE
// count, the protocol, the checkpoint period (under a logging protocol,
// half the time with a log limit: the launcher's default policy, where a
// sync point checkpoints only once a sender log is large enough, and the
// tasks pass the others; on 3 or 4 PEs, a third of those runs take a
// workload of 2 tasks instead, FewTasks), the balancer, the network and
// zero to three faults. Check compares a run with the failure-free run of
// the same program, and fails unless:
//
//   - the job ends (no hang), with the same results and status; or it
//     stops with the documented error of an unrecoverable failure;
//   - no PE dropped malformed input, and no PE's protocol holds logs or
//     determinants after committing a checkpoint;
//   - every task's final state (its packed state and the runtime's state
//     of it, scheduler.PE.PackTasks) equals the failure-free run's,
//     task by task whatever PE it ended on. Not compared: the wall time
//     of Start the appkit main task holds; the states of a program whose
//     states depend on the order of its order-dependent receptions
//     (Config.OrderDependentStates: sim/gen's, which audit that part
//     themselves); and, in a run where a PE died, a task behind the
//     failure-free run (its final history holds fewer deeds: the job
//     ended while it re-executed what a failure undid), which may also
//     be on no live PE;
//   - no task's final history (history.go: what its final state
//     reflects, followed through restores, rollbacks and moves from
//     what the PEs tell, scheduler.Config.Observe) handled a message
//     twice (a message is its identity and the rollback it was stamped
//     after);
//   - no orphan: every message a final history handled was sent by its
//     sender's final history with the same contents (receiver, handler,
//     key, payload); not sent yet is allowed of a sender behind, and the
//     runtime task of a dead PE is no sender to compare with;
//   - no task acted on a PE it was not on, none was set from a record no
//     PE made, none ended on two live PEs.
//
// TestSim runs thousands of seeds; a failing seed prints the command
// that replays it with a trace of its events:
//
//	go test ./sim -run 'TestSim$' -seed N -v
//
// and -seeds N (-first M) runs a longer sweep. Bugs found and not fixed
// yet are listed in knownbugs_test.go with their seeds.
//
// Imports: actor, job, logging, migrate, scheduler, scheduler/transport
// and the mini-apps (apps/...).
package sim
