package sim

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// The world: a simulated clock and one queue of everything that happens,
// ordered by (time, sequence number), so that a run depends on its seed
// alone.

// item is one thing that happens at a simulated time.
type item struct {
	at  time.Duration
	seq uint64
	// what names the item in the trace; do runs it.
	what string
	do   func()
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
}

// clock is the simulated time and the queue of items.
type clock struct {
	now   time.Duration
	seq   uint64
	q     queue
	steps uint64
	// trace, if set, receives a line per item run and per note.
	trace io.Writer
	// digest hashes every item run (its time and name), to check that a
	// seed replays the same run.
	digest interface{ Write([]byte) (int, error) }
	sum    func() uint64
}

func newClock(trace io.Writer) *clock {
	h := fnv.New64a()
	return &clock{trace: trace, digest: h, sum: h.Sum64}
}

// at schedules do after delay d.
func (c *clock) at(d time.Duration, what string, do func()) {
	c.seq++
	heap.Push(&c.q, &item{at: c.now + max(d, 0), seq: c.seq, what: what, do: do})
}

// step runs the next item; false if there is none.
func (c *clock) step() bool {
	if len(c.q) == 0 {
		return false
	}
	it := heap.Pop(&c.q).(*item)
	c.now = it.at
	c.steps++
	fmt.Fprintf(c.digest, "%d %s\n", it.at, it.what)
	if c.trace != nil && !strings.HasPrefix(it.what, "tick") {
		fmt.Fprintf(c.trace, "%12v %s\n", c.now, it.what)
	}
	it.do()
	return true
}

func (c *clock) note(format string, args ...any) {
	fmt.Fprintf(c.digest, "note "+format+"\n", args...)
	if c.trace != nil {
		fmt.Fprintf(c.trace, "%12v   # "+format+"\n", append([]any{c.now}, args...)...)
	}
}

// newRand returns a source for one purpose of one run: each purpose (the
// network channel from one PE to another, the faults, the loads) has its
// own, so that the draws of one do not depend on how often another drew.
func newRand(seed uint64, purpose ...int) *rand.Rand {
	s2 := uint64(0x9e3779b97f4a7c15)
	for _, p := range purpose {
		s2 = s2*1099511628211 ^ uint64(p+1)
	}
	return rand.New(rand.NewPCG(seed, s2))
}
