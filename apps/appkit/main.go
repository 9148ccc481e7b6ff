package appkit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
)

// Main describes the main element of an application: the one element that
// receives actor.Start, sends the job's first messages, waits for the
// job's results (reduction results sent to the callback Declare returns),
// prints the report and ends the job.
type Main struct {
	// Collection names the element's collection; "main" if empty.
	Collection string
	// Results is the number of reduction results to wait for; 1 if 0.
	// With one, any reduction result is it. With more, they must be
	// reductions 0 to Results-1 of one collection: each is keyed by its
	// number, so they are taken in that order.
	Results int
	// Clock reads the time for Run.Elapsed; time.Now if nil.
	Clock func() time.Time
	// Begin runs when the job starts and sends its first messages.
	Begin func(ctx actor.Context)
	// Finish runs once every result is in. It returns the job's output
	// lines and exit status; the main element prints the lines and ends
	// the job. If Finish returns an error instead, the job prints the one
	// line "error: ..." and exits with status 1.
	Finish func(ctx actor.Context, run Run) (lines []string, status int, err error)
}

// Run is what the main element hands Finish.
type Run struct {
	// PEs is the number of PEs Start gave (the job's size when it
	// started).
	PEs int
	// Elapsed is the wall time from Start to the last result, read with
	// the Clock of the main element's PE.
	Elapsed time.Duration
	// Results are the reduction results, in reduction number order.
	Results []*actor.ReductionResult
}

// Declare declares the main collection (one element, on PE 0) with its
// handlers "start" (key 0) and "results" (keys from 1), makes its element
// the job's main element, and returns the callback the results must be
// sent to. The main element takes no sync point. A Main without Begin or
// Finish, or with a negative Results, is a programming error: Declare
// panics.
func (m Main) Declare(j *actor.Job) actor.Callback {
	if m.Begin == nil || m.Finish == nil {
		panic("appkit: Main needs Begin and Finish")
	}
	if m.Collection == "" {
		m.Collection = "main"
	}
	if m.Results == 0 {
		m.Results = 1
	}
	if m.Results < 0 {
		panic(fmt.Sprintf("appkit: Main with %d results", m.Results))
	}
	if m.Clock == nil {
		m.Clock = time.Now
	}
	mains := actor.NewCollection(j, m.Collection, actor.Shape{1}, actor.BlockMap,
		func(actor.Index) *mainElement {
			return &mainElement{results: make([]*actor.ReductionResult, m.Results)}
		})
	// Start carries key 0, the results keys from 1: after a failure, a
	// restored main element takes them in that order whatever the order
	// they are resent in.
	start := actor.Handle(mains, "start", actor.AnnotateOrdered(), m.onStart,
		actor.KeyBy(func(*actor.Start) uint64 { return 0 }))
	results := actor.Handle(mains, "results", actor.AnnotateOrdered(), m.onResult,
		actor.KeyBy(m.resultKey))
	actor.Main(j, start, actor.Idx(0))
	return results.At(actor.Idx(0))
}

// slot is where a result is kept: its number, or 0 for the only one.
func (m Main) slot(r *actor.ReductionResult) uint64 {
	if m.Results == 1 {
		return 0
	}
	return r.GetNumber()
}

func (m Main) resultKey(r *actor.ReductionResult) uint64 { return m.slot(r) + 1 }

func (m Main) onStart(e *mainElement, ctx actor.Context, start *actor.Start) {
	if e.started {
		panic(fmt.Sprintf("appkit: %s element started twice", m.Collection))
	}
	e.started = true
	e.startedAt = m.Clock().UnixNano()
	e.numPEs = start.GetNumPes()
	ctx.Expect(1)
	m.Begin(ctx)
}

func (m Main) onResult(e *mainElement, ctx actor.Context, r *actor.ReductionResult) {
	slot := m.slot(r)
	if e.finished || slot >= uint64(len(e.results)) || e.results[slot] != nil {
		panic(fmt.Sprintf("appkit: unexpected reduction result %d (by %q) at the %s element", r.GetNumber(), r.GetReducer(), m.Collection))
	}
	e.results[slot] = proto.CloneOf(r)
	if int(slot) < len(e.results)-1 {
		ctx.Expect(slot + 2)
		return
	}
	e.finished = true
	run := Run{PEs: int(e.numPEs), Elapsed: m.Clock().Sub(time.Unix(0, e.startedAt)), Results: e.results}
	lines, status, err := m.Finish(ctx, run)
	if err != nil {
		lines, status = []string{fmt.Sprintf("error: %v", err)}, 1
	}
	for _, line := range lines {
		ctx.Printf("%s", line)
	}
	ctx.Exit(status)
}

