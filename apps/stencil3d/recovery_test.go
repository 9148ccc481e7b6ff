package stencil3d

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/job/inprocess"
	"github.com/gochare/gochare/logging"
)

// PEs die mid-run (in process, losing everything as a SIGKILL would); the
// job still ends with the failure-free output, under each protocol: one
// failure, a second failure while the first recovery replays, and two
// failures of PEs that are not each other's buddy at the same step.
func TestRecoveryInProcess(t *testing.T) {
	args := []string{"--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "45"}
	clean := apptest.Run(t, App, 4, args)
	scenarios := []struct {
		name  string
		kills map[int]uint64 // PE -> step
	}{
		{"one failure", map[int]uint64{1: 27}},
		{"second failure during recovery", map[int]uint64{1: 37, 2: 39}},
		{"two non-buddy PEs at once", map[int]uint64{1: 25, 3: 25}},
	}
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		for _, sc := range scenarios {
			t.Run(fmt.Sprintf("%v/%s", kind, sc.name), func(t *testing.T) {
				opts := []inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(10)}
				for pe, step := range sc.kills {
					opts = append(opts, inprocess.WithKill(pe, step))
				}
				res := apptest.Run(t, App, 4, args, opts...)
				require.Equal(t, clean.Output[:4], res.Output[:4], "results after recovery equal the failure-free ones")
				for pe, st := range res.Stats {
					if kind != logging.KindNone && sc.kills[pe] == 0 {
						require.Zero(t, st.RolledBack, "PE %d survived and must not roll back", pe)
					}
				}
				sum := apptest.Sum(res)
				require.Positive(t, sum.Restored, "the failed PEs' tasks were restored elsewhere")
				if kind == logging.KindNone {
					require.Positive(t, sum.RolledBack)
				}
				if kind == logging.KindPartialDet {
					require.Zero(t, sum.Determinants, "Stencil3D's receptions are all commutative or ordered")
				}
			})
		}
	}
}

// The load balancer moves chunks between PEs at sync points; the results
// are bitwise those of a run without moves, also with a failure after the
// moves.
func TestMigrationInProcess(t *testing.T) {
	args := []string{"--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "45"}
	clean := apptest.Run(t, App, 4, args)
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindNone} {
		for _, kill := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/kill=%v", kind, kill), func(t *testing.T) {
				opts := []inprocess.Option{inprocess.WithProtocol(kind), inprocess.WithCheckpointEvery(10), inprocess.WithBalancer("greedy")}
				if kill {
					opts = append(opts, inprocess.WithKill(2, 33))
				}
				res := apptest.Run(t, App, 4, args, opts...)
				require.Equal(t, clean.Output[:4], res.Output[:4])
				require.Positive(t, apptest.Sum(res).MigratedIn, "the balancer moved tasks")
				if kind == logging.KindNone {
					require.Positive(t, given(res), "faces to chunks on the same PE were handed over")
				}
			})
		}
	}
}

// given is the number of messages handed over unencoded in res.
func given(res inprocess.Result) uint64 {
	var n uint64
	for _, st := range res.Stats {
		n += st.Given
	}
	return n
}

// A face to a chunk on the same PE is handed over as the sender gave it
// (Proxy.Give), buffer and all, under --ft none and under a logging
// protocol alike (none logs a message between two tasks of one PE), and
// the chunks recycle the buffers they receive for their own faces: every
// face between chunks of one PE goes so, and the results are bitwise
// those of the serial solver and the same under both, on 1, 2 and 3 PEs.
func TestGivenFacesInProcess(t *testing.T) {
	args := []string{"--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "12"}
	cfg, err := ParseConfig(args)
	require.NoError(t, err)
	for _, pes := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(pes, " PEs"), func(t *testing.T) {
			logged := apptest.Run(t, App, pes, args, inprocess.WithProtocol(logging.KindPartialDet))
			res := apptest.Run(t, App, pes, args, inprocess.WithProtocol(logging.KindNone))
			require.Equal(t, logged.Output[:4], res.Output[:4])
			require.Equal(t, serialDigest(cfg), res.Output[2])
			require.Equal(t, given(res), given(logged), "the same faces handed over under a logging protocol")
			faces := uint64(cfg.NumChunks() * NumSides * cfg.Iterations)
			if pes == 1 {
				require.Equal(t, faces, given(res), "every face is handed over on one PE")
				return
			}
			// Faces to chunks on another PE are encoded.
			require.Positive(t, given(res))
			require.Less(t, given(res), faces)
		})
	}
}
