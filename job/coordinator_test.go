package job

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// runningCoordinator returns a coordinator of pes PEs (two tasks each)
// whose initial checkpoint is committed and whose job has begun.
func runningCoordinator(t *testing.T, pes int, kind logging.Kind) *Coordinator {
	t.Helper()
	return runningCoordinatorWith(t, Config{Size: pes, Protocol: kind})
}

// runningCoordinatorWith is runningCoordinator with a configuration; its
// Layout is set as runningCoordinator's.
func runningCoordinatorWith(t *testing.T, cfg Config) *Coordinator {
	t.Helper()
	pes := cfg.Size
	layout := make([]int, 2*pes)
	for lin := range layout {
		layout[lin] = lin % pes
	}
	cfg.Layout = [][]int{layout}
	c := NewCoordinator(cfg)
	require.Equal(t, []Command{Send{To: EveryPE, Event: TakeCheckpoint{Epoch: InitialEpoch}}}, c.Ready())
	var cmds []Command
	for pe := 0; pe < pes; pe++ {
		cmds = append(cmds, c.OnStaged(pe, InitialEpoch, 10)...)
		cmds = append(cmds, c.OnBuddyStored((pe+1)%pes, InitialEpoch, pe, 0)...)
	}
	require.Equal(t, []Command{Send{To: EveryPE, Event: CommitCheckpoint{Epoch: InitialEpoch}}}, cmds)
	// The job begins once every PE has committed, and the driver is
	// told so.
	for pe := 0; pe < pes-1; pe++ {
		require.Empty(t, c.OnCommitted(pe, InitialEpoch))
	}
	require.Equal(t, []Command{Send{To: EveryPE, Event: Begin{}}, Started{}}, c.OnCommitted(pes-1, InitialEpoch))
	return c
}

// confirmCopies delivers, for each live PE, its buddy's confirmation that
// it stores the copy the PE re-sent in recovery generation.
func confirmCopies(c *Coordinator, generation uint64) {
	live := c.Live()
	for p, ok := range live {
		if ok {
			c.OnBuddyStored(migrate.Buddy(p, live), c.committed, p, generation)
		}
	}
}

// events lists the events of commands, in order: a Send's event, or the
// command itself.
func events(cmds []Command) []any {
	var evs []any
	for _, c := range cmds {
		if s, ok := c.(Send); ok {
			evs = append(evs, s.Event)
			continue
		}
		evs = append(evs, c)
	}
	return evs
}

// nextProbe returns the probe of the next quiescence round: the one a
// balanced round started at once (a Probe among cmds, which it removes),
// or else the one the next tick starts.
func nextProbe(t *testing.T, c *Coordinator, cmds *[]Command) Probe {
	t.Helper()
	for i, cmd := range *cmds {
		if s, ok := cmd.(Send); ok {
			if p, ok := s.Event.(Probe); ok {
				*cmds = append((*cmds)[:i:i], (*cmds)[i+1:]...)
				return p
			}
		}
	}
	probe, _ := eventOf[Probe](t, c.Tick())
	return probe
}

// eventOf returns the first event or command of type E of cmds, and the
// destination of the Send that carries it (EveryPE for a command for the
// driver).
func eventOf[E any](t *testing.T, cmds []Command) (E, Destination) {
	t.Helper()
	for _, c := range cmds {
		if s, ok := c.(Send); ok {
			if e, ok := s.Event.(E); ok {
				return e, s.To
			}
		}
		if e, ok := c.(E); ok {
			return e, EveryPE
		}
	}
	var zero E
	require.Failf(t, "command missing", "no %T in %v", zero, events(cmds))
	return zero, EveryPE
}

