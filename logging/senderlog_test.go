package logging

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

// The sender log gives back every message as it was sent, across chunk
// boundaries, oversized payloads and a reset that reuses its chunks.
func TestSenderLogRoundTrip(t *testing.T) {
	for _, offHeap := range []bool{false, true} {
		t.Run(fmt.Sprintf("offHeap=%v", offHeap), func(t *testing.T) {
			testSenderLogRoundTrip(t, senderLog{mem: newLogMemory(offHeap)})
		})
	}
}

func testSenderLogRoundTrip(t *testing.T, l senderLog) {
	trigger := MessageID{Sender: 3, SRN: 9, CPI: commutative.Child(MessageID{Sender: 1, SRN: 2}, 4)}
	make1 := func(i int) (Message, PEID) {
		m := Message{
			ID: MessageID{Sender: TaskID(i % 7), SRN: uint64(i)}, To: TaskID(i % 5), Handler: uint32(i % 3), Key: uint64(i * 11),
			Annotation: commutative.Annotation{Order: commutative.Order(i % 3), RegionSize: i % 4},
		}
		if i%4 == 0 {
			m.ID.CPI = commutative.Child(trigger, uint32(i))
			m.Requires = []Dependency{{Task: 8, Trigger: trigger}, {Task: TaskID(i), Trigger: MessageID{Sender: 2, SRN: 1}}}
		}
		size := (i * 977) % 70000
		if i%50 == 0 {
			size = mappedChunk + hugePage/2 // a message larger than a chunk
		}
		if size > 0 {
			m.Payload = make([]byte, size)
			for j := range m.Payload {
				m.Payload[j] = byte(i + j)
			}
		}
		return m, PEID(i % 4)
	}
	for round := range 2 {
		const n = 400
		for i := range n {
			m, to := make1(i + round)
			got, _ := l.add(m, to, nil)
			require.Equal(t, m.Payload, got.Payload, "message %d", i)
		}
		require.Equal(t, n, l.len())
		for i := range n {
			m, to := make1(i + round)
			require.Equal(t, to, l.entry(i).toPE)
			got := l.message(i)
			if len(m.Payload) == 0 {
				require.Empty(t, got.Payload)
				got.Payload = m.Payload
			}
			require.Equal(t, m, got, "message %d of round %d", i, round)
		}
		used := l.chunks[:l.cur+1]
		l.reset()
		require.Equal(t, 0, l.len())
		require.Equal(t, len(used), len(l.chunks), "a reset keeps the chunks the period used")
		for i := range used {
			require.Same(t, &used[i][:1][0], &l.chunks[i][:1][0], "chunk %d is reused", i)
		}
	}
}

// A mapped log keeps its chunks across a period that needs them all,
// unmaps those a period did not need, gives payloads that survive the
// unmapping of other chunks, and is unmapped whole once it is garbage.
func TestSenderLogOffHeap(t *testing.T) {
	if !canMap {
		t.Skip("no mapped chunks on this platform")
	}
	mem := newLogMemory(true)
	maps := mem.owner.maps
	l := &senderLog{mem: mem}
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	fill := func(n int) {
		for i := range n {
			l.forget() // one payload per message: not a multicast
			got, _ := l.add(Message{ID: MessageID{Sender: 1, SRN: uint64(i + 1)}, To: 2, Payload: payload}, 1, nil)
			require.Equal(t, payload, got.Payload)
		}
	}
	fill(10) // 10 MiB: three chunks of 4 MiB
	require.Equal(t, 3, maps.count())
	require.Equal(t, 3*(mappedChunk+hugePage), mem.mappedBytes())
	for _, c := range l.chunks {
		require.Zero(t, addrOf(c[:1])%hugePage, "a mapped chunk starts on a huge page")
	}
	l.reset()
	fill(10)
	require.Equal(t, 3, maps.count(), "a period that needs every chunk reuses them")
	l.reset()
	fill(2) // one chunk is enough
	l.reset()
	require.Equal(t, 1, maps.count(), "chunks a period did not need are unmapped")
	require.Len(t, l.chunks, 1)
	fill(10)
	for i := range 10 {
		require.Equal(t, payload, l.message(i).Payload)
	}
	l.reset()
	l.reset() // a period that logged nothing keeps the chunks
	require.Equal(t, 3, maps.count())

	// Once the log is garbage, a cleanup unmaps everything.
	l, mem = nil, logMemory{}
	deadline := time.Now().Add(time.Minute)
	for {
		runtime.GC()
		if maps.count() == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the garbage log's chunks were not unmapped")
		runtime.Gosched()
	}
}

