// Package scheduler runs the tasks of one PE (processing element, one OS
// process of a job): it implements actor.Context for handlers, keeps each
// task's keyed and region buffering, hands every message to the
// fault-tolerance protocol (logging), batches envelopes per destination
// PE, combines reductions over a fixed index tree, answers quiescence
// probes, and carries out the PE's part of checkpoints, recovery and
// migration.
//
// A PE is a passive state machine driven on a single goroutine by its
// transport (Net): Receive for payloads from other PEs, Event for posted
// events. Those are the job coordinator's events (job.Event), which
// PE.Event dispatches to the PE's job.PEHandler (events.go, one method
// per event, so the compiler checks that every event is handled); the
// records of a disk checkpoint the launcher reads for it (RestartFrom,
// DiskRecords); and its own work slices. It reports to the coordinator
// through Control. Bad input (a malformed batch, an unknown collection or
// handler, an element that is not here) is logged, counted in Stats and
// dropped; the PE keeps running. A panic of a handler or of the runtime
// stops the PE and, through Control.Fail, the job.
//
// The files, by what they hold: pe.go (the PE and the path of a
// message), context.go (actor.Context), encode.go, decode.go and
// envelope.go (batches on the wire), unmarshal.go (handler messages that
// alias the received batch), marshal.go (reused buffers of large
// messages under None), give.go (messages given by their sender,
// Proxy.Give: handed over unencoded under None, spares to decode into), reduce.go (reductions), events.go (the
// coordinator's events), syncpoint.go (sync points), checkpoint.go
// (staging, buddy copies, commit), recovery.go (restoring failed PEs'
// tasks under message logging), rollback.go (every task back to the
// checkpoint), fromdisk.go (records from a disk checkpoint), pack.go
// (task records), progress.go (progress watching), balance.go and
// migration.go (load balancing, moves, forwarding), diagnose.go and
// debug.go (what a stuck PE waits for), observe.go (what a check of a
// whole run reads: Config.Observe, PackTasks), recorder.go (the record of
// a run, Config.RecordDir), replay.go (one task of a record run again:
// Replay, gochare replay) and checkannotations.go (the check of
// commutative annotations, Config.CheckAnnotations).
//
// The decisions of the whole job are package job's (job.Coordinator);
// running a whole job inside one process is job/inprocess's.
//
// Imports: actor (the API it implements), actor/regioncheck (the
// annotation check), job (the coordinator's events
// and what a PE reports), scheduler/wire (envelopes), logging (the
// protocols), migrate (checkpoint records, the store, balancers' moves),
// commutative and scheduler/record (the file format of a record). The transport (scheduler/transport), job/inprocess
// and the launcher import this package, not the reverse.
package scheduler

//go:generate protoc -I .. --go_out=.. --go_opt=module=github.com/gochare/gochare scheduler/wire/wire.proto
