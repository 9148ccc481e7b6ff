package scheduler

import (
	"fmt"
	"slices"

	"github.com/gochare/gochare/commutative"
)

// undoMoves settles, on the failure of PEs failed, the moves of the last
// migration, which the checkpoint that records them has not committed
// (the coordinator does the same with its placement, settleMoves): moves
// between survivors complete; a task that moved to a failed PE is back
// on its PE, which imports again the record it sent; a task that moved
// away from a failed PE is that PE's task, recovered with its other
// tasks (what it sent since the checkpoint was logged there), so if it
// arrived here it is dropped (and if it is still on its way, it is
// ignored when it comes). A move an earlier failure settled, or whose
// task a recovery placed elsewhere since, is left as it is.
func (pe *PE) undoMoves(failed []int) {
	for _, mv := range pe.moves {
		cs := pe.colls[mv.Task.Collection]
		id := commutative.TaskID(TaskID(cs.def.ID, mv.Task.Lin))
		switch {
		case slices.Contains(failed, mv.To) && mv.From == pe.cfg.Rank:
			rec, ok := pe.exported[mv.Task]
			if !ok {
				pe.halt(fmt.Errorf("scheduler: PE %d lost the record of %s[%d], which it moved to failed PE %d", pe.cfg.Rank, cs.def.Name, mv.Task.Lin, mv.To))
				return
			}
			if err := pe.importTask(rec); err != nil {
				pe.halt(err)
				return
			}
			pe.stats.MigratedIn--
			pe.stats.MigratedOut--
			pe.markRunnable(cs.local[mv.Task.Lin])
		case slices.Contains(failed, mv.To):
			if cs.homeOf[mv.Task.Lin] == int32(mv.To) {
				cs.homeOf[mv.Task.Lin] = int32(mv.From)
			}
		case slices.Contains(failed, mv.From) && mv.To == pe.cfg.Rank:
			delete(pe.expectMigrate, id)
			if _, arrived := pe.importedFrom[mv.Task]; arrived {
				if _, err := pe.exportTask(cs, mv.Task.Lin); err != nil {
					pe.halt(err)
					return
				}
				pe.stats.MigratedIn--
				pe.stats.MigratedOut--
				delete(pe.importedFrom, mv.Task)
			}
		}
	}
	// The records this PE exported stay until the commit: a move to a PE
	// that fails later, before it, is undone then.
}