// After a failure the coordinator takes the furthest step of the
// survivors' Restored answers as the job's progress at the failure, asks
// every live PE to watch for it, and reports it regained once, when the
// last live PE answered for the current recovery. Answers of an earlier
// recovery, of a failed PE or for another step count for nothing.
func TestCoordinatorReportsProgressRegained(t *testing.T) {
	c := runningCoordinator(t, 4, logging.KindPartialDet)
	rec, _ := eventOf[Recover](t, c.OnFailure(1))
	require.Equal(t, uint64(1), rec.Generation)

	require.Empty(t, c.OnRestored(0, 1, Progress{Step: 7, Offered: true}))
	require.Empty(t, c.OnRestored(2, 1, Progress{}), "a PE whose tasks offered no step yet")
	require.Empty(t, c.OnReached(0, 1, 9), "no watch before every PE restored")
	cmds := c.OnRestored(3, 1, Progress{Step: 9, Offered: true})
	require.Len(t, cmds, 3)
	notice, _ := eventOf[NoticeFailure](t, cmds)
	require.Equal(t, uint64(1), notice.Generation)
	restored, _ := eventOf[Restored](t, cmds)
	require.Equal(t, Restored{Generation: 1, Failed: []int{1}, Relocated: len(notice.Relocations)}, restored, "the driver is told the restore is over")
	watch, to := eventOf[WatchProgress](t, cmds)
	require.Equal(t, WatchProgress{Generation: 1, Step: 9}, watch, "the furthest step of the answers")
	require.Equal(t, EveryPE, to)

	require.Empty(t, c.OnReached(0, 1, 9))
	require.Empty(t, c.OnReached(0, 1, 9), "a PE answering twice is one answer")
	require.Empty(t, c.OnReached(1, 1, 9), "the failed PE does not count")
	require.Empty(t, c.OnReached(2, 1, 8), "an answer for another step does not count")
	require.Empty(t, c.OnReached(2, 0, 9), "an answer for another recovery does not count")
	require.Empty(t, c.OnReached(2, 1, 9))
	require.Equal(t, []Command{ProgressRegained{Generation: 1, Step: 9}}, c.OnReached(3, 1, 9))
	require.Empty(t, c.OnReached(3, 1, 9), "reported once")
	// The survivors re-sent their copies (with the tasks they restored)
	// to their buddies, which confirm: only then may another PE fail.
	confirmCopies(c, 1)

	// A second failure, then a third while the second recovery's watch is
	// pending: the answers to that watch are stale once PE 3 failed. A
	// third failure since the checkpoint is more than the protocol's
	// records survive (f=2): every task rolls back to the checkpoint.
	eventOf[Recover](t, c.OnFailure(2))
	require.Empty(t, c.OnRestored(0, 2, Progress{Step: 12, Offered: true}))
	watch, _ = eventOf[WatchProgress](t, c.OnRestored(3, 2, Progress{Step: 11, Offered: true}))
	require.Equal(t, WatchProgress{Generation: 2, Step: 12}, watch)
	require.Empty(t, c.OnReached(0, 2, 12))
	confirmCopies(c, 2)
	rb, _ := eventOf[Rollback](t, c.OnFailure(3))
	require.Equal(t, uint64(3), rb.Generation)
	require.Empty(t, c.OnReached(0, 2, 12), "stale: the watch of generation 2 is gone")
	require.Empty(t, c.OnReached(3, 2, 12), "stale, and from a failed PE")
	watch, _ = eventOf[WatchProgress](t, c.OnRestored(0, 3, Progress{Step: 13, Offered: true}))
	require.Equal(t, WatchProgress{Generation: 3, Step: 13}, watch)
	require.Equal(t, []Command{ProgressRegained{Generation: 3, Step: 13}}, c.OnReached(0, 3, 13))
}

