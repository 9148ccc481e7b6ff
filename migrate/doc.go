// Package migrate holds gochare's checkpoint, migration and recovery
// planning: task checkpoint records, the in-memory store of own and buddy
// copies, disk checkpoints, the location manager, the load balancers and
// the plan that spreads a failed PE's tasks over the survivors.
//
// Everything here is pure and deterministic: no goroutine, socket or clock,
// and no map ranged over where order matters. Only WriteDisk, WriteManifest,
// ReadDisk and ReadEpoch touch the disk. It imports the standard library,
// protobuf and its own migratepb (the wire and disk format), and may import
// logging and commutative; never the scheduler, the launcher or the
// transport. Nothing is safe for concurrent use: one PE goroutine owns each
// value.
//
// # Main types and how the runtime uses them
//
// TaskRecord is one task's checkpoint: the app's MarshalBinary, the
// scheduler's per-task state and the protocol's (logging.TaskCheckpoint),
// the last two opaque here. PECheckpoint is one PE's part of an epoch;
// MarshalPECheckpoint is the bytes sent to the buddy and written to disk.
//
// Store (one per PE) holds the PE's committed own copy and the copies it
// keeps as buddy of its ward(s). At a coordinated checkpoint (no
// application message in flight, no handler open) the scheduler packs each
// task, calls Stage(epoch, own) and sends the PECheckpoint to
// Buddy(pe, live); the buddy calls StageBuddy. When the launcher has heard
// from every PE it tells them to Commit (only then is the previous epoch
// dropped) or, if a PE died meanwhile, to Abort. Memory reports the bytes
// held. After a failure, a ward whose buddy died re-sends its committed copy
// to its new buddy, which calls AdoptBuddy, so a second failure before the
// next checkpoint stays recoverable.
//
// PlanRecovery is run by the launcher on a failure: given each failed PE's
// tasks (HostedTask: the task, the PE it was on at the checkpoint and that
// PE's buddy; including tasks an earlier plan had just assigned to it) it
// returns a Relocation per task: the PE that restores it (round-robin over
// the first spread survivors after the failed PE, or the spare) and the PE
// that sends it its record (Store.OwnRecord or Store.BuddyRecord). Losing a
// PE and the holder of its copy is ErrUnrecoverable; the launcher then falls
// back to the disk checkpoint. The scheduler feeds each Relocation to
// logging (RestoreTask, then FailureNotice) and to Locations.Relocate.
//
// Locations (one per PE) is the table of where every task is, a slice per
// collection, with a version per task. Route decides for each arriving
// envelope: deliver here, or forward (and tell the sender the new place so
// forwarding stops); see Locations for the full protocol. Move is called
// by the PE a task leaves at a migration, Update by every PE that learns of
// one. Snapshot and Restore carry the table through checkpoints.
//
// Greedy and Refine are the load balancers run at AtSync from measured
// TaskLoads; they return Moves, which the scheduler performs as migrations
// (Pack, send, Unpack, Locations.Move/Update).
//
// WriteDisk (every PE, --checkpoint-dir) writes dir/epoch-N/pe-P.ckpt
// atomically and returns a FileEntry; the launcher collects them and writes
// the Manifest last with WriteManifest. A restart (--restart DIR) calls
// ReadDisk, checks the manifest's job fingerprint, and places the records
// on the new PE count with Redistribute.
//
// Errors wrap the sentinels ErrNoCheckpoint, ErrCorrupt, ErrUnrecoverable,
// ErrEpoch, ErrUnknownTask and ErrNoSurvivor.
package migrate
