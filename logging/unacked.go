package logging

// unackedEnvelopes remembers, for every envelope this PE sent with determinants
// and that is not acknowledged yet, which determinants it carried (their
// slots in the determinant store), so that an acknowledgement names the
// envelope by its number (Envelope.Carry) instead of listing the
// determinants again. An envelope's determinants are as many as its
// piggyback; listing them in the acknowledgement cost as much to encode,
// decode and look up (a determinant store look-up each, most of them
// cache misses) as the piggyback itself, on every ride of every
// determinant (docs/benchmarks.md, "fd2 (2026-11-28)").
//
// Numbers are given in sending order across all destinations, so the
// envelopes still unacknowledged are a run of numbers: an
// acknowledgement finds its envelope by index. Whichever PE stores the
// determinants acknowledges them (a message forwarded unopened to a
// task's new PE is acknowledged from there), and the holder added is
// the acknowledging PE.
type unackedEnvelopes struct {
	// last is the number of the last envelope numbered.
	last uint64
	// envelopes are the unacknowledged envelopes from head on, in number
	// order, one per number; acknowledged ones before the first
	// unacknowledged are dropped.
	envelopes []carriedEnvelope
	head      int
	// slots are the determinants' slots, envelope after envelope.
	slots []uint32
}

type carriedEnvelope struct {
	number    uint64
	to        PEID
	from, end int // its determinants: slots[from:end]
	acked     bool
}

// add numbers an envelope to PE to whose determinants' slots are
// c.slots[from:], and returns its number.
func (c *unackedEnvelopes) add(to PEID, from int) uint64 {
	c.last++
	c.envelopes = append(c.envelopes, carriedEnvelope{number: c.last, to: to, from: from, end: len(c.slots)})
	return c.last
}

// take returns the slots of the determinants of envelope number, unless
// it is not waiting for an acknowledgement (acknowledged already, before
// the last checkpoint, or to a PE that failed), and marks it
// acknowledged.
func (c *unackedEnvelopes) take(number uint64) []uint32 {
	live := c.envelopes[c.head:]
	if len(live) == 0 || number < live[0].number || number-live[0].number >= uint64(len(live)) {
		return nil
	}
	env := &live[number-live[0].number]
	if env.acked {
		return nil
	}
	env.acked = true
	return c.slots[env.from:env.end]
}

// advance drops the acknowledged envelopes at the front, and moves the
// others to the front of the arrays when they are less than half of
// them. The caller is done with what take returned.
func (c *unackedEnvelopes) advance() {
	for c.head < len(c.envelopes) && c.envelopes[c.head].acked {
		c.head++
	}
	if c.head == len(c.envelopes) {
		c.envelopes, c.slots, c.head = c.envelopes[:0], c.slots[:0], 0
		return
	}
	if c.head < 64 || c.head*2 < len(c.envelopes) {
		return
	}
	base := c.envelopes[c.head].from
	n := copy(c.envelopes, c.envelopes[c.head:])
	c.envelopes, c.head = c.envelopes[:n], 0
	for i := range c.envelopes {
		c.envelopes[i].from -= base
		c.envelopes[i].end -= base
	}
	c.slots = c.slots[:copy(c.slots, c.slots[base:])]
}

// dropTo forgets the envelopes to the PEs failed reports failed: their
// acknowledgements will not come.
func (c *unackedEnvelopes) dropTo(failed func(PEID) bool) {
	for i := c.head; i < len(c.envelopes); i++ {
		if failed(c.envelopes[i].to) {
			c.envelopes[i].acked = true
		}
	}
	c.advance()
}

// reset forgets every envelope (at a checkpoint: the slots refer to
// determinants the store forgets), keeping the numbering, so that an
// acknowledgement of an envelope from before finds nothing.
func (c *unackedEnvelopes) reset() {
	c.envelopes, c.slots, c.head = c.envelopes[:0], c.slots[:0], 0
}
