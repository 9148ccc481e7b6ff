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
// count, the protocol, the checkpoint period, the balancer, the network
// and zero to three faults. Check compares a run with the failure-free
// run of the same program: the job ends (no hang), with the same
// results and status, and no PE dropped malformed input; or it stops
// with the documented error of an unrecoverable failure.
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
