package scheduler

import (
	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job"
)

// eventHandler applies the coordinator's events to its PE: it is the PE's
// job.PEHandler, one method per event, to which PE.Event dispatches every
// job.Event. An event added to package job does not compile until it has
// its method here.
type eventHandler struct{ pe *PE }

var _ job.PEHandler = (*eventHandler)(nil)

func (h *eventHandler) Begin(job.Begin) {
	h.pe.rollingBack = false
	h.pe.begin()
}

func (h *eventHandler) Resume(ev job.Resume) {
	h.pe.rollingBack = false
	h.pe.noteStop()
	if h.pe.quota() != nil {
		h.pe.resumeSync(ev.Passed) // one task at a time (quota.go)
		return
	}
	h.pe.resume(ev.Passed)
}

// Stop is for the process that hosts the PE (it reports the PE's counters
// and exits); the PE has nothing to do.
func (h *eventHandler) Stop(job.Stop) {}

func (h *eventHandler) Probe(ev job.Probe) {
	r := ev.Round
	h.pe.probe = &r
	h.pe.answerProbe()
}

func (h *eventHandler) QuiescenceDetected(ev job.QuiescenceDetected) {
	pe := h.pe
	cbs := pe.qdCallbacks
	pe.qdCallbacks = nil
	for _, cb := range cbs {
		pe.deliverToCallback(pe.system, cb.Target(), cb.MessageName(), &actor.Quiescence{Number: ev.Number})
	}
	pe.transmit()
	pe.schedule()
}

func (h *eventHandler) TakeCheckpoint(ev job.TakeCheckpoint) { h.pe.takeCheckpoint(ev.Epoch) }

func (h *eventHandler) CommitCheckpoint(ev job.CommitCheckpoint) { h.pe.commitCheckpoint(ev) }

func (h *eventHandler) CollectLoads(job.CollectLoads) { h.pe.cfg.Control.Loads(h.pe.loads()) }

func (h *eventHandler) Migrate(ev job.Migrate) {
	h.pe.migrateTasks(ev.Moves)
	h.pe.transmit()
	h.pe.schedule()
}

func (h *eventHandler) Recover(ev job.Recover) {
	h.pe.recover(ev)
	h.pe.schedule()
}

func (h *eventHandler) NoticeFailure(ev job.NoticeFailure) { h.pe.noticeFailure(ev) }

func (h *eventHandler) Rollback(ev job.Rollback) {
	h.pe.rollback(ev)
	h.pe.schedule()
}

func (h *eventHandler) WatchProgress(ev job.WatchProgress) { h.pe.watchProgress(ev) }

// ReportProgress and Diagnose are answered even by a halted PE (see
// PE.Event).
func (h *eventHandler) ReportProgress(job.ReportProgress) {
	h.pe.cfg.Control.Progress(h.pe.stats.Delivered)
}

func (h *eventHandler) Diagnose(job.Diagnose) { h.pe.cfg.Control.Diagnosis(h.pe.Diagnosis()) }
