package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/internal/testmsg"
	"github.com/gochare/gochare/scheduler/wire"
)

// failingControl records the errors a PE reports to the coordinator.
type failingControl struct {
	nopControl
	errs *[]error
}

func (c failingControl) Fail(err error) { *c.errs = append(*c.errs, err) }

// collectionNamed is the state of the collection called name.
func collectionNamed(t *testing.T, pe *PE, name string) *collectionState {
	t.Helper()
	for _, cs := range pe.colls {
		if cs.def.Name == name {
			return cs
		}
	}
	t.Fatalf("no collection %q", name)
	return nil
}

// A task moving away from a PE that fails during the migration counts as
// that PE's task: the coordinator has it restored from the checkpoint
// elsewhere, so the PE it was moving to drops it if it came. The move's
// record can reach that PE before the Migrate event does (the source PE
// handled its own Migrate first; the record and the event come by
// different paths): it is dropped all the same. A copy kept there would
// stay at the failure's state and never send again what it had sent since
// the checkpoint, which only the failed PE had logged, and the tasks
// restored from that PE would wait for it forever.
func TestTaskMovingFromAFailedPEIsDroppedWhateverTheOrder(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet, logging.KindNone} {
		for _, recordFirst := range []bool{true, false} {
			name := kind.String() + "/Migrate first"
			if recordFirst {
				name = kind.String() + "/record first"
			}
			t.Run(name, func(t *testing.T) {
				// Eight workers on four PEs: 0 and 1 on PE 0, ..., 4 and 5
				// on PE 2. Worker 1 moves from PE 0 to PE 2, and PE 0 dies.
				const size = 4
				var errs []error
				newPE := func(rank int) (*PE, *recordingNet) {
					net := &recordingNet{sent: map[int][][]byte{}}
					pe, err := New(Config{Rank: rank, Size: size, JobID: 42, App: stepApp(8, 1), Protocol: kind, Net: net, Control: failingControl{errs: &errs}})
					require.NoError(t, err)
					return pe, net
				}
				src, srcNet := newPE(0)
				dst, dstNet := newPE(2)
				workers := collectionNamed(t, dst, "workers")
				moved := migrate.TaskRef{Collection: int(workers.def.ID), Lin: 1}
				migrateEv := job.Migrate{Moves: []migrate.Move{{Task: moved, From: 0, To: 2}}}

				src.Event(migrateEv)
				runPosted(src, srcNet)
				require.Len(t, srcNet.sent[2], 1, "PE 0 sends the moving task's record to PE 2")
				record := srcNet.sent[2][0]
				if recordFirst {
					dst.Receive(0, record)
					runPosted(dst, dstNet)
					dst.Event(migrateEv)
				} else {
					dst.Event(migrateEv)
					dst.Receive(0, record)
				}
				runPosted(dst, dstNet)
				require.NotNil(t, workers.local[1], "the task arrived")
				require.Equal(t, 1, dst.Stats().MigratedIn)

				// PE 0 fails: its tasks, the one that was leaving it
				// included, are restored on PE 1 from PE 0's checkpoint.
				var relocs []migrate.Relocation
				for lin := range 2 {
					relocs = append(relocs, migrate.Relocation{Task: migrate.TaskRef{Collection: moved.Collection, Lin: lin}, FailedPE: 0, ToPE: 1, CheckpointPE: 0, CopyPE: 1})
				}
				if kind == logging.KindNone {
					dst.Event(job.Rollback{Generation: 1, Epoch: 0, Failed: []int{0}, Relocations: relocs})
				} else {
					dst.Event(job.Recover{Generation: 1, Failed: []int{0}, Relocations: relocs, UndoMoves: true})
				}
				runPosted(dst, dstNet)
				require.Empty(t, errs)
				require.Nil(t, workers.local[1], "the task that was leaving the failed PE is not kept")
				require.NotContains(t, workers.sorted(), 1)
				require.Equal(t, int32(1), workers.homeOf[1], "it lives where it is restored")
				if kind != logging.KindNone {
					// A rollback restores every task from the checkpoint
					// and leaves the counts of moves as they were.
					require.Zero(t, dst.Stats().MigratedIn, "the move did not happen")
				}
			})
		}
	}
}

