package apptest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/job/inprocess"
)

// Limits of Run. A job that stops making progress ends after
// StallTimeout with the runtime's diagnosis; RunDeadline only bounds a job
// that makes progress forever.
const (
	StallTimeout = 20 * time.Second
	RunDeadline  = 5 * time.Minute
)

// Run runs app with args on pes PEs in this process, on the real
// scheduler over in-memory queues, with a stall timeout of StallTimeout
// (opts may change it) and opts (a protocol, a checkpoint period, kills).
// It fails t unless the job ends with status 0 and prints at least one
// line, showing the output and the runtime's log.
func Run(t testing.TB, app actor.App, pes int, args []string, opts ...inprocess.Option) inprocess.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunDeadline)
	defer cancel()
	var log strings.Builder
	opts = append([]inprocess.Option{inprocess.WithStallTimeout(StallTimeout)}, opts...)
	res, err := inprocess.Run(ctx, app, args, pes, &log, opts...)
	if err != nil {
		t.Fatalf("%s %q on %d PEs: %v\nlog:\n%s", app.Name, args, pes, err, log.String())
	}
	if res.Status != 0 || len(res.Output) == 0 {
		t.Fatalf("%s %q on %d PEs: exit status %d, output:\n%s\nlog:\n%s",
			app.Name, args, pes, res.Status, strings.Join(res.Output, "\n"), log.String())
	}
	return res
}

// LastJSON decodes the last line of output, an application's --json
// report, into a value of type R.
func LastJSON[R any](t testing.TB, output []string) R {
	t.Helper()
	var r R
	if len(output) == 0 {
		t.Fatal("no output, so no JSON report")
	}
	last := output[len(output)-1]
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		t.Fatalf("last line %q is not the JSON report: %v", last, err)
	}
	return r
}

// Totals are PE statistics summed over the PEs of a run.
type Totals struct {
	// Restored counts the failed PEs' tasks restored on survivors,
	// RolledBack the tasks that went back to their checkpoint where they
	// were (a global rollback), MigratedIn the tasks moved by the load
	// balancer.
	Restored, RolledBack, MigratedIn int
	// Determinants counts the determinants the protocol created.
	Determinants int
}

// Sum adds up the statistics of every PE of res.
func Sum(res inprocess.Result) Totals {
	var s Totals
	for _, st := range res.Stats {
		s.Restored += st.Restored
		s.RolledBack += st.RolledBack
		s.MigratedIn += st.MigratedIn
		s.Determinants += st.Protocol.Determinants
	}
	return s
}

// RequireRecovered fails t unless some task of res was restored or rolled
// back: a run given a kill that recovered nothing did not see the kill.
func RequireRecovered(t testing.TB, res inprocess.Result) Totals {
	t.Helper()
	s := Sum(res)
	if s.Restored+s.RolledBack == 0 {
		t.Fatal("no task was restored or rolled back: the kill did not happen")
	}
	return s
}
