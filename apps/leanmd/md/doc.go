// Package md is the serial physics of LeanMD: the Lennard-Jones molecular
// dynamics mini-app of the Charm++ benchmark suite, as specified in
// shared/reference/leanmd.md.
//
// Everything that touches a floating-point number lives here, in plain
// functions over flat []float64 arrays (x, y, z interleaved), so that the
// serial driver (Simulation) and the distributed app (package leanmd, one
// task per cell and per compute) perform the same operations in the same
// order and produce the same bits:
//
//   - Geometry: cell sizes, the neighbour offsets of a cell (the full shell,
//     in the order of the original code) and the half shell of computes.
//   - InitialAtoms: atom placement and drand48 velocities of a cell.
//   - Geometry.ComputeForces: the pair-force kernel of one compute, with the
//     original periodic-shift rule (PairForces, SelfForces). On amd64 the
//     pair kernel culls the chunks, selects the pairs within the cutoff
//     and computes their forces in assembly (kernel_amd64.s), eight at a
//     time with AVX-512 or four at a time with AVX2, with the same
//     operations in the same order per pair, bitwise equal to the Go
//     kernel (which the tests check).
//   - SumForces, Advance, KineticEnergy: a cell's step.
//   - Geometry.Emigrate and Immigrate: atom migration between cells.
//   - AppendState: the bytes of the final-state digest.
//
// The package imports only the standard library.
package md
