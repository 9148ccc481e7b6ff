// Package lulesh is the LULESH 2.0 shock-hydrodynamics proxy application
// (a Sedov blast on a Lagrangian hexahedral mesh) on gochare.
//
// The distributed application will live here: the N³ mesh split into
// chunks, one task per chunk, written against
// github.com/gochare/gochare/actor only. Each cycle a chunk task runs the
// phases of its kernel.Domain and, between them, exchanges with its
// neighbours: the force contributions on shared nodes (up to 26
// neighbours, summed in a fixed order), the monotonic-Q velocity
// gradients of its six faces (a commutative region), and a min reduction
// of the time constraints.
//
// The physics itself is the serial package
// github.com/gochare/gochare/apps/lulesh/kernel, which imports only the
// standard library.
package lulesh