// BenchmarkSenderLog measures the forward cost of a logged send (one op is
// one message of 32 KiB, a stencil3d face of 64² doubles): Send, then a
// Ready and Advance every 64 messages, as a PE's scheduler does.
// "period" takes a checkpoint every 4096 messages (steady state: the log's
// chunks are reused, no allocation per message); "growing" never does, so
// the log grows through the whole run (its chunks are new, one per 32
// messages).
func BenchmarkSenderLog(b *testing.B) {
	for _, kind := range []Kind{KindNone, KindFullDet, KindPartialDet} {
		for _, period := range []int{4096, 0} {
			name := "period"
			if period == 0 {
				name = "growing"
			}
			b.Run(fmt.Sprintf("%v/%s", kind, name), func(b *testing.B) {
				const tasks = 64
				p := New(kind, Config{PE: 0, PEs: 2})
				for t := range TaskID(tasks) {
					p.HostTask(t)
				}
				payload := make([]byte, 32<<10)
				sends := 0
				send := func() {
					p.Send(TaskID(sends%tasks), 1, Message{To: tasks + TaskID(sends%tasks), Handler: 1, Annotation: commutative.OrderedAnnotation(), Key: uint64(sends), Payload: payload})
					sends++
					if sends%64 == 0 {
						p.Ready()
						p.Advance()
					}
					if period > 0 && sends%period == 0 {
						p.Ready()
						p.Advance()
						p.Checkpoint()
					}
				}
				if period > 0 {
					for range 2 * period { // warm: two periods
						send()
					}
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(payload)))
				b.ResetTimer()
				for range b.N {
					send()
				}
				b.StopTimer()
				b.ReportMetric(float64(p.Stats().LogBytes)/float64(max(1, p.Stats().LoggedMessages)), "logB/msg")
			})
		}
	}
}

// BenchmarkAdvanceAfterALargeReady: one op is a send, its Ready and
// Advance, on a protocol whose Ready once held large envelopes (a
// broadcast to every task of a large job, at its start): the cost of an
// Advance must not depend on it (it cleared the arrays' whole capacity
// each time, so that a job of 50,000 tasks per PE spent 15 % of its CPU
// clearing).
func BenchmarkAdvanceAfterALargeReady(b *testing.B) {
	for _, large := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("large=%d", large), func(b *testing.B) {
			p := New(KindPartialDet, Config{PE: 0, PEs: 2})
			p.HostTask(0)
			payload := make([]byte, 64)
			send := func(key uint64) {
				p.Send(0, 1, Message{To: 1, Handler: 1, Annotation: commutative.OrderedAnnotation(), Key: key, Payload: payload})
			}
			for i := range large {
				send(uint64(i))
			}
			for range 2 {
				p.Ready()
				p.Advance()
				p.Checkpoint()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				send(uint64(i))
				p.Ready()
				p.Advance()
				if i%4096 == 4095 {
					p.Checkpoint()
				}
			}
		})
	}
}

