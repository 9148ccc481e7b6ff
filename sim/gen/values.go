package gen

// The program's arithmetic: every value a task computes or sends is a
// function of the seed, its index, the step and what it received, through
// mix. The handlers and the serial reference (Reference) share these
// functions and nothing else.

// Streams separate the uses of the seed.
const (
	streamDefaults uint64 = iota + 1
	streamOffsets
	streamTargets
	streamSections
	streamInitial
	streamExchange
	streamTicket
	streamStep
	streamWork
)

// splitmix64 is the finaliser of SplitMix64: a bijection that spreads
// every input bit over the output.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// mix hashes a sequence of words; the order of the words matters.
func mix(words ...uint64) uint64 {
	h := uint64(0x6a09e667f3bcc909)
	for _, w := range words {
		h = splitmix64(h ^ w)
	}
	return h
}

// stream is a sequence of numbers drawn from a seed.
type stream struct{ state uint64 }

func newStream(seed, which uint64) *stream { return &stream{state: mix(seed, which)} }

func (s *stream) next() uint64 {
	s.state = splitmix64(s.state)
	return s.state
}

// initialAcc is cell c's value before step 0; initialTrace grid task
// g's trace.
func initialAcc(seed uint64, c int) uint64   { return mix(seed, streamInitial, 0, uint64(c)) }
func initialTrace(seed uint64, g int) uint64 { return mix(seed, streamInitial, 1, uint64(g)) }

// exchangeValue is what a cell with value acc at the start of step s
// sends along slot j.
func exchangeValue(acc, s uint64, j int) uint64 { return mix(acc, streamExchange, s, uint64(j)) }

// foldExchange is a cell's value after the exchange region of step s,
// from its value before and the values in slot order: a fixed order, so
// that the region's arrival order does not matter.
func foldExchange(acc, s uint64, slots []uint64) uint64 {
	h := mix(acc, streamExchange, s)
	for _, v := range slots {
		h = splitmix64(h ^ v)
	}
	return h
}

// ticketValue is the value of ticket t of a cell with value acc at the
// start of step s.
func ticketValue(acc, s uint64, t int) uint64 { return mix(acc, streamTicket, s, uint64(t)) }

// traceStep is the grid's order-dependent fold: the trace after a ticket
// of value x. Two tickets in the other order give another trace.
func traceStep(trace, x uint64) uint64 { return trace*31 + x }

// ticketWeight is what a ticket adds to its grid task's sum, a
// commutative fold (wrapping addition).
func ticketWeight(x uint64) uint64 { return splitmix64(x) }

// stepContribution is a cell's contribution to the sum of step s, and
// gridContribution a grid task's to the maximum: 40-bit values, so that
// sums of up to 2^23 of them do not wrap.
func stepContribution(acc, s uint64) int64 { return int64(mix(acc, streamStep, s) >> 24) }
func gridContribution(sum, count, bonus, s uint64) int64 {
	return int64(mix(sum, count, bonus, streamStep, s) >> 24)
}

// foldTotal folds a reduction result of step s into a value.
func foldTotal(v, s uint64, total int64) uint64 { return mix(v, streamStep, s, uint64(total)) }

// burn does n rounds of hashing and returns the result: the uneven load
// of --work. It changes no state the digest sees.
func burn(seed uint64, n int) uint64 {
	h := mix(seed, streamWork)
	for range n {
		h = splitmix64(h)
	}
	return h
}

// keyOf is the message key of phase ph of step s (key 0 is Begin).
func keyOf(s uint64, ph phase) uint64 { return s*phasesPerStep + uint64(ph) + 1 }

// phase is the part of a step a task is in; each has its own message key.
type phase uint8

// A cell exchanges, then takes its replies, then the Advance; a grid task
// takes its tickets, then its Bonus (when in the section), then the
// result of the grid's reduction. phaseDone follows the last step.
const (
	phaseExchange phase = 0 // cells
	phaseReplies  phase = 1
	phaseAdvance  phase = 2

	phaseTickets phase = 0 // grid tasks
	phaseBonus   phase = 1
	phaseReduced phase = 2

	phasesPerStep       = 3
	phaseDone     phase = phasesPerStep
)
