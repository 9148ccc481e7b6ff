package logging

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// naiveUnstable is what the obvious rule piggybacks on every envelope:
// every determinant and progress record held that is not stable, by a
// scan of all of them.
func naiveUnstable(e *engine) ([]determinantKey, []Progress) {
	var dets []determinantKey
	for d := range e.determinants.all() {
		if !e.isStable(d) {
			dets = append(dets, determinantKey{d.receiver, d.rsn})
		}
	}
	var progress []Progress
	for task, p := range e.progress {
		if len(p.holders) <= e.bound {
			progress = append(progress, Progress{Task: task, RSN: p.rsn})
		}
	}
	return dets, progress
}

// groupCarried is what the message envelopes of one Ready to one PE have
// carried so far.
type groupCarried struct {
	dets     map[determinantKey]int // how many envelopes carried each
	progress map[Progress]bool
}

// TestPiggybackOncePerReadyMatchesNaive checks the once-per-Ready rule
// against piggybacking everything unstable on every envelope: through
// random handlers, sends, arrivals, acknowledgements and a failure notice,
// every remote message envelope's group (it and the earlier message
// envelopes of its Ready to the same PE) carries every determinant and
// progress record the naive rule would put on it, and, outside a Ready
// with a failure notice, a determinant goes at most once per group.
func TestPiggybackOncePerReadyMatchesNaive(t *testing.T) {
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		for _, failures := range []int{1, 2} {
			for seed := range uint64(20) {
				t.Run(fmt.Sprintf("%v/f=%d/seed=%d", kind, failures, seed), func(t *testing.T) {
					checkPiggybackOncePerReady(t, kind, failures, seed)
				})
			}
		}
	}
}

func checkPiggybackOncePerReady(t *testing.T, kind Kind, failures int, seed uint64) {
	const pes, tasksPerPE = 3, 2
	rng := rand.New(rand.NewPCG(seed, 21))
	var engines []*engine
	for p := range PEID(pes) {
		e := newEngine(kind, Config{PE: p, PEs: pes, Failures: failures})
		for i := range tasksPerPE {
			e.HostTask(TaskID(int(p)*tasksPerPE + i))
		}
		engines = append(engines, e)
	}
	home := func(task TaskID) PEID { return PEID(int(task) / tasksPerPE) }
	alive := []bool{true, true, true}
	// groups are, per PE, the current Ready's carried records per
	// destination; noticed marks a Ready with a failure notice.
	groups := make([]map[PEID]*groupCarried, pes)
	noticed := make([]bool, pes)
	for p := range groups {
		groups[p] = map[PEID]*groupCarried{}
	}
	var network [][]Envelope
	// checked counts remote envelopes checked, incremental those that
	// followed another to their PE in their Ready and carried the
	// determinants made since.
	checked, incremental := 0, 0

	send := func(from TaskID) {
		if !alive[home(from)] {
			return
		}
		e := engines[home(from)]
		to := TaskID(rng.IntN(pes * tasksPerPE))
		annotation := commutative.OrderedAnnotation()
		if rng.IntN(2) == 0 {
			annotation = commutative.OrderDependentAnnotation()
		}
		before := e.stats.PiggybackedBytes
		e.Send(from, home(to), Message{To: to, Handler: 1, Annotation: annotation})
		env := e.ready.Envelopes[len(e.ready.Envelopes)-1]
		require.Equal(t, env.PiggybackBytes(), e.stats.PiggybackedBytes-before, "PiggybackedBytes counts what is piggybacked")
		if env.To == e.pe {
			return
		}
		g := groups[e.pe][env.To]
		if g != nil && len(env.Determinants) > 0 {
			incremental++
		}
		if g == nil {
			g = &groupCarried{dets: map[determinantKey]int{}, progress: map[Progress]bool{}}
			groups[e.pe][env.To] = g
		}
		for _, d := range env.Determinants {
			g.dets[d.key()]++
			if g.dets[d.key()] > 1 && !noticed[e.pe] {
				t.Fatalf("pe%d -> pe%d: %v carried twice in one Ready", e.pe, env.To, d)
			}
		}
		for _, p := range env.Progress {
			g.progress[p] = true
		}
		// Send does not change the determinants; it makes the sender's
		// own progress record, which its envelope carries.
		wantDets, wantProgress := naiveUnstable(e)
		for _, k := range wantDets {
			// A PE known to hold a determinant gets none.
			if d, _ := e.determinants.get(k); g.dets[k] == 0 && !e.determinants.holds(d, env.To) {
				t.Fatalf("pe%d -> pe%d: unstable determinant t%d@%d not carried", e.pe, env.To, k.receiver, k.rsn)
			}
		}
		for _, p := range wantProgress {
			// Nor a PE known to hold a progress record.
			if !g.progress[p] && !slices.Contains(e.progress[p.Task].holders, env.To) {
				t.Fatalf("pe%d -> pe%d: unstable progress %v not carried", e.pe, env.To, p)
			}
		}
		checked++
	}
	flush := func(p PEID) {
		e := engines[p]
		ready := e.Ready()
		e.Advance()
		clear(groups[p])
		noticed[p] = false
		byDest := map[PEID]int{}
		for _, env := range ready.Envelopes {
			if !alive[env.To] {
				continue
			}
			if env.To == p {
				e.Arrive(env)
				continue
			}
			if i, ok := byDest[env.To]; ok {
				network[i] = append(network[i], env)
				continue
			}
			byDest[env.To] = len(network)
			network = append(network, []Envelope{env})
		}
	}

	for task := range TaskID(pes * tasksPerPE) {
		send(task)
	}
	for step := range 1500 {
		switch op := rng.IntN(20); {
		case op < 8 && len(network) > 0:
			i := rng.IntN(len(network))
			group := network[i]
			network = slices.Delete(network, i, i+1)
			to := group[0].To
			for _, env := range group {
				engines[to].Arrive(env)
			}
			if rng.IntN(3) == 0 {
				flush(to)
			}
		case op < 18:
			task := TaskID(rng.IntN(pes * tasksPerPE))
			p := home(task)
			if !alive[p] {
				continue
			}
			e := engines[p]
			if _, ok := e.NextDelivery(task, func(Message) bool { return true }); ok {
				for range rng.IntN(3) {
					send(task)
				}
				e.EndHandler(task)
			} else if rng.IntN(4) == 0 {
				send(task)
			}
			if rng.IntN(4) == 0 {
				flush(p)
			}
		case op == 18 && step > 1000 && alive[2]:
			// pe2 fails; the others learn it in the middle of a Ready,
			// and determinants it held become unstable again.
			alive[2] = false
			network = slices.DeleteFunc(network, func(g []Envelope) bool { return g[0].To == 2 || g[0].From == 2 })
			for p := range PEID(2) {
				engines[p].FailureNotice([]PEID{2}, nil)
				noticed[p] = true
			}
		default:
			p := PEID(rng.IntN(pes))
			if alive[p] {
				flush(p)
			}
		}
	}
	require.Positive(t, checked)
	require.Positive(t, incremental, "no envelope carried only the determinants made since the previous one")
}

