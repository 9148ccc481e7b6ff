package job

import "slices"

// QuiescenceDetector decides, from rounds of probes, when no application
// message is in flight or being handled anywhere in a job. It is pure: the
// Coordinator sends Probe{Round} to every PE when StartRound says so and
// feeds the answers (IdleStatus) to Reply.
//
// A PE answers a probe only when it has no work, with the number of
// envelopes it has sent and received so far. The job is quiescent when two
// consecutive complete rounds report the same counters for every PE and the
// totals sent and received are equal: nothing was sent or received between
// the two rounds, and nothing sent is still in flight. Balanced says
// whether the last complete round had the totals equal: the driver may
// then start the confirming round at once (Coordinator.OnIdle).
type QuiescenceDetector struct {
	size  int
	round uint64
	// balanced: the last complete round's totals matched.
	balanced bool
	answers  int
	current  []counters
	prev     []counters
	dead     []bool
	// live counts the PEs not dead: a round is complete when that many
	// answered (kept, so that an answer costs the same with any number of
	// PEs).
	live int
	// answered marks the PEs that answered the current round.
	answered []bool
}

type counters struct{ sent, received uint64 }

// NewQuiescenceDetector returns a detector for a job of size PEs.
func NewQuiescenceDetector(size int) *QuiescenceDetector {
	return &QuiescenceDetector{size: size, current: make([]counters, size), dead: make([]bool, size), live: size, answered: make([]bool, size)}
}

// Exclude stops expecting answers from a failed PE; the rounds start over.
func (q *QuiescenceDetector) Exclude(pe int) {
	if pe >= 0 && pe < q.size && !q.dead[pe] {
		q.dead[pe] = true
		q.live--
		q.prev = nil
		q.StartRound()
	}
}

// StartRound begins a new round of probes and returns its number.
func (q *QuiescenceDetector) StartRound() uint64 {
	q.round++
	q.answers = 0
	clear(q.current)
	clear(q.answered)
	return q.round
}

// Reply records PE pe's answer to probe round. It returns complete once
// every PE has answered the current round, and quiescent if the job is.
// Answers to old rounds are ignored.
func (q *QuiescenceDetector) Reply(pe int, round, sent, received uint64) (complete, quiescent bool) {
	if round != q.round || pe < 0 || pe >= q.size || q.dead[pe] || q.answered[pe] {
		return false, false
	}
	q.answered[pe] = true
	q.current[pe] = counters{sent, received}
	q.answers++
	if q.answers < q.live {
		return false, false
	}
	var totalSent, totalReceived uint64
	for _, c := range q.current {
		totalSent += c.sent
		totalReceived += c.received
	}
	quiescent = totalSent == totalReceived && q.prev != nil && slices.Equal(q.prev, q.current)
	q.balanced = totalSent == totalReceived
	q.prev = slices.Clone(q.current)
	return true, quiescent
}

// Balanced says whether the last complete round counted as many
// envelopes received as sent: the next round may then confirm
// quiescence.
func (q *QuiescenceDetector) Balanced() bool { return q.balanced }

// Waiting lists the live PEs that have not answered the current round.
func (q *QuiescenceDetector) Waiting() []int {
	var ps []int
	for pe := range q.size {
		if !q.dead[pe] && !q.answered[pe] {
			ps = append(ps, pe)
		}
	}
	return ps
}

// Reset forgets previous rounds (after the job changed phase).
func (q *QuiescenceDetector) Reset() { q.prev = nil }
