package logging

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/commutative"
)

// receivedSet against the obvious map, over random sequences of
// additions, lookups and checkpoints: senders whose SRNs to the task are
// equally spaced, irregular, out of order (as after a recovery or a
// migration), repeated (duplicates), with commutative paths, and more
// senders than the set scans.
func TestReceivedSetMatchesMap(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var set receivedSet
		naive := map[MessageID]struct{}{}
		senders := 1 + rng.Intn(2*receivedScanMax)
		next := make([]uint64, senders) // each sender's next SRN
		steps := make([]uint64, senders)
		for i := range steps {
			steps[i] = 1 + uint64(rng.Intn(4))
		}
		var sent []MessageID // identities sent so far, to draw old ones from
		check := func(id MessageID) {
			_, want := naive[id]
			require.Equal(t, want, set.contains(id), "seed %d: contains(%v)", seed, id)
		}
		for op := 0; op < 400; op++ {
			sender := rng.Intn(senders)
			var id MessageID
			switch r := rng.Intn(100); {
			case r < 55: // the next message in send order
				next[sender] += steps[sender]
				if rng.Intn(5) == 0 {
					next[sender] += uint64(rng.Intn(7)) // an irregular gap
				}
				id = MessageID{Sender: TaskID(sender), SRN: next[sender]}
			case r < 70 && len(sent) > 0: // an old one again, or skipped
				id = sent[rng.Intn(len(sent))]
				if rng.Intn(2) == 0 && id.CPI.IsEmpty() && id.SRN > 1 {
					id.SRN -= uint64(1 + rng.Intn(int(min(id.SRN-1, 5))))
				}
			case r < 80: // a message from a region handler
				trigger := MessageID{Sender: TaskID(rng.Intn(senders)), SRN: uint64(rng.Intn(20))}
				id = MessageID{Sender: TaskID(sender), SRN: uint64(rng.Intn(20)), CPI: commutative.Child(trigger, uint32(rng.Intn(3)))}
			case r < 95: // a lookup of an identity maybe never sent
				id = MessageID{Sender: TaskID(rng.Intn(senders + 2)), SRN: uint64(rng.Intn(int(next[sender] + 3)))}
				check(id)
				continue
			case r < 97: // a checkpoint
				set.reset()
				clear(naive)
				require.Zero(t, set.len())
				continue
			default:
				require.Equal(t, len(naive), set.len(), "seed %d", seed)
				var want []MessageID
				for id := range naive {
					want = append(want, id)
				}
				slices.SortFunc(want, MessageID.Compare)
				got := set.list()
				require.Equal(t, want, got, "seed %d", seed)
				// A set rebuilt from the list (migration, restore) is
				// the same set.
				var rebuilt receivedSet
				for _, id := range got {
					rebuilt.add(id)
				}
				require.Equal(t, got, rebuilt.list(), "seed %d", seed)
				continue
			}
			check(id)
			set.add(id)
			naive[id] = struct{}{}
			sent = append(sent, id)
			check(id)
		}
		for id := range naive {
			require.True(t, set.contains(id), "seed %d: %v", seed, id)
		}
	}
}

// Equally spaced SRNs from a sender take one run, however many; the
// common path allocates nothing once the sender is known.
func TestReceivedSetRegularSendsStayCompact(t *testing.T) {
	var set receivedSet
	for i := uint64(1); i <= 10_000; i++ {
		for s := TaskID(0); s < 3; s++ {
			set.add(MessageID{Sender: s, SRN: 7*i + uint64(s)})
		}
	}
	require.Len(t, set.senders, 3)
	for _, f := range set.senders {
		require.Nil(t, f.more, "sender %d", f.sender)
	}
	require.Equal(t, 30_000, set.len())
	require.True(t, set.contains(MessageID{Sender: 1, SRN: 7*5000 + 1}))
	require.False(t, set.contains(MessageID{Sender: 1, SRN: 7*5000 + 2}))
	srn := uint64(7*10_000 + 1)
	allocs := testing.AllocsPerRun(1000, func() {
		srn += 7
		id := MessageID{Sender: 1, SRN: srn}
		if set.contains(id) {
			t.Fatal("a new identity is in the set")
		}
		set.add(id)
	})
	require.Zero(t, allocs)
}
