// Package scheduler runs the tasks of one PE (processing element, one OS
// process of a job): it implements actor.Context for handlers, keeps each
// task's keyed and region buffering, batches envelopes per destination PE,
// combines reductions over a fixed index tree, and answers quiescence
// probes.
//
// A PE is a passive state machine driven on a single goroutine by its
// transport (Net): Receive for payloads from other PEs, Event for posted
// events (Begin, Probe, QuiescenceDetected, and its own work slices). It
// reports to the job's launcher through Control. Bad input (a malformed
// batch, an unknown collection or handler, an element that is not here) is
// logged, counted in Stats and dropped; the PE keeps running.
//
// QuiescenceDetector is the pure part of quiescence detection that the
// launcher runs. RunInProcess runs a whole job inside one process over
// in-memory queues, for tests.
//
// JobCoordinator is the pure state machine of the whole job (checkpoints,
// recovery, load balancing, stall detection) that the launcher drives;
// Diagnosis, Busy and CheckStall make a job that stops making progress end
// with a report instead of hanging.
//
// Imports: actor (the API it implements), scheduler/wire (envelopes),
// logging (the protocols), migrate (checkpoints, recovery plans,
// balancers) and commutative. The transport (scheduler/transport) and the
// launcher import it, not the reverse.
package scheduler

//go:generate protoc -I ../.. --go_out=../.. --go_opt=module=github.com/gochare/gochare scheduler/wire/wire.proto
