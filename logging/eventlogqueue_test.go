package logging

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEventLogQueueMatchesAScan checks the records a PE sends its logger
// (fillEventLog, which reads the queues filled as records become
// unstable here) against the obvious slow way: every record held that is
// neither stable nor sent yet. Three PEs exchange messages, whose
// envelopes carry the records of others; two loggers store the batches
// and acknowledge them after random delays, and in some runs one of
// them dies.
func TestEventLogQueueMatchesAScan(t *testing.T) {
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		for seed := range uint64(40) {
			runEventLogQueue(t, kind, seed)
		}
	}
}

func runEventLogQueue(t *testing.T, kind Kind, seed uint64) {
	const pes, loggers = 3, 2
	rng := rand.New(rand.NewPCG(seed, uint64(kind)))
	var protos []Protocol
	var engines []*engine
	for pe := range pes {
		cfg := Config{PE: PEID(pe), PEs: pes, EventLogger: true, Loggers: loggers}
		var p Protocol
		if kind == KindFullDet {
			p = NewFullDet(cfg)
			engines = append(engines, p.(*FullDet).engine)
		} else {
			p = NewPartialDet(cfg)
			engines = append(engines, p.(*PartialDet).engine)
		}
		p.HostTask(TaskID(pe + 1))
		protos = append(protos, p)
	}
	logs := []*EventLogger{NewEventLogger(0), NewEventLogger(1)}
	loggerDead := make([]bool, loggers)
	var inFlight []EventLogBatch
	var acks []EventLogAck
	network := make([][]Envelope, pes)
	// naive is what a scan of everything held says the logger lacks.
	naive := func(e *engine) (dets []determinantKey, prog []TaskID) {
		if e.el.target < 0 {
			return nil, nil
		}
		for d := range e.determinants.all() {
			if d.flags&detLogged == 0 && !e.isStable(d) {
				dets = append(dets, determinantKey{d.receiver, d.rsn})
			}
		}
		for task, p := range e.progress {
			if !p.logged && !e.progressStable(p) {
				prog = append(prog, task)
			}
		}
		return dets, prog
	}
	// take checks the batches against the scan made before they were
	// taken and sends them.
	sent := 0
	take := func(pe int, wantDets []determinantKey, wantProg []TaskID, batches []EventLogBatch) {
		checkSame(t, seed, pe, wantDets, wantProg, batches)
		for _, b := range batches {
			require.Equal(t, engines[pe].el.target, b.Logger)
			sent += len(b.Determinants) + len(b.Progress)
			inFlight = append(inFlight, EventLogBatch{Logger: b.Logger, Epoch: b.Epoch, Creator: b.Creator,
				Determinants: slices.Clone(b.Determinants), Progress: slices.Clone(b.Progress)})
		}
	}
	for step := range 400 {
		pe := rng.IntN(pes)
		p, task := protos[pe], TaskID(pe+1)
		switch r := rng.IntN(10); {
		case r < 3: // a message arrives
			if len(network[pe]) > 0 {
				p.Arrive(network[pe][0])
				network[pe] = network[pe][1:]
			}
		case r < 6: // a handler runs and sends
			if _, ok := p.NextDelivery(task, func(Message) bool { return true }); ok {
				p.EndHandler(task)
			}
			to := rng.IntN(pes)
			p.Send(task, PEID(to), Message{To: TaskID(to + 1)})
		case r < 7: // records taken between handlers
			wantDets, wantProg := naive(engines[pe])
			take(pe, wantDets, wantProg, p.(EventLogging).TakeEventLog())
		case r < 8: // a transmit
			wantDets, wantProg := naive(engines[pe])
			ready := p.Ready()
			take(pe, wantDets, wantProg, ready.EventLog)
			for _, env := range ready.Envelopes {
				if env.To != PEID(pe) {
					network[env.To] = append(network[env.To], env)
				}
			}
			p.Advance()
		case r < 9: // a logger stores a batch
			if len(inFlight) > 0 {
				b := inFlight[0]
				inFlight = inFlight[1:]
				if !loggerDead[b.Logger] {
					if a, ok := logs[b.Logger].Store(b); ok {
						acks = append(acks, a)
					}
				}
			}
		default: // an acknowledgement reaches every PE
			if len(acks) > 0 {
				a := acks[0]
				acks = acks[1:]
				if !loggerDead[a.Logger] {
					for _, q := range protos {
						q.(EventLogging).EventLogAcked(a)
					}
				}
			}
		}
		if step == 200 && seed%3 == 0 {
			dead := int(seed/3) % loggers
			loggerDead[dead] = true
			for _, q := range protos {
				q.(EventLogging).EventLoggerFailed(dead)
			}
		}
	}
	require.NotZero(t, sent, "seed %d: no record went to a logger", seed)
}

// checkSame says whether the batches hold exactly the records a scan
// found.
func checkSame(t *testing.T, seed uint64, pe int, wantDets []determinantKey, wantProg []TaskID, batches []EventLogBatch) {
	t.Helper()
	var dets []determinantKey
	var prog []TaskID
	for _, b := range batches {
		for _, d := range b.Determinants {
			dets = append(dets, d.key())
		}
		for _, p := range b.Progress {
			prog = append(prog, p.Task)
		}
	}
	sortKeys(dets)
	sortKeys(wantDets)
	slices.Sort(prog)
	slices.Sort(wantProg)
	require.Equal(t, len(dets), len(slices.Compact(slices.Clone(dets))), "seed %d pe%d: a determinant sent twice in one batch", seed, pe)
	require.Equal(t, wantDets, dets, "seed %d pe%d: determinants for the logger", seed, pe)
	require.Equal(t, wantProg, prog, "seed %d pe%d: progress records for the logger", seed, pe)
}

func sortKeys(ks []determinantKey) {
	slices.SortFunc(ks, func(a, b determinantKey) int {
		if a.receiver != b.receiver {
			return int(a.receiver) - int(b.receiver)
		}
		return int(a.rsn) - int(b.rsn)
	})
}

// TestLoggedDeterminantsMatchAMap checks a logger's per-task slice of
// determinants against a map by RSN, RSNs coming in any order.
func TestLoggedDeterminantsMatchAMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var got loggedDeterminants
		want := map[uint64]Determinant{}
		base := uint64(rng.IntN(1000) + 1)
		for range 200 {
			rsn := base + uint64(rng.IntN(100)) - uint64(rng.IntN(int(min(base, 50))))
			d := det(3, rsn, PEID(rng.IntN(4)), uint64(rng.IntN(1000)))
			_, held := want[rsn]
			require.Equal(t, !held, got.add(d), "seed %d rsn %d", seed, rsn)
			if !held {
				want[rsn] = d
			}
		}
		for rsn := max(base, 61) - 60; rsn < base+110; rsn++ {
			d, ok := got.at(rsn)
			w, held := want[rsn]
			require.Equal(t, held, ok, "seed %d rsn %d", seed, rsn)
			require.Equal(t, w, d)
		}
		// A new period reuses the array: nothing is held, and RSNs
		// start anew.
		got.reset()
		for rsn := range want {
			_, ok := got.at(rsn)
			require.False(t, ok, "seed %d rsn %d after reset", seed, rsn)
		}
		next := det(3, base+7, 1, 1)
		require.True(t, got.add(next))
		d, ok := got.at(base + 7)
		require.True(t, ok)
		require.Equal(t, next, d)
	}
	var empty *loggedDeterminants
	_, ok := empty.at(1)
	require.False(t, ok)
}
