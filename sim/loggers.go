package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// simLoggers are the job's loggers when the PEs dump (Config.LogQuota):
// each stores every PE's dumps of its current period and acknowledges
// each after a delay drawn from its own source (up to 2 ms, a tenth of the
// draws up to 30 ms: a slow logger); a LoggerFault kills one, losing what
// it holds, and every running PE hears of it (scheduler.LoggerLost).
type simLoggers struct {
	w    *world
	rng  *rand.Rand
	dead []bool
	// held[l][pe] are logger l's runs of PE pe, of period epoch[l][pe].
	held  []map[int][]logging.DumpBatch
	epoch []map[int]uint64
}

func newSimLoggers(w *world) *simLoggers {
	n := w.cfg.Loggers
	s := &simLoggers{w: w, rng: newRand(w.cfg.Seed, 11), dead: make([]bool, n), held: make([]map[int][]logging.DumpBatch, n), epoch: make([]map[int]uint64, n)}
	for l := range n {
		s.held[l], s.epoch[l] = map[int][]logging.DumpBatch{}, map[int]uint64{}
	}
	return s
}

// kill makes logger l die.
func (s *simLoggers) kill(l int) {
	if l < 0 || l >= len(s.dead) || s.dead[l] {
		return
	}
	s.dead[l] = true
	s.held[l] = nil
	for _, p := range s.w.pes {
		(*simNet)(p).Post(scheduler.LoggerLost{Logger: l, Why: errors.New("sim: logger died")})
	}
}

// simDumps is PE p's DumpSink.
type simDumps struct {
	s *simLoggers
	p *simPE
}

func (d simDumps) Dump(b logging.DumpBatch) {
	s, p := d.s, d.p
	if b.Logger < 0 || b.Logger >= len(s.dead) {
		panic(fmt.Sprintf("sim: PE %d dumps to logger %d of %d", p.rank, b.Logger, len(s.dead)))
	}
	if s.dead[b.Logger] {
		(*simNet)(p).Post(scheduler.LoggerLost{Logger: b.Logger, Why: errors.New("sim: logger is dead")})
		return
	}
	if _, err := logging.DecodeDumped(b.Payload); err != nil {
		panic(fmt.Sprintf("sim: PE %d's dump to logger %d: %v", p.rank, b.Logger, err))
	}
	runs := s.held[b.Logger][p.rank]
	if s.epoch[b.Logger][p.rank] != b.Epoch {
		runs = nil
	}
	for len(runs) > 0 && runs[len(runs)-1].From >= b.From {
		runs = runs[:len(runs)-1]
	}
	s.held[b.Logger][p.rank], s.epoch[b.Logger][p.rank] = append(runs, b), b.Epoch
	delay := time.Duration(s.rng.Int64N(int64(2 * time.Millisecond)))
	if s.rng.IntN(10) == 0 {
		delay = time.Duration(s.rng.Int64N(int64(30 * time.Millisecond)))
	}
	ack := scheduler.DumpAcked{Logger: b.Logger, Epoch: b.Epoch, To: b.To}
	s.w.at(delay, fmt.Sprintf("logger %d acknowledges PE %d's dump up to %d", b.Logger, p.rank, b.To), func() {
		if !s.dead[ack.Logger] {
			(*simNet)(p).Post(ack)
		}
	})
}

func (d simDumps) Fetch(logger int, epoch uint64, from, to int) ([]byte, error) {
	s, p := d.s, d.p
	if logger < 0 || logger >= len(s.dead) || s.dead[logger] {
		return nil, fmt.Errorf("sim: logger %d is dead", logger)
	}
	if s.epoch[logger][p.rank] != epoch {
		return nil, fmt.Errorf("sim: logger %d holds period %d of PE %d, not %d", logger, s.epoch[logger][p.rank], p.rank, epoch)
	}
	var out []byte
	at := from
	for _, r := range s.held[logger][p.rank] {
		if r.To <= at || r.From >= to {
			continue
		}
		if r.From != at || r.To > to {
			return nil, fmt.Errorf("sim: logger %d: no run of PE %d starts at %d", logger, p.rank, at)
		}
		out = append(out, r.Payload...)
		at = r.To
	}
	if at != to {
		return nil, fmt.Errorf("sim: logger %d holds PE %d's entries up to %d, not %d", logger, p.rank, at, to)
	}
	return out, nil
}
