package inprocess

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// memLoggers are a job's loggers in memory (WithLogQuota): each stores
// the dumps of every PE, per PE, and acknowledges them cumulatively from
// a goroutine, as a logger process answers over its socket.
type memLoggers struct {
	mu    sync.Mutex
	dies  func(logger, dumps int) bool
	dumps []int
	dead  []bool
	// stored[l][pe] is what logger l holds of PE pe: the period and the
	// end of what it stored.
	stored []map[int]memRun
	nets   []*memNet
}

type memRun struct {
	epoch uint64
	to    int
	runs  []logging.DumpBatch
}

func newMemLoggers(n int, dies func(logger, dumps int) bool) *memLoggers {
	m := &memLoggers{dies: dies, dumps: make([]int, n), dead: make([]bool, n), stored: make([]map[int]memRun, n)}
	for l := range m.stored {
		m.stored[l] = map[int]memRun{}
	}
	return m
}

type memSink struct {
	m   *memLoggers
	net *memNet
}

func (m *memLoggers) sink(n *memNet) scheduler.DumpSink {
	m.mu.Lock()
	m.nets = append(m.nets, n)
	m.mu.Unlock()
	return memSink{m: m, net: n}
}

// Dump stores b on its logger and acknowledges it, unless the logger is
// (or now becomes) dead: then every PE hears of its death.
func (s memSink) Dump(b logging.DumpBatch) {
	m := s.m
	m.mu.Lock()
	if b.Logger < 0 || b.Logger >= len(m.dead) {
		m.mu.Unlock()
		panic(fmt.Sprintf("inprocess: dump to logger %d of %d", b.Logger, len(m.dead)))
	}
	if !m.dead[b.Logger] && m.dies != nil && m.dies(b.Logger, m.dumps[b.Logger]) {
		m.dead[b.Logger] = true
		nets := append([]*memNet(nil), m.nets...)
		m.mu.Unlock()
		for _, n := range nets {
			n.Post(scheduler.LoggerLost{Logger: b.Logger, Why: errors.New("inprocess: logger died")})
		}
		return
	}
	if m.dead[b.Logger] {
		m.mu.Unlock()
		s.net.Post(scheduler.LoggerLost{Logger: b.Logger, Why: errors.New("inprocess: logger is dead")})
		return
	}
	m.dumps[b.Logger]++
	if _, err := logging.DecodeDumped(b.Payload); err != nil {
		m.mu.Unlock()
		panic(fmt.Sprintf("inprocess: logger %d: %v", b.Logger, err))
	}
	st := m.stored[b.Logger][s.net.rank]
	if st.epoch != b.Epoch || b.From < st.to {
		st = memRun{epoch: b.Epoch}
	}
	st.to, st.runs = b.To, append(st.runs, b)
	m.stored[b.Logger][s.net.rank] = st
	m.mu.Unlock()
	go s.net.Post(scheduler.DumpAcked{Logger: b.Logger, Epoch: b.Epoch, To: b.To})
}

// Fetch returns the entries [from, to) of period epoch logger stores for
// this PE, joined from the dumps that cover them exactly.
func (s memSink) Fetch(logger int, epoch uint64, from, to int) ([]byte, error) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if logger < 0 || logger >= len(m.dead) || m.dead[logger] {
		return nil, fmt.Errorf("inprocess: logger %d is dead", logger)
	}
	st := m.stored[logger][s.net.rank]
	if st.epoch != epoch {
		return nil, fmt.Errorf("inprocess: logger %d holds period %d of PE %d, not %d", logger, st.epoch, s.net.rank, epoch)
	}
	var out []byte
	at := from
	for _, r := range st.runs {
		if r.To <= at || r.From >= to {
			continue
		}
		if r.From != at || r.To > to {
			return nil, fmt.Errorf("inprocess: logger %d: no run of PE %d starts at %d", logger, s.net.rank, at)
		}
		out = append(out, r.Payload...)
		at = r.To
	}
	if at != to {
		return nil, fmt.Errorf("inprocess: logger %d holds PE %d's entries up to %d, not %d", logger, s.net.rank, at, to)
	}
	return out, nil
}
