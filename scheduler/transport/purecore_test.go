package transport_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/scheduler/transport"
)

// Two exported Cores over a network that loses, duplicates and reorders
// frames: every payload arrives once, in order, and the backlog drains.
func TestCoreRepairsLossyNetwork(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			type inFlight struct {
				to int
				f  *transport.Frame
			}
			var flight []inFlight
			got := [2][]string{}
			cores := make([]*transport.Core, 2)
			for r := range cores {
				c, err := transport.NewCore(transport.CoreConfig{Rank: r, Size: 2, MaxFrame: 128, Window: 512, ResendTicks: 3},
					func(to int, f *transport.Frame) {
						if rng.Float64() < 0.2 {
							return // lost
						}
						flight = append(flight, inFlight{to, proto.Clone(f).(*transport.Frame)})
						if rng.Float64() < 0.1 {
							flight = append(flight, inFlight{to, proto.Clone(f).(*transport.Frame)})
						}
					},
					func(from int, payload []byte) { got[r] = append(got[r], string(payload)) })
				require.NoError(t, err)
				cores[r] = c
			}
			const n = 200
			var want []string
			for i := range n {
				p := fmt.Sprintf("payload %d %s", i, string(make([]byte, rng.IntN(300))))
				want = append(want, p)
				cores[0].Send(1, []byte(p))
				if i%7 == 0 {
					cores[0].Flush()
				}
			}
			cores[0].Flush()
			for step := 0; step < 100000 && (len(got[1]) < n || cores[0].Backlog() > 0); step++ {
				if len(flight) == 0 || rng.IntN(10) == 0 {
					for _, c := range cores {
						c.Tick()
					}
					continue
				}
				i := rng.IntN(len(flight))
				fr := flight[i]
				flight = append(flight[:i], flight[i+1:]...)
				require.NoError(t, cores[fr.to].Receive(fr.f))
			}
			require.Equal(t, want, got[1])
			require.Zero(t, cores[0].Backlog())
			require.Positive(t, cores[0].Stats().Resends, "losses were repaired by resends")
		})
	}
}

// NewCore refuses a bad configuration and a frame from outside the job.
func TestCoreErrors(t *testing.T) {
	nop := func(int, *transport.Frame) {}
	del := func(int, []byte) {}
	_, err := transport.NewCore(transport.CoreConfig{Rank: 2, Size: 2}, nop, del)
	require.ErrorIs(t, err, transport.ErrConfig)
	_, err = transport.NewCore(transport.CoreConfig{Rank: 0, Size: 2, MaxFrame: 1024, Window: 100}, nop, del)
	require.ErrorIs(t, err, transport.ErrConfig)
	_, err = transport.NewCore(transport.CoreConfig{Rank: 0, Size: 2}, nil, del)
	require.ErrorIs(t, err, transport.ErrConfig)
	c, err := transport.NewCore(transport.CoreConfig{Rank: 0, Size: 2}, nop, del)
	require.NoError(t, err)
	err = c.Receive(&transport.Frame{From: 5, Seq: 1})
	require.True(t, errors.Is(err, transport.ErrUnknownRank), "got %v", err)
}
