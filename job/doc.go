// Package job coordinates a whole job: the decisions that concern all
// its PEs at once, and the protocol between those decisions and the PEs.
//
// Coordinator is a pure state machine: no I/O, no clock, no goroutine,
// so one goroutine drives it, on a real clock or a simulated one. It
// starts the job with the checkpoint of the tasks as created, runs
// quiescence detection (QuiescenceDetector), takes coordinated
// checkpoints at sync points, balances the load, recovers from PE
// failures (restoring the failed PEs' tasks under message logging,
// rolling every task back otherwise, or falling back to a disk
// checkpoint when both in-memory copies of a task are lost) and stops a
// job that makes no progress with a diagnosis of every PE. Its driver
// feeds it what the PEs report (the On... methods), the failures it
// detects (OnFailure), the outcome of the effects it asked for
// (OnManifestWritten, OnDiskRecordsSent) and time (Tick, CheckStall).
//
// Every call returns Commands for the driver, to carry out in order: a
// Send carries an Event to EveryPE or to one PE (ToPE); WriteManifest and
// SendDiskRecords are effects the driver performs and reports back;
// Started, Restored and ProgressRegained tell it of milestones. Both sets
// are closed and checked by the compiler: each Event dispatches to its
// own method of PEHandler and each Command to its own method of Driver,
// so an event or command added here does not compile until every handler
// handles it. scheduler.PE applies the events (its PEHandler); the
// launcher (over control connections) and job/inprocess (over in-memory
// queues) are Drivers, and the launcher's encoder of control messages is
// a PEHandler as well.
//
// Imports: migrate (checkpoint records, recovery plans, balancers) and
// logging (the protocol kinds and the failure bound). scheduler imports
// this package for the events it applies; this package imports neither
// the scheduler nor a transport.
package job
