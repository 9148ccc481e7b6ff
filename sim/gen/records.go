package gen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
)

// The final records. Each task contributes one record to a reduction
// that concatenates them (appkit.ConcatBytes); the main task places each
// by the linear index it carries, so the combining order does not matter.
//
//	cell: index (uint32), acc, exchanged (uint64), replies (uint32), then
//	      per reply grid, step, position, ticket (uint32), value, trace
//	      (uint64); little-endian
//	grid: index (uint32), sum, count, bonus, reduced (uint64), traces
//	      (uint32), then one trace (uint64) per step

// ErrAudit wraps every inconsistency the main task finds in the records.
var ErrAudit = errors.New("gen: audit failed")

// cellRecord is a cell's final state as the main task sees it.
type cellRecord struct {
	Acc, Exchanged uint64
	Replies        []replyRecord
}

// gridRecord is a grid task's final state as the main task sees it.
type gridRecord struct {
	Sum, Count, Bonus, Reduced uint64
	Traces                     []uint64
}

func encodeCellRecord(lin int, c *cell) []byte {
	p := &packer{}
	p.u32(uint32(lin))
	p.u64(c.acc)
	p.u64(c.exchanged)
	p.replies(c.replies)
	return p.b
}

func encodeGridRecord(lin int, g *gridTask) []byte {
	p := &packer{}
	p.u32(uint32(lin))
	p.u64(g.sum)
	p.u64(g.count)
	p.u64(g.bonus)
	p.u64(g.reduced)
	p.u64s(g.traces)
	return p.b
}

// decodeCellRecords returns the cells' records by linear index, checking
// that each cell contributed exactly once.
func decodeCellRecords(data []byte, p *plan) ([]cellRecord, error) {
	out := make([]cellRecord, p.cfg.Cells)
	seen := make([]bool, p.cfg.Cells)
	u := &unpacker{b: data}
	for len(u.b) > 0 && u.err == nil {
		lin := int(u.u32())
		r := cellRecord{Acc: u.u64(), Exchanged: u.u64()}
		r.Replies = u.replies()
		if u.err != nil {
			break
		}
		if lin >= len(out) || seen[lin] {
			return nil, fmt.Errorf("%w: cell record for index %d (of %d) out of range or repeated", ErrAudit, lin, len(out))
		}
		out[lin], seen[lin] = r, true
	}
	if err := u.end(); err != nil {
		return nil, fmt.Errorf("%w: cell records: %v", ErrAudit, err)
	}
	for lin, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%w: no record of cell %d", ErrAudit, lin)
		}
	}
	return out, nil
}

// decodeGridRecords returns the grid tasks' records by linear index.
func decodeGridRecords(data []byte, p *plan) ([]gridRecord, error) {
	out := make([]gridRecord, p.gridSize)
	seen := make([]bool, p.gridSize)
	u := &unpacker{b: data}
	for len(u.b) > 0 && u.err == nil {
		lin := int(u.u32())
		r := gridRecord{Sum: u.u64(), Count: u.u64(), Bonus: u.u64(), Reduced: u.u64(), Traces: u.u64s()}
		if u.err != nil {
			break
		}
		if lin >= len(out) || seen[lin] {
			return nil, fmt.Errorf("%w: grid record for index %d (of %d) out of range or repeated", ErrAudit, lin, len(out))
		}
		out[lin], seen[lin] = r, true
	}
	if err := u.end(); err != nil {
		return nil, fmt.Errorf("%w: grid records: %v", ErrAudit, err)
	}
	for lin, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%w: no record of grid task %d", ErrAudit, lin)
		}
	}
	return out, nil
}

