// Package commutative holds the pure theory behind gochare's partial-order
// message logging: how a sent message is named so that the name does not
// depend on the order in which a commutative region was consumed, how a
// task's commutative regions are tracked, which receptions need a
// determinant, and how many dependencies an observed reception pattern needs
// at least.
//
// It imports only the standard library. The runtime (scheduler/, migrate/)
// and the protocols (logging/) build on it; it never imports them, nor
// actor/, whose annotations it mirrors with its own small Order and
// Annotation types.
//
// Main types:
//
//   - MessageID: (SPE, SRN, CPI) — sending task, sender region number and
//     commutative path. Comparable, so it can key maps and sets.
//   - Path: the commutative path (CPI), an opaque, comparable byte string.
//   - Annotation and Order: ordered, commutative region of n, or
//     order-dependent; NeedsDeterminant says whether a reception must be
//     recorded by a partial-order protocol.
//   - TaskState: the per-task counters a protocol keeps and checkpoints
//     (SRN, RSN, the open region). BeginReception / NextSendID /
//     EndReception stamp every send made by a handler.
//   - MinimalDependencies: the dependency count of an observed reception
//     pattern (Table 1 of the partial-order replay paper).
//
// Identity rules. A send outside a commutative region takes the next SRN
// and an empty path. The first message of a region takes one SRN for the
// whole region. A send made by the per-message handler of a region carries
// the region's SRN and a path naming the triggering message by its own
// identity plus the index of the send within that handler invocation; it is
// therefore the same whichever order the region's messages are handled in.
// Sends of the region's completion step (after EndReception reported the
// region complete) are ordinary sends.
package commutative
