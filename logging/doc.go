// Package logging implements gochare's fault-tolerance protocols as pure,
// single-threaded state machines, one instance per PE:
//
//   - None: checkpoint/restart. No log, no determinant; a failure rolls every
//     task back to the last checkpoint (Ready.RollbackAll).
//   - FullDet: causal message logging. Every sent message is kept in the
//     sender's log; every reception creates a determinant (SPE, SRN, CPI,
//     RPE, RSN); a restored task replays its receptions in exactly the
//     recorded order.
//   - PartialDet: the same, but only order-dependent receptions create a
//     determinant. During replay an order-dependent message is delivered only
//     at its recorded position; ordered and commutative messages fill the
//     other positions in any order the program admits, but never before a
//     region message whose handler's sends led to them: every message
//     carries the region receptions in its causal past (Message.Requires,
//     empty unless region handlers send).
//
// Piggybacking follows one rule for determinants (both protocols) and
// PartialDet's progress records: the first application envelope of a Ready
// to a PE carries every record this PE has not yet seen stable; a later
// envelope of the same Ready to that PE carries only the records created,
// received or made unstable again since the previous one (a failure notice
// starts over: the next envelope to each PE carries all). Recovery
// envelopes always carry every unstable record and do not count as an
// earlier envelope. An envelope to this PE itself carries nothing.
//
// Shared machinery: the sender log (kept until the next coordinated
// checkpoint, with byte accounting in Stats), determinant stability (a
// determinant goes with the application envelopes the PE sends to other PEs
// until it is known to be stored on f PEs besides its creator, or on every
// live PE when fewer than f+1 are; receivers store it and acknowledge, and
// a PE that sends a record it already stores to another counts as one of
// its holders there), duplicate removal by message identity,
// garbage collection at checkpoints, and the recovery steps (on a failure
// notice every survivor sends each restored task one EnvelopeRecovery with
// the task's determinants, the first one to each PE carrying too all the
// unstable records they may depend on, then resends its logged messages to
// the task). Each failure notice
// starts a recovery epoch: every task restored since the checkpoint waits
// again for one recovery envelope of the new epoch from each survivor,
// because a survivor may have been handed one of its determinants after
// sending the previous batch, by the PE that just failed.
//
// # The failure bound
//
// f is Config.Failures, DefaultFailures (2) unless set; a job chooses it
// (gochare run --failures, CheckFailureBound says which values it may). Any
// f PE failures between two coordinated checkpoints are survived, at the
// same time or one during the recovery from another: a record some PE
// depends on without storing it was on f+1 PEs (or on all live ones), one
// of which is alive. One more failure may take the last copy of a record
// and make a restored task replay a reception otherwise than the first
// time, a wrong result nothing would show: CheckFailures says which failure
// that is, and the job's coordinator rolls every task back to the
// checkpoint there instead (a rollback needs no record). A checkpoint
// discards every record and starts the count again. f is a choice of cost:
// with f=2 records travel until two other PEs store them, and a PE that
// receives one carries it on too until it knows a third holder, which
// multiplies the records an envelope carries by 2.4 to 3.5 against f=1 on
// the mini-apps (4 PEs in process).
//
// With an event logger (Config.EventLogger, eventlog.go) there is no f:
// a record is stable once a logger process has acknowledged it, records
// are stamped with their creator and number, the loggers' cumulative
// acknowledgements reach every PE, and any number of PE failures is
// survived; a PE and a logger failing in one checkpoint period is not
// (CheckEventLogFailures).
//
// Nothing here starts a goroutine, reads a clock or draws a random number.
// It imports commutative and the standard library only.
//
// # How the caller drives it
//
// The scheduler owns one Protocol per PE and calls it from one goroutine:
//
//  1. Task placement: HostTask for new tasks; after a failure, RestoreTask on
//     the PE chosen for each of the failed PE's tasks, before any envelope
//     addressed to the task is given to Arrive (earlier ones are kept), and
//     before FailureNotice is called on any PE.
//  2. Arrive for every envelope from the network, in arrival order; Forward
//     instead for a message envelope whose task is not on this PE but has
//     moved to another (its sender did not know yet), never handing it to
//     the network as it is: the envelopes after it in its batch may rely
//     on the records it carries, which this PE must store.
//  3. Deliver: repeatedly call NextDelivery(task, admits); for each delivery
//     run the handler, calling Send for each message it sends (Send stamps
//     its identity; do not reuse a MessageID), then EndHandler. If EndHandler
//     reports a completed region, run the completion step, whose sends are
//     ordinary Sends. Never call NextDelivery for a task whose handler is
//     running.
//  4. Ready, then transmit Ready.Envelopes in order, then Advance; the
//     envelopes of one Ready for one PE must arrive together and in order
//     (one transport payload, or payloads on a channel that keeps their
//     order): a determinant or progress record goes on the first of them
//     that needs it only, and the later ones rely on it (see above). An
//     envelope must not be transmitted before the Ready that returned it:
//     the determinants carried by it and by the envelopes before it to the
//     same PE are those its send depends on, so sending it earlier, or
//     dropping any of their Determinants, can release a message that
//     depends on a determinant no other PE stores.
//  5. Checkpoint only when no application message is in flight and no
//     handler or region is open; store the returned TaskCheckpoint with each
//     task's packed state (locally and at the buddy).
//  6. On a failure: first CheckFailures; if it refuses, replaying the
//     failed PEs' tasks is not safe, so roll every task back to the last
//     checkpoint instead, as None does (the scheduler's job coordinator).
//     Drop envelopes from and to the failed PEs, do step 1, then call
//     FailureNotice(failed, relocations) on every surviving PE and transmit
//     their Ready (with Config.Locate set, it also sends again what the
//     failed PEs may not have forwarded). With None, Ready.RollbackAll asks
//     the caller to restore every task from its checkpoint on fresh
//     Protocol instances. A fresh instance made after PEs failed gets
//     them in Config.Failed: a later failure's recovery must neither
//     count them alive nor wait for their recovery envelopes.
//
// Main types: Protocol (with None, FullDet and PartialDet), Config,
// Message, Envelope, Determinant, Delivery, Ready, TaskCheckpoint, Stats;
// CheckFailures.
package logging