// Until the checkpoint after a migration commits, each failure settles
// the moves that involve the failed PE, a second one during the recovery
// from the first included: a task this PE sent to it comes back (its
// record is kept until the commit), a task that came from it is dropped,
// and a task the first recovery placed elsewhere stays there.
func TestMovesAreSettledAtEachFailureBeforeTheCommit(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			// Eight workers on four PEs, two each (worker w on PE w/2).
			// This is PE 1. Worker 2 moves from it to PE 3, worker 6 from
			// PE 3 to it, worker 0 from PE 0 to PE 3. PE 0 fails, and
			// worker 0 is restored on PE 2; then PE 3 fails.
			const size = 4
			var errs []error
			newPE := func(rank int) (*PE, *recordingNet) {
				net := &recordingNet{sent: map[int][][]byte{}}
				pe, err := New(Config{Rank: rank, Size: size, JobID: 42, App: stepApp(8, 1), Protocol: kind, Net: net, Control: failingControl{errs: &errs}})
				require.NoError(t, err)
				return pe, net
			}
			pe, net := newPE(1)
			third, thirdNet := newPE(3)
			workers := collectionNamed(t, pe, "workers")
			ref := func(lin int) migrate.TaskRef { return migrate.TaskRef{Collection: int(workers.def.ID), Lin: lin} }
			migrateEv := job.Migrate{Moves: []migrate.Move{{Task: ref(2), From: 1, To: 3}, {Task: ref(6), From: 3, To: 1}, {Task: ref(0), From: 0, To: 3}}}
			third.Event(migrateEv)
			runPosted(third, thirdNet)
			require.Len(t, thirdNet.sent[1], 1)
			pe.Event(migrateEv)
			pe.Receive(3, thirdNet.sent[1][0])
			runPosted(pe, net)
			require.Nil(t, workers.local[2], "worker 2 left")
			require.NotNil(t, workers.local[6], "worker 6 came")

			restoreOn2 := func(failed int, lins ...int) []migrate.Relocation {
				var rs []migrate.Relocation
				for _, lin := range lins {
					rs = append(rs, migrate.Relocation{Task: ref(lin), FailedPE: failed, ToPE: 2, CheckpointPE: failed, CopyPE: 2})
				}
				return rs
			}
			pe.Event(job.Recover{Generation: 1, Failed: []int{0}, Relocations: restoreOn2(0, 0, 1), UndoMoves: true})
			runPosted(pe, net)
			require.Empty(t, errs)
			require.Equal(t, int32(2), workers.homeOf[0], "worker 0 is restored on PE 2")
			require.Equal(t, int32(3), workers.homeOf[2], "a move between survivors completes")
			require.NotNil(t, workers.local[6])

			pe.Event(job.Recover{Generation: 2, Failed: []int{3}, Relocations: restoreOn2(3, 6, 7), UndoMoves: true})
			runPosted(pe, net)
			require.Empty(t, errs)
			require.NotNil(t, workers.local[2], "worker 2, sent to PE 3, is back")
			require.Equal(t, int32(1), workers.homeOf[2])
			require.Nil(t, workers.local[6], "worker 6, which came from PE 3, is dropped")
			require.Equal(t, int32(2), workers.homeOf[6])
			require.Equal(t, int32(2), workers.homeOf[0], "worker 0 stays where the first recovery put it")
			require.Zero(t, pe.Stats().MigratedIn)
			require.Zero(t, pe.Stats().MigratedOut)
		})
	}
}

// A PE undoes the moves of one migration on a failure before the
// checkpoint that records them commits: a second Migrate before that
// commit is an error of the job, not moves that would hide the first
// ones' from the next failure.
func TestSecondMigrationBeforeTheCommitIsRefused(t *testing.T) {
	var errs []error
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 0, Size: 2, JobID: 42, App: stepApp(4, 1), Protocol: logging.KindFullDet, Net: net, Control: failingControl{errs: &errs}})
	require.NoError(t, err)
	workers := collectionNamed(t, pe, "workers")
	ref := func(lin int) migrate.TaskRef { return migrate.TaskRef{Collection: int(workers.def.ID), Lin: lin} }

	pe.Event(job.Migrate{Moves: []migrate.Move{{Task: ref(0), From: 0, To: 1}}})
	runPosted(pe, net)
	require.Empty(t, errs)
	require.Nil(t, workers.local[0], "worker 0 left")

	pe.Event(job.Migrate{Moves: []migrate.Move{{Task: ref(1), From: 0, To: 1}}})
	runPosted(pe, net)
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], "a second migration before the checkpoint")
	require.NotNil(t, workers.local[1], "worker 1 stays")
}

// migrationControl records what a PE tells the coordinator of a
// migration and of quiescence.
type migrationControl struct {
	nopControl
	errs     *[]error
	migrated *int
	idle     *[]job.IdleStatus
}

func (c migrationControl) Fail(err error)         { *c.errs = append(*c.errs, err) }
func (c migrationControl) Migrated()              { *c.migrated++ }
func (c migrationControl) Idle(st job.IdleStatus) { *c.idle = append(*c.idle, st) }

