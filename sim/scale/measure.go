package scale

import (
	"fmt"
	"time"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// Stat is a figure over the PEs of a job: its mean and its largest value
// (the PE that has most).
type Stat struct{ Mean, Max float64 }

func statOf(values []float64) Stat {
	var s Stat
	for _, v := range values {
		s.Mean += v
		s.Max = max(s.Max, v)
	}
	if len(values) > 0 {
		s.Mean /= float64(len(values))
	}
	return s
}

// Figures are a pattern's costs under a protocol over one checkpoint
// period of Steps steps (the period starts with a checkpoint: no log, no
// record), per PE per step, and those of one failure at its end.
type Figures struct {
	Pattern string
	Kind    logging.Kind
	PEs     int
	Steps   int
	// Determinants created, bytes piggybacked (determinants and progress
	// records) and bytes logged, per PE per step.
	Determinants, PiggybackBytes, LogBytes Stat
	// Stored is the determinants a PE stores at the end of the period,
	// LogHeld the bytes its sender log holds then.
	Stored, LogHeld Stat
	// Failure: PE Failed fails at the end of the period; its Relocated
	// tasks are restored on the survivors, which send Recovery.
	Failed, Relocated int
	Recovery          RecoveryCount
	// ReplayRounds is the rounds the restored tasks took to catch up.
	ReplayRounds int
	Rounds       int
	Elapsed      time.Duration
}

// Measure runs pat under kind for steps steps from a checkpoint, then,
// if fail, kills PE PEs/2 and runs until its tasks have caught up.
func Measure(pat Pattern, kind logging.Kind, steps int, fail bool) (Figures, error) {
	began := time.Now()
	n := pat.PEs()
	f := Figures{Pattern: pat.Name(), Kind: kind, PEs: n, Steps: steps, Failed: -1}
	e := NewEngine(pat, kind)
	rounds, err := e.Run(steps)
	if err != nil {
		return f, err
	}
	f.Rounds = rounds
	per := func(get func(Totals) int, perStep bool) Stat {
		vs := make([]float64, n)
		for pe := range n {
			vs[pe] = float64(get(e.Totals(pe)))
			if perStep {
				vs[pe] /= float64(steps)
			}
		}
		return statOf(vs)
	}
	f.Determinants = per(func(t Totals) int { return t.Determinants }, true)
	f.PiggybackBytes = per(func(t Totals) int { return t.PiggybackBytes }, true)
	f.LogBytes = per(func(t Totals) int { return t.LogBytes }, true)
	f.Stored = per(func(t Totals) int { return t.StoredDeterminants }, false)
	f.LogHeld = per(func(t Totals) int { return t.LogBytes }, false)
	if fail && kind != logging.KindNone && n > 1 {
		f.Failed = n / 2
		f.Relocated = len(e.byPE[f.Failed])
		if f.Recovery, err = e.Fail(f.Failed); err != nil {
			return f, err
		}
		after, err := e.Run(steps)
		if err != nil {
			return f, fmt.Errorf("recovery from the failure of PE %d: %w", f.Failed, err)
		}
		f.ReplayRounds = after - rounds
	}
	f.Elapsed = time.Since(began)
	return f, nil
}

// RecoveryIntake measures what the host of one restored task does when
// the recovery envelopes of the survivors of a job of pes PEs arrive
// (one each, carrying nothing): the time the real protocol takes to take
// them in, until the task may deliver.
func RecoveryIntake(pes int, kind logging.Kind) (time.Duration, error) {
	if pes < 3 {
		return 0, fmt.Errorf("%w: recovery in a job of %d PEs", ErrConfig, pes)
	}
	p := logging.New(kind, logging.Config{PE: 0, PEs: pes})
	const task = commutative.TaskID(1)
	survivors := make([]logging.PEID, 0, pes-1)
	for pe := range pes {
		if pe != 1 {
			survivors = append(survivors, logging.PEID(pe))
		}
	}
	began := time.Now()
	p.RestoreTask(logging.TaskCheckpoint{Counters: commutative.NewTaskState(task)}, survivors)
	p.FailureNotice([]logging.PEID{1}, []logging.Relocation{{Task: task, PE: 0}})
	p.Advance()
	for _, s := range survivors {
		p.Arrive(logging.Envelope{Kind: logging.EnvelopeRecovery, From: s, To: 0, Task: task, Epoch: 1})
	}
	// The task may deliver once every survivor's envelope is in: a
	// message for it is then delivered.
	p.Arrive(logging.Envelope{Kind: logging.EnvelopeMessage, From: 2, To: 0, Message: logging.Message{
		ID: commutative.MessageID{Sender: 7, SRN: 1}, To: task, Annotation: commutative.OrderedAnnotation()}})
	if _, ok := p.NextDelivery(task, func(logging.Message) bool { return true }); !ok {
		return 0, fmt.Errorf("scale: the restored task of a job of %d PEs does not deliver after every survivor's recovery envelope", pes)
	}
	return time.Since(began), nil
}
