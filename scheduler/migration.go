package scheduler

import (
	"fmt"
	"slices"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/migrate"
)

// undoMoves settles a migration that a failure interrupted (the
// coordinator does the same with its placement; see OnFailure): moves
// between survivors complete; a task that was moving to a failed PE stays
// on its PE, which imports again the record it sent; a task that was
// moving away from a failed PE is that PE's task, recovered with its other
// tasks, so if it arrived here it is dropped (and if it is still on its
// way, it is ignored when it comes).
func (pe *PE) undoMoves(failed []int) {
	if len(pe.moves) == 0 {
		return
	}
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
			cs.homeOf[mv.Task.Lin] = int32(mv.From)
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
	// What still comes is from live PEs; the failed PEs' tasks are where
	// Recover's relocations say.
	pe.exported = map[migrate.TaskRef]migrate.TaskRecord{}
}
