// Package kernel is the serial physics of LULESH 2.0: the Sedov blast
// problem on an N³ mesh of hexahedra, advanced by Lagrangian leapfrog
// steps (nodal forces with stress integration and Flanagan-Belytschko
// hourglass control, accelerations with symmetry planes, velocities,
// positions; element kinematics; monotonic artificial viscosity; the
// equation of state with its pressure/energy predictor-corrector; volume
// update; Courant and hydro time constraints).
//
// A Domain holds one chunk: a box of elements of the global mesh
// (Chunk: global size, offset, extent). The chunk knows which of its
// faces lie on the global symmetry planes (x, y or z = 0), which on the
// free surface, and which it shares with neighbour chunks (Neighbours).
// One chunk that covers the whole mesh is the serial kernel: Run and
// Domain.Step drive it. A distributed run drives each chunk through the
// phases of a cycle and performs the exchanges between them:
//
//	courant, hydro := min over all chunks of d.TimeConstraints()
//	d.TimeIncrement(courant, hydro)
//	d.NodalForcePhase()       // this chunk's element forces on its nodes
//	    send PackSharedNodes(dir, fx|fy|fz) to each neighbour dir;
//	    SumSharedNodes(fx|fy|fz, received) once all have arrived
//	d.NodalMotionPhase()      // acceleration, symmetry planes, velocity, position
//	d.ElementGradientPhase()  // kinematics and monotonic-Q gradients
//	    send PackFaceGradients(f) across each face f with a neighbour;
//	    copy what arrives from across f into GhostGradients(f)
//	d.ElementMaterialPhase()  // Q limiter, EOS, volumes, time constraints
//
// Nodal masses are summed over shared nodes the same way once, after
// NewDomain (PackSharedNodes and SumSharedNodes on NodalMass).
// SumSharedNodes adds a node's contributions in the global order of the
// chunks that hold it, so all of them compute the same bits; positions and
// velocities of shared nodes therefore need no synchronisation (the
// reference MPI code copies them from the higher-ranked owner instead).
// The time step is chosen from the global minima of the Courant and hydro
// constraints reduced separately, which makes it independent of the
// chunking.
//
// RunChunked runs a chunking in one goroutine with in-memory exchanges: a
// distributed run that follows the protocol above computes the same bits,
// so its digest is the one to expect.
//
// A Domain packs its state with MarshalBinary at any of the points above
// between two phases (a checkpoint or a migration) and UnmarshalBinary
// restores it into a domain that NewDomain built for the same chunk,
// which then computes the same bits as the original; it refuses (with
// ErrBadState) any other state. The format is described in state.go.
//
// The arithmetic follows the reference (LLNL/LULESH 2.0, serial build)
// operation by operation; results agree with it to about 1e-15 relative.
//
// The package imports only the standard library. It starts no goroutine
// and keeps no global state; Run reads the wall clock to report elapsed
// time and FOM.
package kernel