// Under checkpoint/restart the watch follows the rollback's Resume; a
// failure before any task offered a step has no progress to regain.
func TestCoordinatorWatchesProgressAfterRollback(t *testing.T) {
	c := runningCoordinator(t, 3, logging.KindNone)
	rb, _ := eventOf[Rollback](t, c.OnFailure(0))
	require.Equal(t, uint64(1), rb.Generation)
	require.Empty(t, c.OnRestored(1, 1, Progress{}))
	require.Equal(t, []any{Begin{}, Restored{Generation: 1, RolledBack: true}}, events(c.OnRestored(2, 1, Progress{})),
		"rolled back to the initial checkpoint before any step: the job begins again, with nothing to watch")

	c = runningCoordinator(t, 3, logging.KindNone)
	eventOf[Rollback](t, c.OnFailure(0))
	require.Empty(t, c.OnRestored(1, 1, Progress{Step: 4, Offered: true}))
	cmds := c.OnRestored(2, 1, Progress{Step: 5, Offered: true})
	require.Equal(t, []any{Begin{}, Restored{Generation: 1, RolledBack: true}, WatchProgress{Generation: 1, Step: 5}}, events(cmds))
	require.Empty(t, c.OnReached(1, 1, 5))
	require.Equal(t, []any{ProgressRegained{Generation: 1, Step: 5}}, events(c.OnReached(2, 1, 5)))
}

// onDisk returns a coordinator of 4 PEs that writes its checkpoints to
// disk, whose initial checkpoint is committed, written by every PE, and
// whose manifest the driver was asked for, and reported written.
func onDisk(t *testing.T) *Coordinator {
	t.Helper()
	c := onDiskUnconfirmed(t)
	require.Empty(t, c.OnManifestWritten(InitialEpoch, nil))
	return c
}

// onDiskUnconfirmed is onDisk before the driver reports the manifest.
func onDiskUnconfirmed(t *testing.T) *Coordinator {
	t.Helper()
	layout := []int{0, 1, 2, 3, 0, 1, 2, 3}
	c := NewCoordinator(Config{Size: 4, Protocol: logging.KindPartialDet, Layout: [][]int{layout}, CheckpointDir: "/ckpt"})
	c.Ready()
	for pe := range 4 {
		c.OnStaged(pe, InitialEpoch, 10)
		c.OnBuddyStored((pe+1)%4, InitialEpoch, pe, 0)
	}
	var cmds []Command
	for pe := range 4 {
		cmds = append(cmds, c.OnCommitted(pe, InitialEpoch)...)
		cmds = append(cmds, c.OnDiskWritten(pe, InitialEpoch, migrate.FileEntry{PE: pe}, nil)...)
	}
	wm, _ := eventOf[WriteManifest](t, cmds)
	require.Equal(t, "/ckpt", wm.Dir)
	require.Equal(t, uint64(InitialEpoch), wm.Manifest.Epoch)
	require.Len(t, wm.Manifest.Files, 4)
	require.Equal(t, []any{wm, Begin{}, Started{}}, events(cmds), "the manifest is written before the job begins")
	return c
}

// A manifest the driver could not write stops the job with that error; a
// manifest not yet reported written is no disk checkpoint to fall back
// to.
func TestManifestOutcome(t *testing.T) {
	c := onDiskUnconfirmed(t)
	broken := errors.New("disk full")
	require.Equal(t, []Command{Send{To: EveryPE, Event: Stop{Status: 1}}}, c.OnManifestWritten(InitialEpoch, broken))
	out, done := c.Done()
	require.True(t, done)
	require.ErrorIs(t, out.Err, broken)
	require.ErrorContains(t, out.Err, "could not write the manifest of checkpoint 1 in /ckpt")

	c = onDiskUnconfirmed(t)
	c.OnFailure(1)
	c.OnFailure(2)
	out, done = c.Done()
	require.True(t, done)
	require.ErrorIs(t, out.Err, ErrNoDiskCheckpoint)
	require.ErrorContains(t, out.Err, "none is complete yet")
}

