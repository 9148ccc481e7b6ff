package launcher

import (
	"errors"
	"fmt"

	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/gochare/gochare/migrate"
)

// Conversions between the events of the job's coordinator and the control
// protocol.

func relocationsToPB(rs []migrate.Relocation) []*controlpb.Relocation {
	var out []*controlpb.Relocation
	for _, r := range rs {
		out = append(out, &controlpb.Relocation{
			Collection: uint32(r.Task.Collection), Lin: int64(r.Task.Lin), FailedPe: int32(r.FailedPE),
			ToPe: int32(r.ToPE), CheckpointPe: int32(r.CheckpointPE), CopyPe: int32(r.CopyPE),
		})
	}
	return out
}

func relocationsFromPB(rs []*controlpb.Relocation, size int) ([]migrate.Relocation, error) {
	var out []migrate.Relocation
	for _, r := range rs {
		for _, pe := range []int32{r.FailedPe, r.ToPe, r.CheckpointPe, r.CopyPe} {
			if pe < 0 || int(pe) >= size {
				return nil, fmt.Errorf("launcher: relocation names PE %d of %d", pe, size)
			}
		}
		out = append(out, migrate.Relocation{
			Task: migrate.TaskRef{Collection: int(r.Collection), Lin: int(r.Lin)}, FailedPE: int(r.FailedPe),
			ToPE: int(r.ToPe), CheckpointPE: int(r.CheckpointPe), CopyPE: int(r.CopyPe),
		})
	}
	return out, nil
}

func intsToPB(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

func intsFromPB(xs []int32) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

// commandToPB encodes an event of the job's coordinator as the control
// message that carries it to a PE.
func commandToPB(ev coord.Event) *controlpb.ToPE {
	var e pbEncoder
	ev.Dispatch(&e)
	return e.msg
}

// pbEncoder encodes each coord.Event as its control message: it handles
// every event (coord.PEHandler), so an event added to package job does not
// compile until it has its message here.
type pbEncoder struct{ msg *controlpb.ToPE }

var _ coord.PEHandler = (*pbEncoder)(nil)

func (e *pbEncoder) Begin(coord.Begin) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Begin{Begin: &controlpb.Begin{}}}
}
func (e *pbEncoder) Resume(ev coord.Resume) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Resume{Resume: &controlpb.Resume{Passed: ev.Passed}}}
}
func (e *pbEncoder) Stop(ev coord.Stop) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: int32(ev.Status)}}}
}
func (e *pbEncoder) Probe(ev coord.Probe) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Probe{Probe: &controlpb.Probe{Round: ev.Round}}}
}
func (e *pbEncoder) QuiescenceDetected(ev coord.QuiescenceDetected) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Quiescence{Quiescence: &controlpb.QuiescenceDetected{Number: ev.Number}}}
}
func (e *pbEncoder) TakeCheckpoint(ev coord.TakeCheckpoint) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_TakeCheckpoint{TakeCheckpoint: &controlpb.TakeCheckpoint{Epoch: ev.Epoch}}}
}
func (e *pbEncoder) CommitCheckpoint(ev coord.CommitCheckpoint) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_CommitCheckpoint{CommitCheckpoint: &controlpb.CommitCheckpoint{Epoch: ev.Epoch, Dir: ev.Dir}}}
}
func (e *pbEncoder) CollectLoads(coord.CollectLoads) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_CollectLoads{CollectLoads: &controlpb.CollectLoads{}}}
}
func (e *pbEncoder) Migrate(ev coord.Migrate) {
	var moves []*controlpb.Move
	for _, mv := range ev.Moves {
		moves = append(moves, &controlpb.Move{Collection: uint32(mv.Task.Collection), Lin: int64(mv.Task.Lin), From: int32(mv.From), To: int32(mv.To)})
	}
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Migrate{Migrate: &controlpb.Migrate{Moves: moves}}}
}
func (e *pbEncoder) Recover(ev coord.Recover) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Recover{Recover: &controlpb.Recover{
		Generation: ev.Generation, Failed: intsToPB(ev.Failed), Relocations: relocationsToPB(ev.Relocations), UndoMoves: ev.UndoMoves}}}
}
func (e *pbEncoder) NoticeFailure(ev coord.NoticeFailure) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_NoticeFailure{NoticeFailure: &controlpb.NoticeFailure{
		Generation: ev.Generation, Failed: intsToPB(ev.Failed), Relocations: relocationsToPB(ev.Relocations)}}}
}
func (e *pbEncoder) Rollback(ev coord.Rollback) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Rollback{Rollback: &controlpb.Rollback{
		Generation: ev.Generation, Epoch: ev.Epoch, Failed: intsToPB(ev.Failed), Relocations: relocationsToPB(ev.Relocations), FromDisk: ev.FromDisk, Recreate: ev.Recreate}}}
}
func (e *pbEncoder) WatchProgress(ev coord.WatchProgress) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_WatchProgress{WatchProgress: &controlpb.WatchProgress{Generation: ev.Generation, Step: ev.Step}}}
}
func (e *pbEncoder) ReportProgress(coord.ReportProgress) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_ReportProgress{ReportProgress: &controlpb.ReportProgress{}}}
}
func (e *pbEncoder) Diagnose(coord.Diagnose) {
	e.msg = &controlpb.ToPE{Msg: &controlpb.ToPE_Diagnose{Diagnose: &controlpb.Diagnose{}}}
}

