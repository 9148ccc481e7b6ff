package evaluation

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Progress reports finished cases: on a terminal one line rewritten in
// place with a bar, otherwise one plain line per case.
type Progress struct {
	w        io.Writer
	terminal bool
	total    int
	n        int
	began    time.Time
}

// NewProgress reports to w, as a bar if w is a terminal.
func NewProgress(w io.Writer) *Progress {
	p := &Progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *Progress) start(total int) {
	if p == nil {
		return
	}
	p.total, p.n, p.began = total, 0, time.Now()
}

func (p *Progress) done(r Run) {
	what := fmt.Sprintf("%.2f ms/step", r.StepMS)
	if r.Failure {
		what += fmt.Sprintf(", recovery %.0f ms (%.0f ms to the next checkpoint)", r.RegainedMS, r.SinceFailureMS)
	}
	p.finished(r.Case.String(), what, r)
}

// finished reports a finished job: its name, what it measured, and from
// r its status and wall time.
func (p *Progress) finished(name, what string, r Run) {
	if p == nil {
		return
	}
	p.n++
	status := "ok"
	if !r.OK {
		status = "FAILED: " + strings.SplitN(r.Error, "\n", 2)[0]
	}
	msg := fmt.Sprintf("[%d/%d] %s: %s, %.1f s, %s", p.n, p.total, name, what, r.WallS, status)
	if !p.terminal {
		fmt.Fprintln(p.w, msg)
		return
	}
	const width = 24
	fill := width * p.n / max(p.total, 1)
	bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
	if !r.OK {
		fmt.Fprintf(p.w, "\r\033[K%s\n", msg) // keep failures on screen
	}
	fmt.Fprintf(p.w, "\r\033[K[%s] %d/%d %s (%s elapsed)", bar, p.n, p.total, name, time.Since(p.began).Round(time.Second))
}

func (p *Progress) finish() {
	if p != nil && p.terminal {
		fmt.Fprintln(p.w)
	}
}

func runtimeCPUs() int { return runtime.NumCPU() }
