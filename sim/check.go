package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/migrate"
)

// ErrCheck is wrapped by every broken property Check reports.
var ErrCheck = errors.New("sim: check failed")

// Outcome classifies a run that passed its checks.
type Outcome uint8

func (o Outcome) String() string {
	if o == Unrecoverable {
		return "unrecoverable"
	}
	return "completed"
}

const (
	// Completed: the job ended with the failure-free results.
	Completed Outcome = iota
	// Unrecoverable: the job stopped with the documented error for a
	// failure that lost both copies of a checkpoint.
	Unrecoverable
)

// Check checks a run against the failure-free run of the same program
// (clean): the job ended (no hang), with the failure-free results and
// status, and no PE dropped input as malformed; or it stopped with the
// documented error of an unrecoverable case (two PEs or more lost, both
// copies of some checkpoint among them).
func Check(cfg Config, res, clean Result) (Outcome, error) {
	if res.Hung {
		return 0, fmt.Errorf("%w: hang: %v", ErrCheck, res.Err)
	}
	dead := 0
	for _, d := range res.Dead {
		if d {
			dead++
		}
	}
	if len(res.LogLeaks) > 0 {
		return 0, fmt.Errorf("%w: logs outlive a checkpoint: %s", ErrCheck, strings.Join(res.LogLeaks[:min(3, len(res.LogLeaks))], "; "))
	}
	if res.Err != nil {
		// Both copies of a checkpoint lost: the job falls back to the
		// latest complete disk checkpoint if there is one, and stops
		// with ErrNoDiskCheckpoint otherwise.
		if errors.Is(res.Err, migrate.ErrUnrecoverable) && errors.Is(res.Err, job.ErrNoDiskCheckpoint) && dead >= 2 &&
			(!cfg.Disk && cfg.CheckpointDir == "" || strings.Contains(res.Err.Error(), "none is complete yet")) {
			return Unrecoverable, nil
		}
		return 0, fmt.Errorf("%w: the job failed (%d PEs dead): %v", ErrCheck, dead, firstLines(res.Err.Error(), 30))
	}
	if res.Status != clean.Status {
		return 0, fmt.Errorf("%w: status %d, failure-free %d", ErrCheck, res.Status, clean.Status)
	}
	got, want := Results(res.Output), Results(clean.Output)
	if !slices.Equal(got, want) {
		return 0, fmt.Errorf("%w: results differ from the failure-free run's:\n got  %q\n want %q", ErrCheck, got, want)
	}
	for r, st := range res.Stats {
		for reason, n := range st.DroppedByReason {
			if !strings.Contains(reason, "no such element") {
				return 0, fmt.Errorf("%w: PE %d dropped %d inputs: %s", ErrCheck, r, n, reason)
			}
		}
	}
	if res.Transport.Malformed > 0 {
		return 0, fmt.Errorf("%w: the transport dropped %d malformed frames", ErrCheck, res.Transport.Malformed)
	}
	return Completed, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
