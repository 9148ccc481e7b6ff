package scale

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/apps/lulesh"
	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/sim"
)

// marginal is a job's protocol counters summed over its PEs, from the
// whole-job simulator or the model.
type marginal struct{ dets, piggyback, logged, sent int }

// simTotals runs the real job in the whole-job simulator (real PEs,
// transport, coordinator; no fault) and sums its PEs' counters.
func simTotals(t *testing.T, app actor.App, args []string, pes int, kind logging.Kind) marginal {
	t.Helper()
	res, err := sim.Run(sim.Config{Seed: 1, App: app, Args: args, PEs: pes, Protocol: kind})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.False(t, res.Hung)
	var m marginal
	for _, st := range res.Stats {
		m.dets += st.Protocol.Determinants
		m.piggyback += st.Protocol.PiggybackedBytes
		m.logged += st.Protocol.LoggedBytes
		m.sent += st.Protocol.Sent
	}
	return m
}

func modelTotals(t *testing.T, pat Pattern, kind logging.Kind, steps int) marginal {
	t.Helper()
	e := NewEngine(pat, kind)
	_, err := e.Run(steps)
	require.NoError(t, err)
	var m marginal
	for pe := range pat.PEs() {
		tot := e.Totals(pe)
		m.dets += tot.Determinants
		m.piggyback += tot.PiggybackBytes
		m.logged += tot.LogBytes
		m.sent += tot.Sent
	}
	return m
}

// The model agrees with the whole-job simulator on small jobs of the
// three mini-apps: over the steps between a shorter and a longer run of
// the same job (which cancels what the model leaves out: the start, the
// final reductions), the messages sent and the determinants created are
// the same, the bytes logged within 2% (the model sizes the messages
// from the mini-apps' message types, with typical keys), and the bytes
// piggybacked within a factor of 2 either way (the model's PEs run in
// lockstep rounds, the simulator's at random delays: when a record
// becomes stable differs; measured 0.7 to 1.6).
func TestModelAgreesWithSimulator(t *testing.T) {
	const short, long = 4, 8
	stencil, err := NewStencil(8, [3]int{2, 2, 4}, [3]int{4, 4, 4})
	require.NoError(t, err)
	lul, err := NewLulesh(8, [3]int{2, 2, 2}, 3)
	require.NoError(t, err)
	lmd, err := NewLeanMD(4, [3]int{3, 3, 3}, [3]int{1, 1, 1}, 4)
	require.NoError(t, err)
	cases := []struct {
		pat  Pattern
		app  actor.App
		args func(steps int) []string
	}{
		{stencil, stencil3d.App, func(n int) []string {
			return []string{"--grid", "8,8,16", "--chunk", "4,4,4", "--iterations", fmt.Sprint(n)}
		}},
		{lul, lulesh.App, func(n int) []string {
			return []string{"--size", "6", "--chunk", "3,3,3", "--iterations", fmt.Sprint(n)}
		}},
		{lmd, leanmd.App, func(n int) []string {
			return []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "4", "--steps", fmt.Sprint(n), "--migrate-every", "0"}
		}},
	}
	for _, c := range cases {
		for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
			t.Run(fmt.Sprintf("%s/%v", c.pat.Name(), kind), func(t *testing.T) {
				simShort, simLong := simTotals(t, c.app, c.args(short), c.pat.PEs(), kind), simTotals(t, c.app, c.args(long), c.pat.PEs(), kind)
				modShort, modLong := modelTotals(t, c.pat, kind, short), modelTotals(t, c.pat, kind, long)
				simD := marginal{simLong.dets - simShort.dets, simLong.piggyback - simShort.piggyback, simLong.logged - simShort.logged, simLong.sent - simShort.sent}
				modD := marginal{modLong.dets - modShort.dets, modLong.piggyback - modShort.piggyback, modLong.logged - modShort.logged, modLong.sent - modShort.sent}
				t.Logf("simulator %+v, model %+v (steps %d to %d, all PEs)", simD, modD, short, long)
				require.Equal(t, simD.sent, modD.sent, "messages sent")
				require.Equal(t, simD.dets, modD.dets, "determinants created")
				require.InEpsilon(t, simD.logged, modD.logged, 0.02, "bytes logged")
				if kind == logging.KindFullDet {
					require.Positive(t, simD.dets)
				}
				if kind == logging.KindPartialDet {
					// No determinant, and no progress record: no task
					// of the mini-apps takes an order-dependent message
					// (logging.Config.OrderFree).
					require.Zero(t, simD.piggyback, "bytes piggybacked")
					require.Zero(t, modD.piggyback, "bytes piggybacked by the model")
					return
				}
				ratio := float64(modD.piggyback) / float64(simD.piggyback)
				require.True(t, ratio > 0.5 && ratio < 2, "bytes piggybacked: model %d, simulator %d (ratio %.2f)", modD.piggyback, simD.piggyback, ratio)
			})
		}
	}
}
