package launcher

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
)

// newTimeline returns a timeline that logs to a buffer, without the time
// of each line.
func newTimeline(protocol logging.Kind) (*timeline, *strings.Builder) {
	var out strings.Builder
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	return &timeline{log: log, pes: 4, protocol: protocol}, &out
}

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }

// The timeline turns what the job's coordinator says happened, and when,
// into the log lines and the end-of-job report of a recovery: restore,
// catch-up to the failure point, and replay to the next checkpoint, each
// measured from the right moment.
func TestTimelineOfARecovery(t *testing.T) {
	tl, out := newTimeline(logging.KindPartialDet)
	tl.started(at(0), false)
	tl.checkpointTaken(at(10))
	tl.committed(at(15), 1)
	tl.failed(at(100), 2, "PE 2 (pid 7 on h) was killed")
	tl.restored(at(130), coord.Restored{Generation: 1, Failed: []int{2}, Relocated: 5})
	tl.watching(at(131))
	tl.regained(at(181), coord.ProgressRegained{Generation: 1, Step: 9})
	tl.checkpointTaken(at(200))
	tl.committed(at(210), 2)
	tl.checkpointTaken(at(300))
	tl.committed(at(301), 3)
	tl.report()
	for _, line := range []string{
		`msg="all PEs ready; job begins" pes=4 ft=partialdet`,
		`msg="checkpoint committed" epoch=1 ms=5`,
		`msg="PE failed" detail="PE 2 (pid 7 on h) was killed" after_begin_ms=100`,
		`msg="recovery: tasks restored, replay starts" failed=[2] restore_ms=30 relocated=5`,
		`msg="recovery report: progress at the failure regained" step=9 catch_up_ms=50 since_failure_ms=81`,
		`msg="checkpoint committed" epoch=2 ms=10`,
		`msg="recovery report: first checkpoint after the failure" replay_and_catch_up_ms=80 since_failure_ms=110`,
		`msg="recovery 1 of 1: restore 30 ms, catch-up to the failure point (step 9) 50 ms, failure → progress regained 81 ms, replay and catch-up to the next checkpoint 80 ms"`,
	} {
		require.Contains(t, out.String(), line)
	}
	require.Regexp(t, regainedLine, out.String())
	require.Regexp(t, summaryLine, out.String())
	require.Equal(t, 1, strings.Count(out.String(), "first checkpoint after the failure"), "only the first checkpoint after the failure ends its replay")
}

// A rollback is reported as one, and a second failure starts a second
// report; a recovery that did not regain its progress says so.
func TestTimelineOfRollbacks(t *testing.T) {
	tl, out := newTimeline(logging.KindNone)
	tl.started(at(0), true)
	tl.failed(at(50), 1, "PE 1 failed")
	tl.restored(at(70), coord.Restored{Generation: 1, RolledBack: true})
	tl.failed(at(90), 3, "PE 3 failed")
	tl.restored(at(130), coord.Restored{Generation: 2, RolledBack: true})
	tl.report()
	for _, line := range []string{
		`msg="all PEs ready; job resumes from the disk checkpoint" pes=4 ft=none`,
		`msg="recovery: every task rolled back to the checkpoint" restore_ms=20`,
		`msg="recovery: every task rolled back to the checkpoint" restore_ms=40`,
		`msg="recovery 1 of 2: restore 20 ms, progress at the failure not regained (the job ended or another PE failed first)"`,
		`msg="recovery 2 of 2: restore 40 ms, progress at the failure not regained`,
	} {
		require.Contains(t, out.String(), line)
	}
}
