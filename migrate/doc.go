// Package migrate holds gochare's checkpoint, migration and recovery
// planning: task checkpoint records, the in-memory store of own and buddy
// copies, disk checkpoints, the location manager, load balancers and the
// plan that spreads a failed PE's tasks over the survivors.
//
// Everything here is pure and deterministic: no goroutine, socket or clock;
// only WriteDisk, WriteManifest and ReadDisk touch the disk. It imports
// logging, commutative and the standard library (and its own migratepb),
// never the scheduler, the launcher or the transport.
package migrate
