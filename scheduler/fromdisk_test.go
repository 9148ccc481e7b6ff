package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

// diskControl records what a PE reports that a disk rollback is about.
type diskControl struct {
	nopControl
	errs     *[]error
	restored *[]uint64
}

func (c diskControl) Fail(err error) { *c.errs = append(*c.errs, err) }

func (c diskControl) Restored(generation uint64, _ int, _ job.Progress) {
	*c.restored = append(*c.restored, generation)
}

// A PE fails after a migration, before the checkpoint that records it
// committed, and its buddy fails while it gives the copies of the failed
// PE's tasks: both copies of some checkpoint are lost, and every task
// goes back to the disk checkpoint. A task that had moved away from the
// first failed PE was settled at that failure (it is that PE's task,
// restored from the checkpoint where the recovery placed it): every PE
// places it where the coordinator does, so the PE the coordinator gives
// its disk record hosts it, and every task is restored exactly once.
// Each PE once sent such a task back to the failed PE it came from, and
// the PE the coordinator gave its record to refused it ("which does not
// host it"; simulator seeds 16001 and 23383).
//
// The events are the real coordinator's, for every choice of the first
// failed PE; the PEs are this package's, given the events and each
// other's messages up to the first failure, and the disk records as the
// driver hands them out (SendDiskRecords).
func TestDiskRollbackPlacesSettledMovesAsTheCoordinator(t *testing.T) {
	const size = 4
	settledElsewhere := 0
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet} {
		for first := range size {
			buddy := (first + 1) % size
			t.Run(fmt.Sprintf("%v/PE %d then PE %d", kind, first, buddy), func(t *testing.T) {
				app := stepApp(8, 1)
				jb, err := Define(app, nil)
				require.NoError(t, err)
				c := job.NewCoordinator(job.Config{Size: size, Protocol: kind, Layout: Layout(jb, size), CheckpointDir: "/ckpt", Balancer: "greedy"})
				var errs []error
				var restored [][]uint64
				pes := make([]*PE, size)
				nets := make([]*recordingNet, size)
				restored = make([][]uint64, size)
				for r := range pes {
					nets[r] = &recordingNet{sent: map[int][][]byte{}}
					pes[r], err = New(Config{Rank: r, Size: size, JobID: 42, App: app, Protocol: kind, Net: nets[r],
						Control: diskControl{errs: &errs, restored: &restored[r]}})
					require.NoError(t, err)
				}
				live := []bool{true, true, true, true}
				// deliver hands the live PEs the coordinator's events of
				// the kinds this test is about, then their messages to
				// each other until none is left.
				deliver := func(cmds []job.Command) (sd []job.SendDiskRecords) {
					for _, cmd := range cmds {
						switch cmd := cmd.(type) {
						case job.Send:
							switch cmd.Event.(type) {
							case job.TakeCheckpoint, job.CommitCheckpoint, job.Migrate, job.Recover, job.Rollback:
							default:
								continue
							}
							for r, pe := range pes {
								if live[r] && (cmd.To == job.EveryPE || int(cmd.To) == r) {
									pe.Event(cmd.Event)
									runPosted(pe, nets[r])
								}
							}
						case job.SendDiskRecords:
							sd = append(sd, cmd)
						}
					}
					for more := true; more; {
						more = false
						for from, n := range nets {
							for to, payloads := range n.sent {
								delete(n.sent, to)
								if !live[from] || !live[to] {
									continue
								}
								for _, p := range payloads {
									pes[to].Receive(from, p)
									runPosted(pes[to], nets[to])
									more = true
								}
							}
						}
					}
					return sd
				}

				// The initial checkpoint, committed and on disk: its records
				// are what the driver reads back.
				deliver(c.Ready())
				for pe := range size {
					c.OnStaged(pe, job.InitialEpoch, 10)
					c.OnBuddyStored((pe+1)%size, job.InitialEpoch, pe, 0)
				}
				deliver([]job.Command{job.Send{To: job.EveryPE, Event: job.CommitCheckpoint{Epoch: job.InitialEpoch}}})
				disk := map[migrate.TaskRef]migrate.TaskRecord{}
				var cmds []job.Command
				for pe := range size {
					own, ok := pes[pe].store.Own(job.InitialEpoch)
					require.True(t, ok)
					for _, rec := range own {
						disk[rec.Ref()] = rec
					}
					c.OnCommitted(pe, job.InitialEpoch)
					cmds = append(cmds, c.OnDiskWritten(pe, job.InitialEpoch, migrate.FileEntry{PE: pe}, nil)...)
				}
				require.True(t, slices.ContainsFunc(cmds, func(cmd job.Command) bool { _, ok := cmd.(job.WriteManifest); return ok }))
				c.OnManifestWritten(job.InitialEpoch, nil)

				// The workers of PE 0 are the heavy ones: the balancer moves
				// tasks, and every PE takes the moves.
				cmds = nil
				for range 2 {
					// The second round is the one the first, balanced,
					// started at once (job.Coordinator.OnIdle); the first
					// a tick's.
					var probe job.Probe
					if len(cmds) == 0 {
						cmds = c.Tick()
					}
					for _, cmd := range cmds {
						if s, ok := cmd.(job.Send); ok {
							if p, ok := s.Event.(job.Probe); ok {
								probe = p
							}
						}
					}
					require.NotZero(t, probe.Round, "a round of probes")
					cmds = nil
					for pe := range size {
						cmds = append(cmds, c.OnIdle(pe, job.IdleStatus{Round: probe.Round, AtSync: 2, SyncTasks: 2})...)
					}
				}
				cmds = nil
				workers := collectionNamed(t, pes[0], "workers")
				coll := int(workers.def.ID)
				for pe := range size {
					var loads []migrate.TaskLoad
					for _, lin := range []int{2 * pe, 2*pe + 1} {
						load := 1.0
						if pe == 0 {
							load = 10
						}
						loads = append(loads, migrate.TaskLoad{Task: migrate.TaskRef{Collection: coll, Lin: lin}, PE: pe, Load: load})
					}
					cmds = append(cmds, c.OnLoads(pe, loads)...)
				}
				var moves []migrate.Move
				for _, cmd := range cmds {
					if s, ok := cmd.(job.Send); ok {
						if m, ok := s.Event.(job.Migrate); ok {
							moves = m.Moves
						}
					}
				}
				require.NotEmpty(t, moves)
				deliver(cmds)
				cmds = nil
				for pe := range size {
					cmds = append(cmds, c.OnMigrated(pe)...)
				}
				deliver(cmds) // TakeCheckpoint of the next epoch: it is not committed

				// PE first fails: its tasks, those that left it included, are
				// restored elsewhere; its buddy, which was to give their
				// copies, fails before it gave them.
				live[first] = false
				var rec job.Recover
				cmds = c.OnFailure(first)
				for _, cmd := range cmds {
					if s, ok := cmd.(job.Send); ok {
						if r, ok := s.Event.(job.Recover); ok {
							rec = r
						}
					}
				}
				require.True(t, rec.UndoMoves)
				deliver(cmds)
				for _, r := range rec.Relocations {
					for _, mv := range moves {
						if mv.Task == r.Task && mv.From == first && r.ToPE != mv.To && r.ToPE != buddy {
							settledElsewhere++
						}
					}
				}
				live[buddy] = false
				sds := deliver(c.OnFailure(buddy))
				require.Len(t, sds, 1, "every task goes back to the disk checkpoint")
				sd := sds[0]

				// The driver gives each PE the records of the tasks the
				// coordinator places on it.
				for r, pe := range pes {
					if !live[r] {
						continue
					}
					cs := pe.colls
					for ci := range cs {
						for lin, home := range cs[ci].homeOf {
							require.Equal(t, sd.Hosts[ci][lin], int(home), "PE %d places task %d[%d] as the coordinator", r, ci, lin)
						}
					}
					var recs []migrate.TaskRecord
					for ci, hs := range sd.Hosts {
						for lin, host := range hs {
							if host == r {
								recs = append(recs, disk[migrate.TaskRef{Collection: ci, Lin: lin}])
							}
						}
					}
					pe.Event(DiskRecords{Generation: sd.Generation, Records: recs, Last: true})
					runPosted(pe, nets[r])
					require.Empty(t, errs)
					require.NotEmpty(t, restored[r])
					require.Equal(t, sd.Generation, restored[r][len(restored[r])-1], "PE %d restored its tasks", r)
				}
			})
		}
	}
	require.NotZero(t, settledElsewhere, "a task that left the first failed PE was restored on a survivor it had not moved to")
}