// A PE fails while tasks move between two others: the job recovers
// before the record of a task on its way between the survivors arrives,
// and a restored task's replay sends that task a message (here a begin,
// the task has not begun yet), which reaches its new PE first. The PE
// keeps it until the task arrives, and counts it received: before, it
// dropped it (no such element), so that the message was lost and its
// sender's count of envelopes sent never matched the receivers'
// (quiescence was never detected, and the job stalled). The PE reports
// the migration done once the task arrived, and the task handles the
// message then.
func TestMessageForATaskOnItsWayAfterAFailure(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			// Eight workers on four PEs (worker w on PE w/2). Worker 6
			// moves from PE 3 to PE 2, worker 1 from PE 0 to PE 2; PE 0
			// fails and its workers are restored on PE 1.
			const size = 4
			var errs []error
			var migrated int
			var idle []job.IdleStatus
			newPE := func(rank int) (*PE, *recordingNet) {
				net := &recordingNet{sent: map[int][][]byte{}}
				pe, err := New(Config{Rank: rank, Size: size, JobID: 42, App: stepApp(8, 1), Protocol: kind, Net: net,
					Control: migrationControl{errs: &errs, migrated: &migrated, idle: &idle}})
				require.NoError(t, err)
				return pe, net
			}
			src, srcNet := newPE(3)
			dst, dstNet := newPE(2)
			workers := collectionNamed(t, dst, "workers")
			ref := func(lin int) migrate.TaskRef { return migrate.TaskRef{Collection: int(workers.def.ID), Lin: lin} }
			migrateEv := job.Migrate{Moves: []migrate.Move{{Task: ref(6), From: 3, To: 2}, {Task: ref(1), From: 0, To: 2}}}
			src.Event(migrateEv)
			runPosted(src, srcNet)
			require.Len(t, srcNet.sent[2], 1, "PE 3 sends worker 6's record to PE 2")
			record := srcNet.sent[2][0]
			migrated = 0
			dst.Event(migrateEv)
			runPosted(dst, dstNet)
			require.Zero(t, migrated, "PE 2 waits for workers 1 and 6")

			var relocs []migrate.Relocation
			for lin := range 2 {
				relocs = append(relocs, migrate.Relocation{Task: ref(lin), FailedPE: 0, ToPE: 1, CheckpointPE: 0, CopyPE: 1})
			}
			dst.Event(job.Recover{Generation: 1, Failed: []int{0}, Relocations: relocs, UndoMoves: true})
			runPosted(dst, dstNet)
			require.Empty(t, errs)
			require.Zero(t, migrated, "worker 6 is still on its way")

			// Worker 1, restored on PE 1, sends worker 6 a begin.
			payload, err := proto.Marshal(&testmsg.Num{})
			require.NoError(t, err)
			msg, err := proto.Marshal(&wire.Batch{Job: 42, Generation: 1, Envelopes: []*wire.Envelope{{
				Kind: uint32(logging.EnvelopeMessage), From: 1, To: 2, Message: &wire.Message{
					Id: &wire.MessageID{Sender: TaskID(workers.def.ID, 1), Srn: 1}, To: TaskID(workers.def.ID, 6),
					Handler: handlerID(workers.def.ID, 0), Order: uint32(commutative.Ordered), Payload: payload, // begin
				},
			}}})
			require.NoError(t, err)
			dst.Receive(1, msg)
			runPosted(dst, dstNet)
			st := dst.Stats()
			require.Zero(t, st.Dropped, "%v", st.DroppedByReason)
			require.Zero(t, st.Forwarded)
			dst.Event(job.Probe{Round: 1})
			runPosted(dst, dstNet)
			require.Len(t, idle, 1)
			require.Equal(t, uint64(1), idle[0].Received, "the message from PE 1 counts received")

			// Worker 6 arrives and handles it.
			dst.Receive(3, record)
			runPosted(dst, dstNet)
			require.Empty(t, errs)
			require.Equal(t, 1, migrated, "PE 2 reports the migration done")
			require.NotNil(t, workers.local[6])
			require.Equal(t, uint64(1), dst.Stats().Delivered, "worker 6 handled the begin")
		})
	}
}

// A PE whose only awaited task was moving to it from the PE that failed
// reports the migration done at the recovery: that task is restored
// elsewhere, and the coordinator waits for the report before the next
// checkpoint.
func TestMigrationDoneWhenOnlyAFailedPEsTaskWasAwaited(t *testing.T) {
	var errs []error
	var migrated int
	var idle []job.IdleStatus
	net := &recordingNet{sent: map[int][][]byte{}}
	pe, err := New(Config{Rank: 2, Size: 4, JobID: 42, App: stepApp(8, 1), Protocol: logging.KindFullDet, Net: net,
		Control: migrationControl{errs: &errs, migrated: &migrated, idle: &idle}})
	require.NoError(t, err)
	workers := collectionNamed(t, pe, "workers")
	moved := migrate.TaskRef{Collection: int(workers.def.ID), Lin: 1}
	pe.Event(job.Migrate{Moves: []migrate.Move{{Task: moved, From: 0, To: 2}}})
	runPosted(pe, net)
	require.Zero(t, migrated)
	pe.Event(job.Recover{Generation: 1, Failed: []int{0}, UndoMoves: true,
		Relocations: []migrate.Relocation{{Task: moved, FailedPE: 0, ToPE: 1, CheckpointPE: 0, CopyPE: 1}}})
	runPosted(pe, net)
	require.Empty(t, errs)
	require.Equal(t, 1, migrated)
}
