package logging

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// chunkBytes is the number of bytes logged into the log's chunks.
func chunkBytes(l *senderLog) int {
	n := 0
	for _, c := range l.chunks {
		n += len(c)
	}
	return n
}

// A multicast of N messages with the same payload grows the log by one
// payload and the N paths and requirements; every entry gives back its
// message, payload included, and the returned payloads are one slice.
func TestMulticastLogsItsPayloadOnce(t *testing.T) {
	l := &senderLog{mem: newLogMemory(false)}
	payload := make([]byte, 1000)
	for i := range payload {
		payload[i] = byte(i * 3)
	}
	trigger := MessageID{Sender: 3, SRN: 9}
	const n = 5
	var sent, got []Message
	heads := 0
	before := chunkBytes(l)
	for i := range n {
		m := Message{ID: MessageID{Sender: 1, SRN: uint64(i + 1), CPI: commutative.Child(trigger, uint32(i))}, To: TaskID(10 + i),
			Requires: []Dependency{{Task: TaskID(i), Trigger: trigger}}, Payload: append([]byte(nil), payload...)}
		r, shared := l.add(m, PEID(i%3), nil)
		if i == 0 {
			require.Zero(t, shared)
		} else {
			require.Equal(t, len(payload), shared, "message %d", i)
			require.Same(t, &got[0].Payload[0], &r.Payload[0], "message %d carries the first copy", i)
		}
		e := l.entry(i)
		heads += int(e.pathLen + e.requiresLen)
		sent, got = append(sent, m), append(got, r)
	}
	require.Equal(t, len(payload)+heads, chunkBytes(l)-before, "one payload and %d paths and requirements", n)
	for i := range n {
		require.Equal(t, sent[i], l.message(i), "message %d", i)
	}
	// After forget (the end of a Ready) the same bytes are copied again.
	l.forget()
	_, shared := l.add(Message{ID: MessageID{Sender: 1, SRN: 99}, Payload: payload}, 0, nil)
	require.Zero(t, shared)
	require.Equal(t, 2*len(payload)+heads, chunkBytes(l)-before)
}

// An engine's multicasts give back their messages byte for byte from the
// log, through quota dumps and the releases that follow their
// acknowledgement, a task moving away, and a checkpoint; the log's size
// counts a multicast's payload once.
func TestMulticastThroughDumpsReleasesAndCheckpoints(t *testing.T) {
	for _, kind := range []Kind{KindFullDet, KindPartialDet} {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			const quota = 256 << 10
			e := newEngine(kind, Config{PE: 1, PEs: 2, LogQuota: quota, Loggers: 1, LogOffHeap: true})
			e.HostTask(7)
			e.HostTask(8)
			rng := rand.New(rand.NewPCG(1, 2))
			var sent []Message
			var dumps []DumpBatch
			check := func() {
				for i := e.log.released; i < e.log.len(); i++ {
					require.Equal(t, sent[i], e.log.message(i), "entry %d", i)
				}
			}
			for period := range 3 {
				sent = sent[:0]
				for r := range 60 {
					ok, err := e.LogRoom()
					require.NoError(t, err)
					require.True(t, ok)
					payload := make([]byte, 64+rng.IntN(3000))
					for j := range payload {
						payload[j] = byte(r + j)
					}
					from := TaskID(7 + r%2)
					logBefore, loggedBefore := e.logBytes, e.stats.LoggedBytes
					copies := 1 + rng.IntN(4)
					wire := 0
					for k := range copies {
						m := Message{To: TaskID(20 + k), Handler: 3, Key: uint64(r), Payload: payload,
							Annotation: commutative.OrderedAnnotation()}
						m.ID = e.Send(from, 0, m)
						if kind == KindPartialDet {
							m.Requires = e.log.message(e.log.len() - 1).Requires
						}
						wire += m.wireSize()
						sent = append(sent, m)
					}
					require.Equal(t, wire-(copies-1)*len(payload), e.logBytes-logBefore, "a multicast's payload counts once")
					require.Equal(t, wire-(copies-1)*len(payload), e.stats.LoggedBytes-loggedBefore)
					envs := e.Ready().Envelopes
					for k := 1; k < copies; k++ {
						require.Same(t, &envs[0].Message.Payload[0], &envs[k].Message.Payload[0])
					}
					e.Advance()
					for _, d := range e.TakeDumps() {
						dumps = append(dumps, d)
						got, err := DecodeDumped(d.Payload)
						require.NoError(t, err)
						require.Len(t, got, d.To-d.From)
						for k, de := range got {
							require.Equal(t, sent[d.From+k], de.Message, "dumped entry %d", d.From+k)
						}
						e.DumpAcked(d.Logger, d.Epoch, d.To)
					}
					check()
				}
				require.Greater(t, e.log.released, 0, "period %d: the quota released entries", period)
				cp := e.ExportTask(8)
				check()
				e.ImportTask(cp)
				e.Checkpoint()
				require.Zero(t, e.log.len())
			}
			require.NotEmpty(t, dumps)
		})
	}
}