// A driver that cannot read the disk checkpoint a recovery falls back to
// stops the job with its error.
func TestDiskRecordsNotSent(t *testing.T) {
	c := onDisk(t)
	c.OnFailure(1)
	sd, _ := eventOf[SendDiskRecords](t, c.OnFailure(2))
	require.Empty(t, c.OnDiskRecordsSent(sd, nil))
	_, done := c.Done()
	require.False(t, done)
	unreadable := errors.New("checksum mismatch")
	require.Equal(t, []Command{Send{To: EveryPE, Event: Stop{Status: 1}}}, c.OnDiskRecordsSent(sd, unreadable))
	out, done := c.Done()
	require.True(t, done)
	require.ErrorIs(t, out.Err, unreadable)
	require.ErrorContains(t, out.Err, "recovery from disk checkpoint 1 in /ckpt")
}

// A PE that fails while the survivors still wait for the checkpoint
// copies it was giving them: under message logging the tasks whose only
// other copy was on the first failed PE (a PE and its buddy) cannot be
// recovered from memory, and the job stops saying so and how to avoid it;
// with a disk checkpoint every task goes back to it instead.
func TestCopyHolderFailingDuringRestore(t *testing.T) {
	c := runningCoordinator(t, 4, logging.KindPartialDet)
	rec, _ := eventOf[Recover](t, c.OnFailure(1))
	for _, r := range rec.Relocations {
		require.Equal(t, 2, r.CopyPE, "PE 1's buddy holds its copies")
	}
	c.OnFailure(2)
	out, done := c.Done()
	require.True(t, done)
	require.ErrorIs(t, out.Err, migrate.ErrUnrecoverable)
	require.ErrorIs(t, out.Err, ErrNoDiskCheckpoint)
	require.ErrorContains(t, out.Err, "run with --checkpoint-dir")

	c = onDisk(t)
	c.OnFailure(1)
	cmds := c.OnFailure(2)
	rb, to := eventOf[Rollback](t, cmds)
	require.Equal(t, EveryPE, to)
	require.True(t, rb.FromDisk)
	require.Equal(t, uint64(InitialEpoch), rb.Epoch)
	sd, _ := eventOf[SendDiskRecords](t, cmds)
	for lin, pe := range sd.Hosts[0] {
		require.True(t, pe == 0 || pe == 3, "task %d placed on PE %d, a survivor", lin, pe)
	}
}

// After a recovery a PE's tasks (those it restored included) count as
// protected by its buddy only once the buddy confirms it stores the copy
// the PE re-sent in that recovery: a failure of the PE before it is a
// loss of both copies (disk or a clear error), never a plan that asks a
// PE for a copy it does not hold; after it, the tasks recover from the
// buddy. A confirmation of an earlier recovery does not count.
func TestRecoveredTasksAreProtectedOnceTheBuddyConfirms(t *testing.T) {
	setup := func() (*Coordinator, int) {
		c := runningCoordinator(t, 4, logging.KindPartialDet)
		rec, _ := eventOf[Recover](t, c.OnFailure(1))
		for pe := range []int{0, 2, 3} {
			c.OnRestored([]int{0, 2, 3}[pe], 1, Progress{})
		}
		return c, rec.Relocations[0].ToPE
	}
	c, host := setup()
	c.OnFailure(host)
	out, done := c.Done()
	require.True(t, done)
	require.ErrorIs(t, out.Err, migrate.ErrUnrecoverable, "no confirmed copy of the restored task")

	c, host = setup()
	c.OnBuddyStored(migrate.Buddy(host, c.Live()), c.committed, host, 0) // of an earlier generation
	c.OnFailure(host)
	_, done = c.Done()
	require.True(t, done, "a confirmation of another recovery does not count")

	c, host = setup()
	buddy := migrate.Buddy(host, c.Live())
	c.OnBuddyStored(buddy, c.committed, host, 1)
	rec, _ := eventOf[Recover](t, c.OnFailure(host))
	require.NotEmpty(t, rec.Relocations)
	for _, r := range rec.Relocations {
		require.Equal(t, buddy, r.CopyPE, "the confirmed buddy gives the copies")
	}
}

