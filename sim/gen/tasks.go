package gen

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gochare/gochare/actor"
)

// cell is a task of the 1-d collection "cells". Its value acc is what the
// digest sees; replies records the order-dependent answers of the grid,
// which only the audit sees.
type cell struct {
	prog *program
	// begun is set by Begin; step is the current step and phase its part.
	begun bool
	step  uint64
	phase phase
	// acc is the cell's value; startAcc its value when the step began
	// (the tickets of the step were computed from it).
	acc, startAcc uint64
	// slots and filled are the exchange region of the current step, seen
	// the replies of the current step by ticket: what makes a second
	// delivery of one message visible.
	slots  []uint64
	filled []bool
	seen   []bool
	// replies are every reply the cell took, by step and ticket.
	replies []replyRecord
	// exchanged counts the exchange messages taken.
	exchanged uint64
	// broken is set once the cell reported a fault; it then takes nothing.
	broken bool
	// work is the result of the burnt hash rounds (not state: never packed).
	work uint64
}

// replyRecord is a reply as a cell keeps it, for the audit.
type replyRecord struct {
	Grid, Step, Position, Ticket uint32
	// Value is the ticket's value, Trace the grid task's trace after it.
	Value, Trace uint64
}

// gridTask is a task of the collection "grid". sum, count, bonus and
// reduced are what the digest sees; trace is the order-dependent fold of
// its tickets, and traces its value at the end of each step, for the
// audit.
type gridTask struct {
	prog  *program
	begun bool
	step  uint64
	phase phase
	// received counts the tickets of the current step, seen marks them by
	// their position in the plan's list.
	received int
	seen     []bool
	trace    uint64
	traces   []uint64
	sum      uint64
	count    uint64
	bonus    uint64
	reduced  uint64
	broken   bool
	work     uint64
}

// mainTask is the main element: it starts the job, turns every step's sum
// into an Advance and a Bonus, and checks and prints the final records.
type mainTask struct {
	started bool
	numPEs  int32
	// totals are the cells' sums of the steps so far.
	totals []int64
	// cellRecords is the cells' final reduction, once in.
	cellRecords []byte
	haveCells   bool
	finished    bool
}

func (c *cell) ResumeFromSync(ctx actor.Context) { c.prog.startCellStep(c, ctx) }

func (g *gridTask) ResumeFromSync(ctx actor.Context) { g.prog.startGridStep(g, ctx) }

// Packed states are little-endian: a magic word and version, then the
// fields in declaration order; slices carry a uint32 length.
const packVersion = 1

// errBadState reports a packed state UnmarshalBinary refuses.
var errBadState = errors.New("gen: bad packed task state")

type packer struct{ b []byte }

func (p *packer) u8(v uint8)   { p.b = append(p.b, v) }
func (p *packer) u32(v uint32) { p.b = binary.LittleEndian.AppendUint32(p.b, v) }
func (p *packer) u64(v uint64) { p.b = binary.LittleEndian.AppendUint64(p.b, v) }
func (p *packer) flag(v bool) {
	if v {
		p.u8(1)
	} else {
		p.u8(0)
	}
}
func (p *packer) bools(v []bool) {
	p.u32(uint32(len(v)))
	for _, x := range v {
		p.flag(x)
	}
}
func (p *packer) u64s(v []uint64) {
	p.u32(uint32(len(v)))
	for _, x := range v {
		p.u64(x)
	}
}
func (p *packer) replies(v []replyRecord) {
	p.u32(uint32(len(v)))
	for _, r := range v {
		p.u32(r.Grid)
		p.u32(r.Step)
		p.u32(r.Position)
		p.u32(r.Ticket)
		p.u64(r.Value)
		p.u64(r.Trace)
	}
}

// unpacker reads what packer wrote; the first error sticks.
type unpacker struct {
	b   []byte
	err error
}

func (u *unpacker) take(n int) []byte {
	if u.err != nil {
		return nil
	}
	if len(u.b) < n {
		u.err = fmt.Errorf("%w: truncated", errBadState)
		return nil
	}
	out := u.b[:n]
	u.b = u.b[n:]
	return out
}

