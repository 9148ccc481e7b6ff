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
// Buddy(pe, live); the buddy calls StageBuddy. When the coordinator has
// heard from every PE it tells them to Commit (only then is the previous
// epoch dropped); if a PE died meanwhile, each PE calls Abort and recovery
// starts from the committed epoch. Memory reports the bytes held. After a
// failure, a ward whose buddy died re-sends its committed copy to its new
// buddy, which calls AdoptBuddy, and a PE that restored tasks adds them to
// its own copy (AdoptOwn), so a later failure before the next checkpoint
// stays recoverable.
//
// PlanRecovery is run by the launcher on a failure: given each failed PE's
// tasks (HostedTask: the task, the PE it was on at the checkpoint and that
// PE's buddy; including tasks an earlier plan had just assigned to it) it
// returns a Relocation per task: the PE that restores it (round-robin over
// the first spread survivors after the failed PE, or the spare) and the PE
// that sends it its record (Store.OwnRecord or Store.BuddyRecord). Losing a
// PE and the holder of its copy is ErrUnrecoverable; the job coordinator
// then falls back to the latest disk checkpoint if there is one. The
// scheduler feeds each Relocation to logging (RestoreTask, then
// FailureNotice) and to its own table of where each task is.
//
// Locations is a versioned table of where every task is, with lazy
// forwarding updates (Route, Move, Update, Snapshot, Restore). It is
// implemented and tested but the runtime does not use it: the scheduler
// keeps a plain table per collection (homeOf), updated on every PE by
// migrations and recoveries, and forwards what reaches a task's old PE.
//
// Greedy and Refine are the load balancers run at AtSync from measured
// TaskLoads; they return Moves, which the scheduler performs as migrations
// (pack, send, unpack).
//
// WriteDisk (every PE, --checkpoint-dir) writes dir/epoch-N/pe-P.ckpt
// atomically and returns a FileEntry; the launcher collects them and writes
// the Manifest last with WriteManifest (the files of the PEs alive at the
// checkpoint). A restart (--restart DIR) calls ReadDisk, which passes over
// a corrupt newest epoch for an older complete one, and places the
// records on the new PE count with Redistribute. (The job fingerprint the
// format carries is not set by the runtime yet.)
//
// Errors wrap the sentinels ErrNoCheckpoint, ErrCorrupt, ErrUnrecoverable,
// ErrEpoch, ErrUnknownTask and ErrNoSurvivor.
package migrate
