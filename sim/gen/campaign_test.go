package gen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/apps/appkit/apptest"

	"github.com/gochare/gochare/job/inprocess"
)

// scenario is one random fault scenario of the campaign.
type scenario struct {
	args     []string
	pes      int
	kind     int
	every    uint64
	balancer string
	kills    [][2]uint64 // pe, step
	event    string      // "", "ckpt:E:PE", "migrate:PE"
}

func drawScenario(seed uint64) scenario {
	rng := rand.New(rand.NewPCG(seed, 0x63616d70))
	sc := scenario{args: []string{"--seed", fmt.Sprint(seed), "--steps", fmt.Sprint(3 + rng.IntN(5))}}
	if rng.IntN(3) == 0 {
		sc.args = append(sc.args, "--work", "5000")
	}
	sc.pes = 2 + rng.IntN(3)
	sc.kind = rng.IntN(3)
	sc.every = 1 + rng.Uint64N(2)
	if rng.IntN(2) == 0 {
		sc.balancer = []string{"greedy", "refine"}[rng.IntN(2)]
	}
	last, _ := App.LastStep(sc.args)
	switch rng.IntN(4) {
	case 0, 1:
		sc.kills = append(sc.kills, [2]uint64{uint64(rng.IntN(sc.pes)), rng.Uint64N(last + 1)})
	case 2:
		// Two failures the in-memory checkpoints survive: PEs that are
		// not each other's buddy, on 4 PEs.
		sc.pes = 4
		a := rng.IntN(sc.pes)
		b := (a + 2) % sc.pes
		s := rng.Uint64N(last + 1)
		sc.kills = append(sc.kills, [2]uint64{uint64(a), s}, [2]uint64{uint64(b), min(last, s+rng.Uint64N(2))})
	case 3:
		pe := rng.IntN(sc.pes)
		if sc.balancer != "" && rng.IntN(2) == 0 {
			// Right after the first migration that moves tasks.
			sc.event = fmt.Sprintf("migrate:%d", pe)
		} else {
			sc.event = fmt.Sprintf("ckpt:%d:%d", 2+rng.IntN(int(last/sc.every)+1), pe)
		}
	}
	return sc
}

func (sc scenario) String() string {
	return fmt.Sprintf("args %q pes %d %v every %d balancer %q kills %v event %q", sc.args, sc.pes, protocols[sc.kind], sc.every, sc.balancer, sc.kills, sc.event)
}

func (sc scenario) options() []inprocess.Option {
	opts := []inprocess.Option{inprocess.WithProtocol(protocols[sc.kind]), inprocess.WithCheckpointEvery(sc.every), inprocess.WithStallTimeout(10 * time.Second)}
	if sc.balancer != "" {
		opts = append(opts, inprocess.WithBalancer(sc.balancer))
	}
	for _, k := range sc.kills {
		opts = append(opts, inprocess.WithKill(int(k[0]), k[1]))
	}
	if f := strings.Split(sc.event, ":"); f[0] == "ckpt" {
		e, _ := strconv.ParseUint(f[1], 10, 64)
		pe, _ := strconv.Atoi(f[2])
		opts = append(opts, inprocess.WithKillAfterEvent(pe, checkpointEpoch(e)))
	} else if f[0] == "migrate" {
		pe, _ := strconv.Atoi(f[1])
		opts = append(opts, inprocess.WithKillAfterEvent(pe, firstMigration()))
	}
	return opts
}

// A seeded fault campaign: each seed draws a program and a scenario
// (PE count, protocol, checkpoint period, balancer, and one PE killed at a
// step, two PEs that are not buddies killed at close steps, or a PE
// killed after a checkpoint is taken or, with a balancer, right after
// the first migration that moves tasks). Every run
// must print the serial reference's line. A failing seed is replayed with
// go test ./sim/gen -run 'TestFaultCampaign/seed=N$' (GEN_CAMPAIGN=M runs
// seeds 0 to M-1 instead of 0 to 149).
func TestFaultCampaign(t *testing.T) {
	seeds := uint64(150)
	if testing.Short() {
		seeds = 30
	}
	if n, err := strconv.ParseUint(os.Getenv("GEN_CAMPAIGN"), 10, 64); err == nil {
		seeds = n // a longer campaign: GEN_CAMPAIGN=2000
	}
	ran, recovered := 0, 0
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ran++
			sc := drawScenario(seed)
			res := run(t, sc.pes, sc.args, sc.String(), sc.options()...)
			require.Equal(t, []string{reference(t, sc.args)}, res.Output, sc.String())
			if len(sc.kills) > 0 {
				apptest.RequireRecovered(t, res)
			}
			if s := apptest.Sum(res); s.Restored+s.RolledBack > 0 {
				recovered++
			}
		})
	}
	t.Logf("%d of %d runs recovered from a failure", recovered, ran)
	require.Greater(t, recovered, ran/2, "most scenarios kill a PE")
}