// mainElement is the task of Main.
type mainElement struct {
	started, finished bool
	// startedAt is the Unix time of Start in nanoseconds.
	startedAt int64
	numPEs    int32
	// results has one slot per result; nil until it arrives.
	results []*actor.ReductionResult
}

// Packed form of a mainElement, little-endian:
//
//	"APPM" version(1)
//	flags (bit 0 started, bit 1 finished), 1 byte
//	startedAt (int64), numPEs (int32), slots (uint32)
//	for each slot: length+1 (uint32, 0 for an empty slot), then the
//	result (protobuf, deterministic)
const (
	mainMagic       = "APPM"
	mainVersion     = 1
	mainHeaderBytes = len(mainMagic) + 1 + 1 + 8 + 4 + 4

	mainStarted  = 1 << 0
	mainFinished = 1 << 1
)

// errBadMainState reports a packed main element UnmarshalBinary refuses.
var errBadMainState = errors.New("appkit: bad packed main element")

func (e *mainElement) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, mainHeaderBytes)
	out = append(out, mainMagic...)
	out = append(out, mainVersion)
	var flags byte
	if e.started {
		flags |= mainStarted
	}
	if e.finished {
		flags |= mainFinished
	}
	out = append(out, flags)
	out = binary.LittleEndian.AppendUint64(out, uint64(e.startedAt))
	out = binary.LittleEndian.AppendUint32(out, uint32(e.numPEs))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(e.results)))
	for _, r := range e.results {
		if r == nil {
			out = binary.LittleEndian.AppendUint32(out, 0)
			continue
		}
		packed, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("appkit: pack reduction result %d: %w", r.GetNumber(), err)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(packed))+1)
		out = append(out, packed...)
	}
	return out, nil
}

// UnmarshalBinary restores a state packed by MarshalBinary into a main
// element made by the same Main; a refused state leaves it unchanged.
func (e *mainElement) UnmarshalBinary(data []byte) error {
	if len(data) < mainHeaderBytes || string(data[:len(mainMagic)]) != mainMagic || data[len(mainMagic)] != mainVersion {
		return fmt.Errorf("%w: %d bytes without header %q version %d", errBadMainState, len(data), mainMagic, mainVersion)
	}
	rest := data[len(mainMagic)+1:]
	flags := rest[0]
	started, finished := flags&mainStarted != 0, flags&mainFinished != 0
	if flags&^(mainStarted|mainFinished) != 0 || finished && !started {
		return fmt.Errorf("%w: flags %08b", errBadMainState, flags)
	}
	startedAt := int64(binary.LittleEndian.Uint64(rest[1:]))
	numPEs := int32(binary.LittleEndian.Uint32(rest[9:]))
	if slots := binary.LittleEndian.Uint32(rest[13:]); int(slots) != len(e.results) {
		return fmt.Errorf("%w: %d result slots, this job's main element has %d", errBadMainState, slots, len(e.results))
	}
	rest = rest[17:]
	results := make([]*actor.ReductionResult, len(e.results))
	for slot := range results {
		if len(rest) < 4 {
			return fmt.Errorf("%w: truncated in result slot %d", errBadMainState, slot)
		}
		n := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if n == 0 {
			continue
		}
		if uint64(n-1) > uint64(len(rest)) {
			return fmt.Errorf("%w: result slot %d of %d bytes, %d left", errBadMainState, slot, n-1, len(rest))
		}
		r := &actor.ReductionResult{}
		if err := proto.Unmarshal(rest[:n-1], r); err != nil {
			return fmt.Errorf("%w: result slot %d: %v", errBadMainState, slot, err)
		}
		results[slot] = r
		rest = rest[n-1:]
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errBadMainState, len(rest))
	}
	e.started, e.finished, e.startedAt, e.numPEs, e.results = started, finished, startedAt, numPEs, results
	return nil
}