// Random sends (payloads repeated or not, short or long, values), ends of
// Readys, releases and resets: the log gives back what a plain list of
// the messages holds, and its chunks hold each entry's path and
// requirements and each payload it did not share.
func TestSenderLogSharingAgainstAModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := &senderLog{mem: newLogMemory(seed%2 == 0)}
		if seed%3 == 0 {
			l.keepBytes = 8 << 20
		}
		var model []Message
		pool := make([][]byte, 4)
		for i := range pool {
			pool[i] = make([]byte, []int{10, 64, 5000, 300000}[i])
			for j := range pool[i] {
				pool[i][j] = byte(i + j*int(seed+1))
			}
		}
		shares, prev, prevShareable := 0, []byte(nil), false
		for step := range 3000 {
			switch x := rng.IntN(100); {
			case x < 3:
				l.reset()
				model, prevShareable = model[:0], false
				continue
			case x < 6:
				l.release(rng.IntN(len(model) + 1))
			case x < 20:
				l.forget()
				prevShareable = false
			}
			m := Message{ID: MessageID{Sender: TaskID(rng.IntN(3)), SRN: uint64(step + 1)}, To: TaskID(rng.IntN(9)), Key: uint64(step)}
			if rng.IntN(3) == 0 {
				m.ID.CPI = commutative.Child(MessageID{Sender: 2, SRN: uint64(step)}, uint32(step))
				m.Requires = []Dependency{{Task: 4, Trigger: MessageID{Sender: 1, SRN: uint64(step)}}}
			}
			isValue := false
			switch y := rng.IntN(10); {
			case y < 6:
				m.Payload = append([]byte(nil), pool[rng.IntN(len(pool))]...)
			case y < 8:
				m.Payload = make([]byte, 64+rng.IntN(200))
				for j := range m.Payload {
					m.Payload[j] = byte(rng.IntN(2)) // mostly equal to another
				}
			case y < 9:
				// A value with a payload's bytes: never shared.
				m.Value = &bytesValue{b: pool[rng.IntN(len(pool))]}
				isValue = true
			}
			released := l.released
			heldBefore, allHeld := chunkBytes(l), released == 0
			got, shared := l.add(m, 0, testValues{})
			if isValue {
				require.Zero(t, shared)
				require.Equal(t, m.Value.(*bytesValue).b, got.Payload)
				m.Payload, m.Value = append([]byte(nil), got.Payload...), nil
			}
			if shared > 0 {
				require.True(t, prevShareable, "seed %d step %d: shared with no payload before it in the Ready", seed, step)
				require.Equal(t, prev, m.Payload)
				shares++
			}
			require.Equal(t, m.Payload, got.Payload)
			if allHeld && l.released == 0 {
				e := l.entry(l.len() - 1)
				copied := len(m.Payload)
				if e.payloadOff != e.off+e.pathLen+e.requiresLen {
					require.Equal(t, len(m.Payload), shared, "seed %d step %d: a payload not copied is counted shared", seed, step)
					copied = 0
				}
				require.Equal(t, int(e.pathLen+e.requiresLen)+copied, chunkBytes(l)-heldBefore)
			}
			prev, prevShareable = m.Payload, !isValue && len(m.Payload) >= sharePayloadMin
			model = append(model, m)
			require.Equal(t, len(model), l.len())
			if step%97 == 0 {
				for i := l.released; i < len(model); i++ {
					want := model[i]
					got := l.message(i)
					if len(want.Payload) == 0 {
						want.Payload = nil
					}
					require.Equal(t, want, got, "seed %d step %d entry %d", seed, step, i)
					dumped, err := DecodeDumped(l.appendEntry(nil, i))
					require.NoError(t, err)
					require.Equal(t, want, dumped[0].Message, "seed %d step %d entry %d dumped", seed, step, i)
				}
			}
		}
		require.Greater(t, shares, 0, "seed %d: some payloads were shared", seed)
	}
}
