// Package regioncheck checks a commutative annotation against what the
// handler does: it re-runs one completed commutative region of one task
// on fresh copies of the task's state from before the region, with the
// region's messages in other orders, and compares what each order left
// and sent, bit for bit.
//
// An annotation is a promise the runtime cannot prove: a handler declared
// with actor.AnnotateCommutative gets no determinant, so after a failure
// its region may be re-executed in another order than the first time. If
// the handler is not commutative after all (it sums floats in arrival
// order, say), the re-executed task silently differs from the one that
// failed. Check finds that in a failure-free run.
//
// What is compared, for every order against the reference (the region
// re-run in its delivery order, on the same kind of copy):
//
//   - the task's packed state after the region (CollectionDef.PackTask),
//     byte for byte;
//   - the key the task expects after the region (Context.Expect);
//   - for each message of the region, everything its handler did through
//     its Context, in the order it did it: each send (target, key and the
//     payload's bytes), contribution, Expect, AtSync, Exit, quiescence
//     request and output line.
//
// Sends are compared per triggering message and in order, not as one
// multiset for the region: the runtime names a send made inside a region
// by the message whose handler made it and its rank among that handler's
// sends (commutative.Child), and the logging protocols treat that name as
// the message. Two orders that send the same multiset, but from the
// handlers of different messages (a handler that sends once it sees the
// region's last message, say), give the same message two names, and a
// re-execution after a failure would send a duplicate the receiver cannot
// recognise. That work belongs in the region's completion step
// (actor.WhenComplete), which runs once, after the region, outside it.
//
// Orders gives the orders a check tries: the reverse of the delivery
// order first, then seeded random ones (all of them when there are few).
//
// The scheduler runs Check on every completed region when the job runs
// with --check-annotations; actor/actortest runs it from an
// application's unit tests. Imports: actor only.
package regioncheck