func (u *unpacker) u8() uint8 {
	if b := u.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (u *unpacker) u32() uint32 {
	if b := u.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (u *unpacker) u64() uint64 {
	if b := u.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (u *unpacker) flag() bool {
	switch v := u.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		if u.err == nil {
			u.err = fmt.Errorf("%w: flag byte %d", errBadState, v)
		}
		return false
	}
}

// length reads a slice length of elements of size bytes each, refusing
// one longer than what is left.
func (u *unpacker) length(size int) int {
	n := int(u.u32())
	if u.err == nil && n*size > len(u.b) {
		u.err = fmt.Errorf("%w: %d elements of %d bytes, %d bytes left", errBadState, n, size, len(u.b))
		return 0
	}
	return n
}

func (u *unpacker) replies() []replyRecord {
	out := make([]replyRecord, u.length(32))
	for i := range out {
		out[i] = replyRecord{Grid: u.u32(), Step: u.u32(), Position: u.u32(), Ticket: u.u32(), Value: u.u64(), Trace: u.u64()}
	}
	return out
}

func (u *unpacker) bools() []bool {
	out := make([]bool, u.length(1))
	for i := range out {
		out[i] = u.flag()
	}
	return out
}

func (u *unpacker) u64s() []uint64 {
	out := make([]uint64, u.length(8))
	for i := range out {
		out[i] = u.u64()
	}
	return out
}

func (u *unpacker) header(magic string) {
	if h := u.take(len(magic) + 1); h != nil && (string(h[:len(magic)]) != magic || h[len(magic)] != packVersion) {
		u.err = fmt.Errorf("%w: header %q, want %q version %d", errBadState, h, magic, packVersion)
	}
}

func (u *unpacker) end() error {
	if u.err == nil && len(u.b) != 0 {
		u.err = fmt.Errorf("%w: %d trailing bytes", errBadState, len(u.b))
	}
	return u.err
}

func (c *cell) MarshalBinary() ([]byte, error) {
	p := &packer{b: append([]byte("GENC"), packVersion)}
	p.flag(c.begun)
	p.u64(c.step)
	p.u8(uint8(c.phase))
	p.u64(c.acc)
	p.u64(c.startAcc)
	p.u64s(c.slots)
	p.bools(c.filled)
	p.bools(c.seen)
	p.replies(c.replies)
	p.u64(c.exchanged)
	p.flag(c.broken)
	return p.b, nil
}

func (c *cell) UnmarshalBinary(data []byte) error {
	u := &unpacker{b: data}
	u.header("GENC")
	var d cell
	d.begun = u.flag()
	d.step = u.u64()
	d.phase = phase(u.u8())
	d.acc = u.u64()
	d.startAcc = u.u64()
	d.slots = u.u64s()
	d.filled = u.bools()
	d.seen = u.bools()
	d.replies = u.replies()
	d.exchanged = u.u64()
	d.broken = u.flag()
	if err := u.end(); err != nil {
		return err
	}
	if d.phase > phaseDone || len(d.slots) != len(c.slots) || len(d.filled) != len(c.filled) || len(d.seen) != len(c.seen) {
		return fmt.Errorf("%w: cell in phase %d with %d slots, %d filled flags and %d reply flags; this job's cells have %d slots and %d tickets",
			errBadState, d.phase, len(d.slots), len(d.filled), len(d.seen), len(c.slots), len(c.seen))
	}
	d.prog = c.prog
	*c = d
	return nil
}

func (g *gridTask) MarshalBinary() ([]byte, error) {
	p := &packer{b: append([]byte("GENG"), packVersion)}
	p.flag(g.begun)
	p.u64(g.step)
	p.u8(uint8(g.phase))
	p.u32(uint32(g.received))
	p.bools(g.seen)
	p.u64(g.trace)
	p.u64s(g.traces)
	p.u64(g.sum)
	p.u64(g.count)
	p.u64(g.bonus)
	p.u64(g.reduced)
	p.flag(g.broken)
	return p.b, nil
}

func (g *gridTask) UnmarshalBinary(data []byte) error {
	u := &unpacker{b: data}
	u.header("GENG")
	var d gridTask
	d.begun = u.flag()
	d.step = u.u64()
	d.phase = phase(u.u8())
	d.received = int(u.u32())
	d.seen = u.bools()
	d.trace = u.u64()
	d.traces = u.u64s()
	d.sum = u.u64()
	d.count = u.u64()
	d.bonus = u.u64()
	d.reduced = u.u64()
	d.broken = u.flag()
	if err := u.end(); err != nil {
		return err
	}
	if d.phase > phaseDone || d.received > len(d.seen) {
		return fmt.Errorf("%w: grid task in phase %d with %d of %d tickets", errBadState, d.phase, d.received, len(d.seen))
	}
	d.prog = g.prog
	*g = d
	return nil
}

func (m *mainTask) MarshalBinary() ([]byte, error) {
	p := &packer{b: append([]byte("GENM"), packVersion)}
	p.flag(m.started)
	p.u32(uint32(m.numPEs))
	p.u64s(int64sToUint64s(m.totals))
	p.flag(m.haveCells)
	p.u32(uint32(len(m.cellRecords)))
	p.b = append(p.b, m.cellRecords...)
	p.flag(m.finished)
	return p.b, nil
}

func (m *mainTask) UnmarshalBinary(data []byte) error {
	u := &unpacker{b: data}
	u.header("GENM")
	var d mainTask
	d.started = u.flag()
	d.numPEs = int32(u.u32())
	d.totals = uint64sToInt64s(u.u64s())
	d.haveCells = u.flag()
	d.cellRecords = append([]byte(nil), u.take(u.length(1))...)
	d.finished = u.flag()
	if err := u.end(); err != nil {
		return err
	}
	*m = d
	return nil
}

func int64sToUint64s(v []int64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}

func uint64sToInt64s(v []uint64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