// TestPiggybackFromWalkedMatchesNaive checks piggyback under
// Config.Ordered, which looks for each PE below 64 only at the entries of
// the unstable list added since its last walk for that PE (engine.walked),
// against a scan of every determinant held: through arrivals from other
// PEs, acknowledgements and failure notices,
// each call carries exactly the held determinants that are not stable,
// not held by the destination and not carried there before, PEs from 64
// on included (they are walked over the whole list, which drops the
// stable entries).
func TestPiggybackFromWalkedMatchesNaive(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 31))
		const pes = 70
		e := newEngine(KindFullDet, Config{PE: 0, PEs: pes, Ordered: true})
		peers := []PEID{1, 2, 3, 4, 5, 63, 64, 65, 66}
		alive := func(p PEID) bool { return !slices.Contains(e.failed, p) }
		pick := func() PEID {
			for {
				if p := peers[rng.IntN(len(peers))]; alive(p) {
					return p
				}
			}
		}
		next := map[TaskID]uint64{}
		walks, partial := 0, 0
		for step := range 4000 {
			switch op := rng.IntN(20); {
			case op < 8:
				var ds []Determinant
				for range 1 + rng.IntN(4) {
					task := TaskID(rng.IntN(30))
					next[task]++
					ds = append(ds, Determinant{Message: MessageID{Sender: TaskID(rng.IntN(30)), SRN: uint64(step)}, Receiver: task, RSN: next[task]})
				}
				e.storeReceived(ds, pick())
			case op < 13:
				// An acknowledgement, mostly of a recent determinant.
				if n := int(e.determinants.slab.len()); n > 0 {
					slot := uint32(max(0, n-1-rng.IntN(64)))
					if rng.IntN(4) == 0 {
						slot = uint32(rng.IntN(n))
					}
					e.determinants.addHolder(e.determinants.slab.at(slot), pick())
				}
			case op < 19:
				to := pick()
				var want []determinantKey
				for d := range e.determinants.all() {
					if !e.isStable(d) && !e.determinants.holds(d, to) && !(uint32(to) < 64 && d.carried&(1<<uint32(to)) != 0) {
						want = append(want, determinantKey{d.receiver, d.rsn})
					}
				}
				if e.ordered && uint32(to) < 64 && e.walked[to] != 0 {
					partial++
				}
				var got []determinantKey
				for _, d := range e.piggyback(to) {
					got = append(got, d.key())
				}
				e.unacked.slots = e.unacked.slots[:0]
				slices.SortFunc(got, compareKeys)
				require.Equal(t, want, got, "seed %d step %d to pe%d", seed, step, to)
				walks++
			default:
				if step > 2000 && len(e.failed) < 2 && rng.IntN(10) == 0 {
					e.FailureNotice([]PEID{pick()}, nil)
				}
				e.Advance()
			}
		}
		require.Positive(t, partial, "seed %d: no walk started past the list's start", seed)
		require.Positive(t, walks)
	}
}

func compareKeys(a, b determinantKey) int {
	if a.receiver != b.receiver {
		return cmp.Compare(a.receiver, b.receiver)
	}
	return cmp.Compare(a.rsn, b.rsn)
}
