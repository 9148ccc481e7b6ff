// Package leanmd is the LeanMD molecular-dynamics mini-app on gochare: the
// application App, written against package actor (with the shared
// scaffolding of package appkit). The physics, shared with a serial
// driver, is in package md.
//
// Collections:
//
//   - "cells", shape (NX, NY, NZ): one task per cell, owning its atoms.
//   - "computes", shape (NX, NY, NZ, H, 1, 1) with H = n/2+1 the size of the
//     half shell (38 with k-away 2,2,1): compute (x, y, z, k) pairs cell
//     (x, y, z) with its neighbour at slot n/2+k (md.Geometry). The shape
//     is a dense box in which every point is a valid compute; k = 0 is the
//     self pair. Each compute starts on the PE of its own cell.
//   - "driver", shape (1), an appkit.Main: receives Start, starts the
//     cells, collects the reductions in number order (the energies of the
//     first and last step, then the final state) and prints the results
//     (driver.go).
//
// One step: each cell multicasts its positions (keyed by step) to the
// H−1 pair computes and the n/2 computes of its neighbours that touch it,
// and sends them to its self compute. A pair compute takes its two
// position messages as a commutative region of 2, orders them by cell id
// and runs the kernel; the self compute has its own ordered handler. Each
// compute sends one force message to each of its cells; a cell takes the n
// contributions of a step as a commutative region, each in its slot, and
// when complete sums them in slot order (compute order), updates its atoms
// and, every --migrate-every steps, sends one migration list to each of its
// n neighbour slots, received as a commutative region of n appended in slot
// order. Kinetic and potential energy (the latter summed per cell over its
// own computes, carried in the force messages) are contributed with
// actor.Sum at the first and last step; the final state (atoms migrated and
// the digest bytes) with a custom reducer that concatenates in index order.
// Every message is keyed by step, so early messages wait; no reception
// needs a determinant. Positions and forces travel as bytes, 8
// little-endian bytes per value (md.AppendFloats); senders reuse their
// buffers, since Send encodes the message before it returns, and the
// computes of a PE share their working arrays through a pool.
package leanmd