// A PE that fails after the coordinator committed a checkpoint, before
// every live PE reported it committed: nothing starts until the last of
// them did (a PE that has not committed must get no message of the next
// period, replayed or new), then the job resumes (under message logging)
// and recovers, from every PE that failed in the meantime. A failure
// once every live PE committed, while only files are written, recovers
// at once.
func TestFailureBeforeEveryPECommittedWaitsForTheCommits(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			c := runningCoordinator(t, 5, kind)
			epoch := c.nextEpoch()
			cmds := c.startCheckpoint(epoch)
			live := c.Live()
			for p := range 5 {
				cmds = append(cmds, c.OnStaged(p, epoch, 10)...)
				cmds = append(cmds, c.OnBuddyStored(migrate.Buddy(p, live), epoch, p, 0)...)
			}
			eventOf[CommitCheckpoint](t, cmds)
			require.Empty(t, c.OnCommitted(0, epoch))
			require.Empty(t, c.OnFailure(1), "PEs 2, 3 and 4 have not committed yet")
			require.Empty(t, c.OnCommitted(2, epoch))
			require.Empty(t, c.OnFailure(3), "PE 4 has not committed yet")
			require.Empty(t, c.OnCommitted(1, epoch), "a failed PE's report counts for nothing")
			cmds = c.OnCommitted(4, epoch)
			evs := events(cmds)
			if kind == logging.KindNone {
				rb, _ := eventOf[Rollback](t, cmds)
				require.Equal(t, epoch, rb.Epoch)
				require.NotContains(t, evs, Resume{}, "every task rolls back: nothing resumes")
			} else {
				require.Equal(t, Resume{}, evs[0], "the PEs wait for Resume: they get it first")
				var recs []Recover
				for _, ev := range evs {
					if r, ok := ev.(Recover); ok {
						recs = append(recs, r)
					}
				}
				require.Len(t, recs, 2, "one recovery per failed PE: %v", evs)
				require.Equal(t, []int{1}, recs[0].Failed)
				require.Equal(t, []int{3}, recs[1].Failed)
			}
			require.Empty(t, c.OnCommitted(4, epoch), "the commit is over")
		})
	}

	// Every live PE committed; only the files are being written.
	c := onDiskUnconfirmed(t)
	require.Empty(t, c.OnManifestWritten(InitialEpoch, nil))
	epoch := c.nextEpoch()
	cmds := c.startCheckpoint(epoch)
	live := c.Live()
	for p := range 4 {
		cmds = append(cmds, c.OnStaged(p, epoch, 10)...)
		cmds = append(cmds, c.OnBuddyStored(migrate.Buddy(p, live), epoch, p, 0)...)
	}
	eventOf[CommitCheckpoint](t, cmds)
	for p := range 4 {
		require.Empty(t, c.OnCommitted(p, epoch), "PE %d's file is not written", p)
	}
	require.Empty(t, c.OnDiskWritten(0, epoch, migrate.FileEntry{PE: 0}, nil))
	cmds = c.OnFailure(2)
	require.Equal(t, Resume{}, events(cmds)[0])
	rec, _ := eventOf[Recover](t, cmds)
	require.Equal(t, []int{2}, rec.Failed)
	require.Empty(t, c.OnDiskWritten(1, epoch, migrate.FileEntry{PE: 1}, nil), "the checkpoint is over: no manifest")
}

