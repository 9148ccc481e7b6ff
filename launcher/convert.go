package launcher

import (
	"errors"
	"fmt"

	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
)

// Conversions between the coordinator's commands and the control protocol.

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

// commandToPB encodes a coordinator command for a PE.
func commandToPB(ev any) *controlpb.ToPE {
	switch ev := ev.(type) {
	case scheduler.Begin:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Begin{Begin: &controlpb.Begin{}}}
	case scheduler.Probe:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Probe{Probe: &controlpb.Probe{Round: ev.Round}}}
	case scheduler.QuiescenceDetected:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Quiescence{Quiescence: &controlpb.QuiescenceDetected{Number: ev.Number}}}
	case scheduler.Stop:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: int32(ev.Status)}}}
	case scheduler.TakeCheckpoint:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_TakeCheckpoint{TakeCheckpoint: &controlpb.TakeCheckpoint{Epoch: ev.Epoch}}}
	case scheduler.CommitCheckpoint:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_CommitCheckpoint{CommitCheckpoint: &controlpb.CommitCheckpoint{Epoch: ev.Epoch, Dir: ev.Dir}}}
	case scheduler.Resume:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Resume{Resume: &controlpb.Resume{}}}
	case scheduler.Recover:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Recover{Recover: &controlpb.Recover{
			Generation: ev.Generation, Failed: intsToPB(ev.Failed), Relocations: relocationsToPB(ev.Relocations), UndoMoves: ev.UndoMoves}}}
	case scheduler.NoticeFailure:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_NoticeFailure{NoticeFailure: &controlpb.NoticeFailure{
			Generation: ev.Generation, Failed: intsToPB(ev.Failed), Relocations: relocationsToPB(ev.Relocations)}}}
	case scheduler.CollectLoads:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_CollectLoads{CollectLoads: &controlpb.CollectLoads{}}}
	case scheduler.Migrate:
		var moves []*controlpb.Move
		for _, mv := range ev.Moves {
			moves = append(moves, &controlpb.Move{Collection: uint32(mv.Task.Collection), Lin: int64(mv.Task.Lin), From: int32(mv.From), To: int32(mv.To)})
		}
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Migrate{Migrate: &controlpb.Migrate{Moves: moves}}}
	case scheduler.Rollback:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Rollback{Rollback: &controlpb.Rollback{
			Generation: ev.Generation, Epoch: ev.Epoch, Failed: intsToPB(ev.Failed), Relocations: relocationsToPB(ev.Relocations), FromDisk: ev.FromDisk, Recreate: ev.Recreate}}}
	case scheduler.WatchProgress:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_WatchProgress{WatchProgress: &controlpb.WatchProgress{Generation: ev.Generation, Step: ev.Step}}}
	case scheduler.ReportProgress:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_ReportProgress{ReportProgress: &controlpb.ReportProgress{}}}
	case scheduler.Diagnose:
		return &controlpb.ToPE{Msg: &controlpb.ToPE_Diagnose{Diagnose: &controlpb.Diagnose{}}}
	}
	panic(fmt.Sprintf("launcher: no control message for %T", ev))
}

// eventFromPB decodes a coordinator command on a PE; stop reports Stop.
func eventFromPB(m *controlpb.ToPE, size int) (ev any, stop bool, err error) {
	switch m := m.Msg.(type) {
	case *controlpb.ToPE_Begin:
		return scheduler.Begin{}, false, nil
	case *controlpb.ToPE_Probe:
		return scheduler.Probe{Round: m.Probe.Round}, false, nil
	case *controlpb.ToPE_Quiescence:
		return scheduler.QuiescenceDetected{Number: m.Quiescence.Number}, false, nil
	case *controlpb.ToPE_Stop:
		return nil, true, nil
	case *controlpb.ToPE_TakeCheckpoint:
		return scheduler.TakeCheckpoint{Epoch: m.TakeCheckpoint.Epoch}, false, nil
	case *controlpb.ToPE_CommitCheckpoint:
		return scheduler.CommitCheckpoint{Epoch: m.CommitCheckpoint.Epoch, Dir: m.CommitCheckpoint.Dir}, false, nil
	case *controlpb.ToPE_Resume:
		return scheduler.Resume{}, false, nil
	case *controlpb.ToPE_Recover:
		rs, err := relocationsFromPB(m.Recover.Relocations, size)
		return scheduler.Recover{Generation: m.Recover.Generation, Failed: intsFromPB(m.Recover.Failed), Relocations: rs, UndoMoves: m.Recover.UndoMoves}, false, err
	case *controlpb.ToPE_NoticeFailure:
		rs, err := relocationsFromPB(m.NoticeFailure.Relocations, size)
		return scheduler.NoticeFailure{Generation: m.NoticeFailure.Generation, Failed: intsFromPB(m.NoticeFailure.Failed), Relocations: rs}, false, err
	case *controlpb.ToPE_CollectLoads:
		return scheduler.CollectLoads{}, false, nil
	case *controlpb.ToPE_Migrate:
		var moves []migrate.Move
		for _, mv := range m.Migrate.Moves {
			if mv.From < 0 || int(mv.From) >= size || mv.To < 0 || int(mv.To) >= size {
				return nil, false, fmt.Errorf("launcher: move between PEs %d and %d of %d", mv.From, mv.To, size)
			}
			moves = append(moves, migrate.Move{Task: migrate.TaskRef{Collection: int(mv.Collection), Lin: int(mv.Lin)}, From: int(mv.From), To: int(mv.To)})
		}
		return scheduler.Migrate{Moves: moves}, false, nil
	case *controlpb.ToPE_Rollback:
		rs, err := relocationsFromPB(m.Rollback.Relocations, size)
		return scheduler.Rollback{Generation: m.Rollback.Generation, Epoch: m.Rollback.Epoch, Failed: intsFromPB(m.Rollback.Failed), Relocations: rs, FromDisk: m.Rollback.FromDisk, Recreate: m.Rollback.Recreate}, false, err
	case *controlpb.ToPE_WatchProgress:
		return scheduler.WatchProgress{Generation: m.WatchProgress.Generation, Step: m.WatchProgress.Step}, false, nil
	case *controlpb.ToPE_ReportProgress:
		return scheduler.ReportProgress{}, false, nil
	case *controlpb.ToPE_Diagnose:
		return scheduler.Diagnose{}, false, nil
	}
	return nil, false, errors.New("launcher: unexpected control message")
}