// audit checks what the digest leaves out: the order-dependent part. For
// every grid task and step, the replies the cells kept must be one per
// ticket the plan sent there, at positions 0 to m-1, and chain: starting
// from the trace the task ended the previous step with, folding the
// tickets' values in position order must give each reply's trace and end
// at the trace the task recorded for the step. A task re-executed in
// another order than the one its first execution's replies reflect (a
// determinant not honoured) breaks the chain or repeats a position.
func audit(p *plan, cells []cellRecord, grids []gridRecord) error {
	steps := p.cfg.Steps
	// byTask[g][s] are the replies of grid task g in step s.
	byTask := make([][][]keptReply, p.gridSize)
	for g := range byTask {
		byTask[g] = make([][]keptReply, steps)
	}
	for c, rec := range cells {
		if want := uint64(steps * p.cfg.Neighbours); rec.Exchanged != want {
			return fmt.Errorf("%w: cell %d took %d exchange messages, want %d", ErrAudit, c, rec.Exchanged, want)
		}
		if len(rec.Replies) != steps*p.cfg.Tickets {
			return fmt.Errorf("%w: cell %d kept %d replies, want %d", ErrAudit, c, len(rec.Replies), steps*p.cfg.Tickets)
		}
		for _, r := range rec.Replies {
			if int(r.Step) >= steps || int(r.Grid) >= p.gridSize || int(r.Ticket) >= p.cfg.Tickets || p.ticketTarget(uint64(r.Step), c, int(r.Ticket)) != int(r.Grid) {
				return fmt.Errorf("%w: cell %d kept a reply %+v to no ticket it sent", ErrAudit, c, r)
			}
			byTask[r.Grid][r.Step] = append(byTask[r.Grid][r.Step], keptReply{c, r})
		}
	}
	for g, rec := range grids {
		if len(rec.Traces) != steps {
			return fmt.Errorf("%w: grid task %d recorded %d traces, want %d", ErrAudit, g, len(rec.Traces), steps)
		}
		trace := initialTrace(p.cfg.Seed, g)
		var count uint64
		for s := range steps {
			replies := byTask[g][s]
			if want := len(p.expected[s][g]); len(replies) != want {
				return fmt.Errorf("%w: grid task %d step %d: %d replies kept, %d tickets sent", ErrAudit, g, s, len(replies), want)
			}
			sort.SliceStable(replies, func(a, b int) bool { return replies[a].Position < replies[b].Position })
			for i, r := range replies {
				if int(r.Position) != i {
					return fmt.Errorf("%w: grid task %d step %d: reply positions %v are not 0 to %d once each", ErrAudit, g, s, positions(replies), len(replies)-1)
				}
			}
			for i, r := range replies {
				trace = traceStep(trace, r.Value)
				if r.Trace != trace {
					return fmt.Errorf("%w: grid task %d step %d: the reply at position %d (cell %d ticket %d) has trace %016x, the chain gives %016x",
						ErrAudit, g, s, i, r.cell, r.Ticket, r.Trace, trace)
				}
			}
			if rec.Traces[s] != trace {
				return fmt.Errorf("%w: grid task %d ended step %d with trace %016x, its replies chain to %016x", ErrAudit, g, s, rec.Traces[s], trace)
			}
			count += uint64(len(replies))
		}
		if rec.Count != count {
			return fmt.Errorf("%w: grid task %d counted %d tickets, the cells got %d replies", ErrAudit, g, rec.Count, count)
		}
	}
	return nil
}

// keptReply is a reply with the cell that kept it.
type keptReply struct {
	cell int
	replyRecord
}

func positions(rs []keptReply) []uint32 {
	out := make([]uint32, len(rs))
	for i, r := range rs {
		out[i] = r.Position
	}
	return out
}

// digest is the hash of everything the run's result may not depend on
// delivery order for: the configuration, the step sums, every cell's
// value and exchange count, every grid task's sum, count, bonus and
// reduction fold, in linear index order. Traces and positions are left
// out: they legitimately differ between failure-free runs.
func digest(cfg Config, totals []int64, cells []cellRecord, grids []gridRecord) uint64 {
	h := fnv.New64a()
	var b []byte
	b = append(b, cfg.String()...)
	for _, t := range totals {
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	for _, c := range cells {
		b = binary.LittleEndian.AppendUint64(b, c.Acc)
		b = binary.LittleEndian.AppendUint64(b, c.Exchanged)
	}
	for _, g := range grids {
		for _, v := range []uint64{g.Sum, g.Count, g.Bonus, g.Reduced} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	h.Write(b)
	return h.Sum64()
}
