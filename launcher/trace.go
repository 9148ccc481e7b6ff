package launcher

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Traces in the Chrome trace-event format (they open in Perfetto or
// chrome://tracing): every PE writes the handlers it ran to its own file
// next to the launcher's (FILE.pe<rank>), and the launcher merges them with
// its own events (checkpoints, failures, restore and replay phases) into
// FILE when the job ends.

// traceEvent is one Chrome trace event.
type traceEvent struct {
	Name  string `json:"name"`
	Cat   string `json:"cat,omitempty"`
	Ph    string `json:"ph"`
	TS    int64  `json:"ts"`            // µs
	Dur   int64  `json:"dur,omitempty"` // µs
	PID   int    `json:"pid"`
	TID   int    `json:"tid"`
	Scope string `json:"s,omitempty"`
}

// maxTraceEvents bounds a trace's memory per process.
const maxTraceEvents = 2_000_000

type tracer struct {
	mu      sync.Mutex
	pid     int
	events  []traceEvent
	dropped int
}

func (t *tracer) add(e traceEvent) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) >= maxTraceEvents {
		t.dropped++
		return
	}
	e.PID = t.pid
	t.events = append(t.events, e)
}

// span records a complete event from start to now.
func (t *tracer) span(name, cat string, start time.Time) {
	t.add(traceEvent{Name: name, Cat: cat, Ph: "X", TS: start.UnixMicro(), Dur: max(time.Since(start).Microseconds(), 1)})
}

// instant records an instant event.
func (t *tracer) instant(name, cat string) {
	t.add(traceEvent{Name: name, Cat: cat, Ph: "i", TS: time.Now().UnixMicro(), Scope: "g"})
}

// handler records a handler run on a PE.
func (t *tracer) handler(collection, handler string, start time.Time, d time.Duration) {
	t.add(traceEvent{Name: collection + "." + handler, Cat: "handler", Ph: "X", TS: start.UnixMicro(), Dur: max(d.Microseconds(), 1)})
}

func peTraceFile(file string, rank int) string { return fmt.Sprintf("%s.pe%d", file, rank) }

// writeEvents writes events as a JSON array, one per line.
func (t *tracer) write(file string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("launcher: trace: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range t.events {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return fmt.Errorf("launcher: trace: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("launcher: trace: %w", err)
	}
	return f.Close()
}

// merge writes the launcher's events and every PE's into file, as one
// trace, and removes the PE files it read.
func (t *tracer) merge(file string, pes int) error {
	out, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("launcher: trace: %w", err)
	}
	w := bufio.NewWriter(out)
	fmt.Fprint(w, `{"displayTimeUnit":"ms","traceEvents":[`)
	first := true
	emit := func(b []byte) {
		if !first {
			w.WriteByte(',')
		}
		first = false
		w.WriteByte('\n')
		w.Write(b)
	}
	meta := func(pid int, name string) {
		b, _ := json.Marshal(map[string]any{"name": "process_name", "ph": "M", "pid": pid, "args": map[string]string{"name": name}})
		emit(b)
	}
	meta(-1, "launcher")
	t.mu.Lock()
	for _, e := range t.events {
		b, _ := json.Marshal(e)
		emit(b)
	}
	t.mu.Unlock()
	for r := 0; r < pes; r++ {
		meta(r, fmt.Sprintf("PE %d", r))
		name := peTraceFile(file, r)
		f, err := os.Open(name)
		if err != nil {
			continue // a PE on another host, or one that died
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			emit(append([]byte(nil), sc.Bytes()...))
		}
		f.Close()
		os.Remove(name)
	}
	fmt.Fprint(w, "\n]}\n")
	if err := w.Flush(); err != nil {
		out.Close()
		return fmt.Errorf("launcher: trace: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("launcher: trace: %w", err)
	}
	return nil
}