// Releasing a prefix gives back the chunks that hold only released
// entries (unmapped, off the heap), keeps the rest readable, and a reset
// after it reuses the chunks still held.
func TestSenderLogRelease(t *testing.T) {
	for _, offHeap := range []bool{false, true} {
		t.Run(fmt.Sprintf("offHeap=%v", offHeap), func(t *testing.T) {
			l := senderLog{mem: newLogMemory(offHeap)}
			const n, size = 2000, 10 << 10
			msg := func(i int) Message {
				p := make([]byte, size)
				for j := range p {
					p[j] = byte(i * j)
				}
				return Message{ID: MessageID{Sender: 1, SRN: uint64(i)}, To: TaskID(i % 3), Payload: p}
			}
			for i := range n {
				l.add(msg(i), 0, nil)
			}
			before := l.memBytes()
			mapped := l.mem.mappedBytes()
			require.GreaterOrEqual(t, before, n*size)
			require.Zero(t, l.release(0))
			freed := l.release(n / 2)
			require.Positive(t, freed)
			require.Equal(t, before-freed, l.memBytes())
			// At most a chunk's worth of the released half stays (the
			// chunk shared with entry n/2).
			require.LessOrEqual(t, l.memBytes(), before-n/2*size+max(heapChunk, mappedChunk))
			if offHeap && canMap {
				require.Less(t, l.mem.mappedBytes(), mapped, "released chunks are unmapped")
			}
			for i := n / 2; i < n; i++ {
				require.Equal(t, msg(i).Payload, l.message(i).Payload, "entry %d", i)
				require.Equal(t, TaskID(i%3), l.entry(i).to)
			}
			require.Panics(t, func() { l.message(n/2 - 1) })
			require.Zero(t, l.release(n/2), "nothing more to release")
			l.release(n)
			require.Equal(t, l.cur, slices.IndexFunc(l.chunks, func(c []byte) bool { return c != nil }), "only the chunk being filled (and spares) stay")
			held := l.memBytes()
			l.reset()
			require.Equal(t, held, l.memBytes(), "a reset keeps what is held")
			for i := range 100 {
				l.add(msg(i), 0, nil)
			}
			for i := range 100 {
				require.Equal(t, msg(i).Payload, l.message(i).Payload)
			}
		})
	}
}

// bytesValue is a message value for testValues: its encoding is its bytes,
// and lie makes ValueSize say one byte less than AppendValue writes.
type bytesValue struct {
	b   []byte
	lie bool
}

type testValues struct{}

func (testValues) ValueSize(_ uint32, value any) int {
	v := value.(*bytesValue)
	if v.lie {
		return len(v.b) - 1
	}
	return len(v.b)
}

func (testValues) AppendValue(b []byte, _ uint32, value any) ([]byte, error) {
	return append(b, value.(*bytesValue).b...), nil
}

// A message that carries its value is encoded straight into the log: what
// add returns has the encoding as its payload, in the log's chunk, and no
// value, and the log gives back the same bytes, as for a message with a
// payload, across chunk boundaries and a reset; an encoder whose size was
// wrong (the lie) costs a copy, not a wrong entry; a warm log encodes a
// value without an allocation.
func TestSenderLogEncodesValues(t *testing.T) {
	for _, offHeap := range []bool{false, true} {
		t.Run(fmt.Sprintf("offHeap=%v", offHeap), func(t *testing.T) {
			l := senderLog{mem: newLogMemory(offHeap)}
			trigger := MessageID{Sender: 3, SRN: 9}
			encoding := func(i int) []byte {
				b := make([]byte, (i*977)%70000+1)
				for j := range b {
					b[j] = byte(i + j)
				}
				return b
			}
			for round := range 2 {
				const n = 300
				for i := range n {
					m := Message{ID: MessageID{Sender: TaskID(i % 7), SRN: uint64(i)}, To: TaskID(i % 5)}
					if i%4 == 0 {
						m.ID.CPI = commutative.Child(trigger, uint32(i))
						m.Requires = []Dependency{{Task: 8, Trigger: trigger}}
					}
					if i%3 == 0 {
						m.Payload = encoding(i)
					} else {
						m.Value = &bytesValue{b: encoding(i), lie: i%10 == 1}
					}
					got, _ := l.add(m, 1, testValues{})
					require.Nil(t, got.Value, "message %d", i)
					require.Equal(t, encoding(i), got.Payload, "message %d", i)
					c := l.chunks[l.entry(i).chunk]
					require.True(t, addrOf(c[:1]) <= addrOf(got.Payload) && addrOf(got.Payload) < addrOf(c[:1])+uintptr(cap(c)),
						"message %d: the payload is the log's bytes", i)
				}
				for i := range n {
					require.Equal(t, encoding(i), l.message(i).Payload, "message %d of round %d", i, round)
				}
				l.reset()
			}
			v := &bytesValue{b: encoding(5)}
			if allocs := testing.AllocsPerRun(100, func() {
				l.add(Message{ID: MessageID{Sender: 1, SRN: 1}, To: 2, Value: v}, 1, testValues{})
			}); allocs != 0 {
				t.Errorf("%v allocations a value logged in a warm log, want 0", allocs)
			}
		})
	}
}
