// Package gen is a generated family of gochare programs: a seed selects
// one program, which mixes every kind of reception the runtime knows
// (ordered, commutative, order-dependent), reductions, broadcasts,
// multicasts and sync points where tasks may migrate, and prints one line
// with a digest of every task's final state. It is a workload for the
// fault-tolerance tests: a run with failures must print the line of the
// failure-free run.
//
// # Usage
//
// App is an actor.App named "gen" (built with appkit.Spec):
//
//	gen [--seed N] [--steps N] [--cells N] [--grid X[,Y[,Z]]] [--neighbours K] [--tickets T] [--work N]
//
// The seed chooses every size not given (3 to 6 steps, 5 to 13 cells, a
// 1-d, 2-d or 3-d grid of 5 to 35 tasks, 1 to 3 neighbours and tickets;
// collection sizes are products of 5, 7, 11 and 13, never a multiple of
// 2, 3 or 4 PEs) and, always, the neighbour offsets, where each ticket
// goes, the multicast sections, the collections' maps (block or
// round-robin), the grid's reducer (maximum or minimum) and the initial
// values. --work makes a third of each collection burn N hash rounds per
// step, so that a balancer has load to move. Bad arguments are errors
// wrapping ErrConfig that name the flag. The output is one line, with the
// whole configuration the seed chose, and the exit status is 0:
//
//	$ go run ./sim/gen/cmd/gen run gen --pes 3 --seed 11
//	gen digest 7bc3c58ffcb96c37 (--seed 11 --steps 3 --cells 13 --grid 7,1 --neighbours 1 --tickets 3 --work 0)
//
// Reference computes the same line serially, without the runtime: the
// tests' oracle. The command sim/gen/cmd/gen runs the family as a real
// job (one process per PE; the launcher's flags --pes, --ft,
// --checkpoint-every, --lb and --kill, the rest to the program).
//
// # The program
//
// A main task, a 1-d collection "cells" and a 1- to 3-d collection
// "grid"; both collections offer a sync point after every step but the
// last (App.LastStep tells the last). In each step s:
//
//   - every cell sends its value along Neighbours distinct offsets: a
//     commutative region of Neighbours messages at each cell (each fills
//     its slot; the completion step folds the slots in slot order);
//   - every cell sends Tickets tickets to grid tasks the seed picks; the
//     grid's ticket handler is order-dependent: it folds the ticket into
//     a trace, trace = trace*31 + x, and answers the cell with its
//     position among the step's tickets and the trace after it;
//   - the replies form a commutative region of Tickets messages at the
//     cell, which then contributes to a sum reduction to the main task;
//   - the main task broadcasts the sum to the cells (Advance, ordered) and
//     multicasts it to a section of about a third of the grid (Bonus,
//     ordered);
//   - every grid task contributes to a max (or min) reduction whose
//     result is broadcast back to the grid (ordered), then offers its
//     sync point.
//
// After the last step every task contributes a record to a concatenating
// reduction to the main task, which audits them, computes the digest and
// prints it. Every handler that is not order-dependent is keyed, and each
// task expects one key at a time (Begin 0, then 3s+1, 3s+2, 3s+3 for the
// three parts of step s), so at most one no-determinant message is
// admissible at once: the runtime's order checks (actor.ErrUnkeyedOrder,
// scheduler.ErrAmbiguousOrder) accept it.
//
// # Order-dependent receptions and the digest
//
// The grid's trace, and with it the position and trace in each reply,
// depend on the order the tickets arrive in; two failure-free runs may
// differ there. The digest therefore leaves them out: it hashes the
// configuration, the step sums and, by linear index, each cell's value
// and exchange count and each grid task's ticket sum (a wrapping sum),
// ticket count, bonus fold and reduction fold; all of these are the same
// in every delivery order and on every PE count, so the digest is
// identical across failure-free runs, and a run with failures must print
// it too. The order-dependent part is not left unchecked: the cells keep
// every reply in their state, and the main task's audit requires, for
// every grid task and step, one reply per ticket, positions 0 to m-1 once
// each, and a chain: folding the tickets' values in position order from
// the trace the task ended the previous step with gives each reply's
// trace and the trace the task recorded. A recovery that re-executes a
// grid task in another order than the one its earlier replies reflect
// (the determinants of PartialDet and FullDet exist to prevent this)
// breaks the chain or repeats a position, and the job ends with status
// StatusAudit and a line "gen: error: gen: audit failed: ...". So the
// result is compared with the failure-free digest where it is defined,
// and checked for consistency with the recorded order where it is not.
//
// # A handler run twice
//
// Every message names its sender and a counter unique for that sender
// (step and slot, step and ticket); each receiver keeps, in its packed
// state, what it has taken in the current step (filled slots, tickets by
// their position in the plan, replies by ticket, Begin, each step's sum
// at main). A second delivery of a message, or one out of the program's
// order, ends the job with StatusDuplicate and a line "gen: error: ...:
// ... (a handler ran twice for one message)".
//
// Imports: actor and appkit of gochare (like an application), protobuf.
package gen

//go:generate protoc -I ../.. --go_out=../.. --go_opt=module=github.com/gochare/gochare sim/gen/gen.proto