// Two buddies that fail after the coordinator committed a checkpoint,
// before every live PE reported it committed, and whose disk copy of it
// is not complete: once the last live PE commits, the first failure's
// recovery finds both copies of some task lost and sends every task back
// to the disk checkpoint, on the survivors, and that rollback covers the
// second failure too. No recovery of the second failure follows it (one
// of a new generation would supersede the rollback, which would then
// never end: the job went quiet), and the survivors' answers to the
// rollback end it.
func TestBuddiesFailingBeforeEveryPECommittedRollBackToDiskOnce(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindNone, logging.KindFullDet, logging.KindPartialDet} {
		t.Run(kind.String(), func(t *testing.T) {
			layout := []int{0, 1, 2, 3, 0, 1, 2, 3}
			c := NewCoordinator(Config{Size: 4, Protocol: kind, Layout: [][]int{layout}, CheckpointDir: "/ckpt"})
			c.Ready()
			for pe := range 4 {
				c.OnStaged(pe, InitialEpoch, 10)
				c.OnBuddyStored((pe+1)%4, InitialEpoch, pe, 0)
			}
			for pe := range 4 {
				c.OnCommitted(pe, InitialEpoch)
				c.OnDiskWritten(pe, InitialEpoch, migrate.FileEntry{PE: pe}, nil)
			}
			require.Empty(t, c.OnManifestWritten(InitialEpoch, nil))

			epoch := c.nextEpoch()
			cmds := c.startCheckpoint(epoch)
			for p := range 4 {
				cmds = append(cmds, c.OnStaged(p, epoch, 10)...)
				cmds = append(cmds, c.OnBuddyStored((p+1)%4, epoch, p, 0)...)
			}
			eventOf[CommitCheckpoint](t, cmds)
			require.Empty(t, c.OnCommitted(0, epoch))
			require.Empty(t, c.OnFailure(1), "PEs 2 and 3 have not committed yet")
			require.Empty(t, c.OnFailure(2), "PE 3 has not committed yet")
			cmds = c.OnCommitted(3, epoch)
			var rollbacks []Rollback
			for _, ev := range events(cmds) {
				switch ev := ev.(type) {
				case Rollback:
					rollbacks = append(rollbacks, ev)
				case Recover:
					require.Failf(t, "a recovery after the rollback", "%v", events(cmds))
				}
			}
			require.Len(t, rollbacks, 1, "%v", events(cmds))
			rb := rollbacks[0]
			require.True(t, rb.FromDisk)
			require.Equal(t, uint64(InitialEpoch), rb.Epoch, "checkpoint %d has no complete disk copy", epoch)
			require.Equal(t, []int{1, 2}, rb.Failed)
			sd, _ := eventOf[SendDiskRecords](t, cmds)
			for lin, pe := range sd.Hosts[0] {
				require.True(t, pe == 0 || pe == 3, "task %d placed on PE %d, a survivor", lin, pe)
			}

			require.Empty(t, c.OnRestored(0, rb.Generation, Progress{}))
			require.NotEmpty(t, c.OnRestored(3, rb.Generation, Progress{}), "the survivors' answers end the rollback")
			_, done := c.Done()
			require.False(t, done)
		})
	}
}

// With f = 1 (Config.Failures) one failure since the checkpoint is
// recovered by replay, and a second one rolls every task back to the
// checkpoint, with the reason in the notes; with the default f = 2 the
// second is recovered by replay too.
func TestFailureBoundOneRollsBackAtTheSecondFailure(t *testing.T) {
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
		restored := func(c *Coordinator) {
			for _, p := range []int{0, 2, 3} {
				c.OnRestored(p, 1, Progress{Step: 7, Offered: true})
			}
			confirmCopies(c, 1)
		}
		c := runningCoordinatorWith(t, Config{Size: 4, Protocol: kind, Failures: 1})
		eventOf[Recover](t, c.OnFailure(1))
		restored(c)
		rb, _ := eventOf[Rollback](t, c.OnFailure(2))
		require.Equal(t, []int{1, 2}, rb.Failed, "both PEs failed since the checkpoint")
		_, done := c.Done()
		require.False(t, done, "%v: the job goes on from the checkpoint", kind)
		notes := strings.Join(c.Notes(), "\n")
		require.Contains(t, notes, "PE 2 failed: logging: more PE failures since the last checkpoint than the protocol survives: 2 PEs failed since the last checkpoint")
		require.Contains(t, notes, "(f=1); every task rolls back to checkpoint 1 instead")

		def := runningCoordinatorWith(t, Config{Size: 4, Protocol: kind})
		eventOf[Recover](t, def.OnFailure(1))
		restored(def)
		eventOf[Recover](t, def.OnFailure(2))
	}
}
