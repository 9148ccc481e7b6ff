// Package stencil3d is the Stencil3D mini-app: a 7-point Jacobi sweep over
// a periodic 3-d grid split into chunks that exchange ghost faces every
// iteration, the benchmark Charm++ uses for message-logging overhead. It
// implements the project's Stencil3D specification (shared notes,
// reference/stencil3d.md) and imports nothing of gochare but actor and the
// apps' shared scaffolding, appkit.
//
// # Running
//
//	gochare run stencil3d --pes N [--grid X,Y,Z] [--chunk X,Y,Z] [--iterations N] [--json]
//
// --grid is the global grid in points (default 64,64,64), --chunk the
// interior of one chunk (default 16,16,16, must divide --grid), and
// --iterations the number of sweeps (default 100). Bad flags and values are
// refused by Define with an error naming the flag (see ParseConfig).
//
// # Program
//
// Collection "main" has one element (appkit.Main); it receives
// actor.Start, records the start time and broadcasts Begin to collection "chunks", a 3-d collection
// of (NX/BX)×(NY/BY)×(NZ/BZ) Chunk tasks placed with actor.BlockMap. On
// Begin a chunk applies the boundary condition and sends its six faces of
// iteration 0. Handler "face" is a commutative region of six messages
// keyed by iteration (key = iteration+1, since a task expects key 0 before
// Begin): each Face carries the Halo the receiver must fill, so that a
// chunk grid one wide (a chunk is its own ±x neighbour) or two wide (the −x
// and +x neighbours are the same task) needs no other rule. When the region
// completes, the chunk sweeps, swaps, applies the boundary condition, and
// either expects and sends the next iteration's faces or contributes its
// record (linear index, FNV-1a hash, sum) to the custom reducer
// "stencil3d.records", which concatenates them. The main element checks
// that every chunk reported once and that all are bitwise equal, compares
// with the reference table, prints, and exits.
//
// The kernel (ApplyBoundary, Sweep, ExtractFace, StoreFace, Summarize,
// JobDigest) is plain functions shared with SolveSerial, the single-process
// reference solver.
//
// # Output
//
// The main element prints these lines, in this order (values for the
// default configuration on 4 PEs):
//
//	stencil3d grid 64,64,64 chunk 16,16,16 chunks 4,4,4 iterations 100 pes 4
//	chunk sum 940420.95797730878 fnv1a 9bd452317f7c54a4 (all 64 chunks equal)
//	job digest 930c1576c77bc0a5
//	reference: match
//	elapsed 0.123456 s
//
// "chunk sum" is chunk (0,0,0)'s interior sum with 17 significant digits
// (strconv 'g' format; it identifies the float64 exactly) and "fnv1a" its
// FNV-1a 64 hash in 16 lower-case hex digits. If some chunks differ the
// parenthesis reads "(chunks DIFFER: K of N differ from chunk (0,0,0))" and
// up to 8 lines "chunk (x,y,z) sum S fnv1a H" follow, one per differing
// chunk. The job digest is the FNV-1a 64 hash of the 8 little-endian bytes
// of every chunk's hash, in linear index order of the chunk collection
// (row-major over (x,y,z), z fastest); it depends on the grid, the chunk
// size and the iteration count, not on the number of PEs (pinned values are
// in TestJobDigestGolden). The reference line is one of
//
//	reference: match
//	reference: MISMATCH (want chunk sum S fnv1a H)
//	reference: none (no reference value for chunk BXxBYxBZ, N iterations)
//
// The elapsed line (wall time from Start to the final reduction, on the
// main element's PE) is the only line that changes from run to run. With
// --json one more line follows, a single JSON object:
//
//	{"app":"stencil3d","grid":[64,64,64],"chunk":[16,16,16],"chunks":64,
//	 "iterations":100,"pes":4,"chunk_sum":940420.95797730878,
//	 "chunk_fnv1a":"9bd452317f7c54a4","chunks_equal":true,
//	 "job_digest":"...","reference":"match","elapsed_s":0.123456}
//
// (on one line; chunk_sum is a JSON number written with the same 17 digits
// as the text; reference is "match", "mismatch" or "none").
//
// The job exits with status 0, or 1 if the chunks differ or the
// configuration is in the reference table and its values do not match bit
// for bit (or the reduction is malformed, reported on a line "error: ...").
//
// # Files
//
// kernel.go holds the numerics (on amd64 the row of a sweep runs in
// kernel_amd64.s, 4 points per instruction with AVX2 or 2 with SSE2, bit
// for bit the Go row it replaces), chunk.go the Chunk task and its packed
// form, config.go the flags, app.go the declarations, handlers and output
// (the main element is appkit.Main's, packed by appkit), serial.go the
// reference solver, reference.go the reference table, and stencil3d.proto
// the messages (regenerate stencil3d.pb.go with go generate).
package stencil3d

//go:generate protoc --go_out=. --go_opt=paths=source_relative stencil3d.proto
