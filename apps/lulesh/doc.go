// Package lulesh is the LULESH 2.0 shock-hydrodynamics proxy application
// (a Sedov blast on a Lagrangian hexahedral mesh) on gochare: the N³ mesh
// split into chunks, one task per chunk, written against package actor
// (with the shared scaffolding of package appkit). The physics is the serial package
// github.com/gochare/gochare/apps/lulesh/kernel; this package drives a
// kernel.Domain per chunk through the phases of a cycle and does the
// exchanges between them.
//
// # Running
//
//	gochare run lulesh --pes P [--size N] [--chunk X,Y,Z] [--iterations I] [--progress K] [--json]
//
// --size is the mesh edge (default 30, the reference's), --chunk the
// number of elements of one chunk along x, y and z (one value for all
// three is accepted); each must divide N, and the chunk collection is
// then (N/X)×(N/Y)×(N/Z). Without --chunk a chunk is N/2 along each axis
// when N is even (8 chunks), the whole mesh when N is odd. --iterations
// limits the cycles (0, the default, runs to the stop time), --progress
// prints "cycle = C, time = T, dt = D" from chunk (0,0,0) every K cycles.
// Bad flags and values are refused by Define with an error naming the
// flag (ParseConfig).
//
// # Program
//
// Collection "main" has one element (appkit.Main); it receives
// actor.Start, records the start time and broadcasts Begin to collection "chunks", shape
// (N/X, N/Y, N/Z) indexed (x, y, z), placed with actor.BlockMap. Every
// exchange is keyed: a task expects key 0 when created, the nodal-mass
// sum uses key 1, and cycle c (counted after its time increment) uses 2c
// for its forces and 2c+1 for its gradients. Per chunk:
//
//  1. Begin: send the chunk's nodal masses on the nodes shared with each
//     of its up to 26 neighbours (SharedNodes, key 1); the neighbours'
//     masses arrive as a commutative region, each in its own slot, and
//     its completion adds them with kernel.Domain.SumSharedNodes, whose
//     fixed order (the global z, y, x order of the chunks holding a node:
//     the chunk itself among its neighbours) makes every holder of a node
//     compute the same bits.
//  2. Contribute the chunk's Courant and hydro limits to an actor.Min
//     reduction (two floats, reduced separately) delivered to every chunk
//     by a broadcast callback, handler "timestep" (ordered: a chunk
//     contributes to the next reduction only after using this one, so
//     only one result can be pending).
//  3. On the result: time increment, nodal forces; send the three force
//     components on shared nodes to each neighbour (key 2c); the region's
//     completion sums them in the same fixed order. Both sides of a shared
//     node then hold the same summed force, so positions and velocities
//     need no synchronisation step (unlike the reference MPI code, which
//     copies them from the owning rank).
//  4. Node motion, kinematics and monotonic-Q gradients; send the velocity
//     gradients of each face with a neighbour (FaceGradients, key 2c+1):
//     a commutative region in which each message fills the ghost slots of
//     its own face. Its completion runs Q, EOS and the volume update, then
//     either step 2 again or, after the last cycle, contributes the
//     chunk's final energies to the custom reducer "lulesh.energies"
//     (concatenated records), delivered to the main element.
//
// A commutative region has a fixed number of messages per handler, and a
// chunk's neighbour count depends on its place in the grid (7 at a corner
// of a 3³ grid, 26 in the centre). So the shared-node and gradient
// handlers are declared once per count that occurs in the grid
// ("shared_nodes_7", "face_gradients_3", ...), and a sender picks the
// handler of its receiver's count. A chunk without neighbours (one chunk)
// skips the exchanges.
//
// The main element places the energies in global element order, and
// kernel.Summarise gives the iteration count, e(0), symmetry measures,
// FOM and digest. The digest is bitwise that of kernel.RunChunked for the
// same chunking on any number of PEs (node sums are in a fixed order and
// the time step is a min, which is exact). It equals the serial kernel's
// for some chunkings only (e.g. 10³ in 5³ chunks), since a node's force
// is then a sum of per-chunk partial sums.
//
// # Output
//
// The main element prints (10³, 50 iterations, 2×2×2 chunks, 2 PEs):
//
//	lulesh size 10 chunk 5,5,5 chunks 2,2,2 pes 2
//	Run completed:
//	   Problem size        =  10
//	   Iteration count     =  50
//	   Final Origin Energy =  81047.957518451367
//	   Testing Plane 0 of Energy Array:
//	        MaxAbsDiff   = 9.094947e-12
//	        TotalAbsDiff = 2.087566e-11
//	        MaxRelDiff   = 2.912680e-13
//
//	Elapsed time         =       0.11 (s)
//	FOM                  =     467.30 (z/s)
//	Digest               = 966e686b8f35ad47
//	reference: match
//
// (the block from "Run completed" is kernel.Result.WriteReport; e(0) has
// 17 significant digits; Digest is FNV-1a 64 of the final energies in
// global element order; elapsed runs from Start to the final gather on
// the main element's PE, setup included). The reference line is
// "reference: match" when the configuration is a row of the reference
// table (Reference) and the run has the row's iteration count and e(0)
// within 1e-10 relative, "reference: MISMATCH (want ...)" otherwise (exit
// status 1), or "reference: none (no reference row for size N, iteration
// limit L)". With --json one more line follows, a single JSON object
// (Report) with the keys app, size, chunk, chunks, pes, iterations,
// final_origin_energy (17 digits), max_abs_diff, total_abs_diff,
// max_rel_diff, elapsed_s, fom, digest (16 hex digits) and reference
// ("match", "mismatch" or "none"). A physics error (the reference's
// aborts) prints "error: ..." and exits with status 1.
//
// # Packing
//
// Chunk.MarshalBinary packs the task's own state (its stage, the
// gradient faces received and the shared-node values received in the
// open exchange) and its domain's state, which the kernel serialises
// itself (kernel.Domain.MarshalBinary: a versioned, checksummed format
// that UnmarshalBinary restores only into a domain of the same chunk).
// The runtime keeps the messages of an open region it has not delivered.
//
// # Files
//
// config.go holds the flags, chunk.go the Chunk task and its packed form,
// app.go the declarations and handlers (the main element is
// appkit.Main's, packed by appkit), report.go the output, reference.go the
// reference table, and messages.go the messages: plain Go structs, no
// generated code.
package lulesh
