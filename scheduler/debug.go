package scheduler

import (
	"fmt"

	"github.com/gochare/gochare/logging"
)

// DebugString summarises a PE's state (for diagnosing a stuck job).
func (pe *PE) DebugString() string {
	s := fmt.Sprintf("sentTo %v receivedFrom %v\nPE %d gen %d restoring %v rollingBack %v expect %d early %d runnable %d live %v store epoch %d progress %+v watch %+v resumedBelow %d dropped %v proto %+v\n",
		pe.sentTo, pe.receivedFrom, pe.cfg.Rank, pe.generation, pe.restoring, pe.rollingBack, len(pe.expectRestore), len(pe.early), len(pe.runnable)-pe.runAt, pe.live, pe.store.Epoch(), pe.progress, pe.watch, pe.resumedBelow, pe.stats.DroppedByReason, pe.proto.Stats())
	for _, cs := range pe.colls {
		for _, lin := range cs.sorted() {
			el := cs.local[lin]
			if !el.atSync {
				s += fmt.Sprintf("  %s[%d] expected %d %s\n", cs.def.Name, lin, el.expected, pe.proto.(interface{ Describe(logging.TaskID) string }).Describe(el.id))
			}
		}
	}
	return s
}