// eventFromPB decodes a coordinator command on a PE; stop reports Stop.
func eventFromPB(m *controlpb.ToPE, size int) (ev coord.Event, stop bool, err error) {
	switch m := m.Msg.(type) {
	case *controlpb.ToPE_Begin:
		return coord.Begin{}, false, nil
	case *controlpb.ToPE_Probe:
		return coord.Probe{Round: m.Probe.Round}, false, nil
	case *controlpb.ToPE_Quiescence:
		return coord.QuiescenceDetected{Number: m.Quiescence.Number}, false, nil
	case *controlpb.ToPE_Stop:
		return nil, true, nil
	case *controlpb.ToPE_TakeCheckpoint:
		return coord.TakeCheckpoint{Epoch: m.TakeCheckpoint.Epoch}, false, nil
	case *controlpb.ToPE_CommitCheckpoint:
		return coord.CommitCheckpoint{Epoch: m.CommitCheckpoint.Epoch, Dir: m.CommitCheckpoint.Dir}, false, nil
	case *controlpb.ToPE_Resume:
		return coord.Resume{Passed: m.Resume.Passed}, false, nil
	case *controlpb.ToPE_Recover:
		rs, err := relocationsFromPB(m.Recover.Relocations, size)
		return coord.Recover{Generation: m.Recover.Generation, Failed: intsFromPB(m.Recover.Failed), Relocations: rs, UndoMoves: m.Recover.UndoMoves}, false, err
	case *controlpb.ToPE_NoticeFailure:
		rs, err := relocationsFromPB(m.NoticeFailure.Relocations, size)
		return coord.NoticeFailure{Generation: m.NoticeFailure.Generation, Failed: intsFromPB(m.NoticeFailure.Failed), Relocations: rs}, false, err
	case *controlpb.ToPE_CollectLoads:
		return coord.CollectLoads{}, false, nil
	case *controlpb.ToPE_Migrate:
		var moves []migrate.Move
		for _, mv := range m.Migrate.Moves {
			if mv.From < 0 || int(mv.From) >= size || mv.To < 0 || int(mv.To) >= size {
				return nil, false, fmt.Errorf("launcher: move between PEs %d and %d of %d", mv.From, mv.To, size)
			}
			moves = append(moves, migrate.Move{Task: migrate.TaskRef{Collection: int(mv.Collection), Lin: int(mv.Lin)}, From: int(mv.From), To: int(mv.To)})
		}
		return coord.Migrate{Moves: moves}, false, nil
	case *controlpb.ToPE_Rollback:
		rs, err := relocationsFromPB(m.Rollback.Relocations, size)
		return coord.Rollback{Generation: m.Rollback.Generation, Epoch: m.Rollback.Epoch, Failed: intsFromPB(m.Rollback.Failed), Relocations: rs, FromDisk: m.Rollback.FromDisk, Recreate: m.Rollback.Recreate}, false, err
	case *controlpb.ToPE_WatchProgress:
		return coord.WatchProgress{Generation: m.WatchProgress.Generation, Step: m.WatchProgress.Step}, false, nil
	case *controlpb.ToPE_ReportProgress:
		return coord.ReportProgress{}, false, nil
	case *controlpb.ToPE_Diagnose:
		return coord.Diagnose{}, false, nil
	}
	return nil, false, errors.New("launcher: unexpected control message")
}
