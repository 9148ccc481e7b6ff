package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
)

func stencil() Workload { return Workloads[0] }

// The checks see what they check: a changed result, a hang, an
// unexpected error; the log check reads logs that do exist between
// checkpoints.
func TestCheckCatches(t *testing.T) {
	wl := stencil()
	clean, err := Run(Config{App: wl.App, Args: wl.Args, PEs: 3})
	require.NoError(t, err)
	require.NoError(t, clean.Err)
	require.NotEmpty(t, clean.Output)

	res, err := Run(Config{Seed: 3, App: wl.App, Args: wl.Args, PEs: 3, Protocol: logging.KindFullDet, CheckpointEvery: 2,
		Net: NetConfig{MinDelay: 10 * time.Microsecond, MaxDelay: 2 * time.Millisecond, Loss: 0.03, Dup: 0.02}})
	require.NoError(t, err)
	out, err := Check(Config{}, res, clean)
	require.NoError(t, err)
	require.Equal(t, Completed, out)
	require.Positive(t, res.Transport.Resends, "the transport repaired losses")
	logged := 0
	for _, st := range res.Stats {
		logged += st.Protocol.LoggedMessages
	}
	require.Positive(t, logged, "fulldet holds the logs of the steps after the last checkpoint")

	wrong := res
	wrong.Output = append([]string{"something else"}, res.Output[1:]...)
	_, err = Check(Config{}, wrong, clean)
	require.ErrorIs(t, err, ErrCheck)

	leak := res
	leak.LogLeaks = []string{"PE 1 after committing checkpoint 2: 3 logged messages"}
	_, err = Check(Config{}, leak, clean)
	require.ErrorIs(t, err, ErrCheck)

	hung, err := Run(Config{App: wl.App, Args: wl.Args, PEs: 3, TimeLimit: time.Millisecond})
	require.NoError(t, err)
	require.True(t, hung.Hung)
	_, err = Check(Config{}, hung, clean)
	require.ErrorIs(t, err, ErrCheck)

	failed := res
	failed.Err = errors.New("something broke")
	_, err = Check(Config{}, failed, clean)
	require.ErrorIs(t, err, ErrCheck)
	failed.Err, failed.Dead = fmt.Errorf("%w; %w", migrate.ErrUnrecoverable, job.ErrNoDiskCheckpoint), []bool{true, false, false}
	_, err = Check(Config{}, failed, clean)
	require.ErrorIs(t, err, ErrCheck, "one failure is always recoverable")
	failed.Dead = []bool{true, true, false}
	out, err = Check(Config{}, failed, clean)
	require.NoError(t, err)
	require.Equal(t, Unrecoverable, out)
	_, err = Check(Config{Disk: true}, failed, clean)
	require.ErrorIs(t, err, ErrCheck, "with a complete disk checkpoint the job rolls back to it")
}

// A frozen PE is found by its missed heartbeats and killed; a crashed
// one by its exit; the job then ends with the failure-free results. Two
// buddies lost at once without a disk checkpoint stop the job with the
// documented error; with one, it rolls back to disk and completes.
func TestFaults(t *testing.T) {
	wl := stencil()
	clean, err := Run(Config{App: wl.App, Args: wl.Args, PEs: 3})
	require.NoError(t, err)
	run := func(cfg Config) Result {
		cfg.App, cfg.Args, cfg.PEs = wl.App, wl.Args, 3
		cfg.Protocol, cfg.CheckpointEvery = logging.KindPartialDet, 1
		res, err := Run(cfg)
		require.NoError(t, err)
		return res
	}
	res := run(Config{Faults: []Fault{{PE: 0, Kind: Freeze, AtStep: 2}}})
	_, err = Check(Config{}, res, clean)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, false}, res.Dead)
	require.Greater(t, res.End, heartbeatTimeout, "the freeze was found by the heartbeat timeout")
	require.Equal(t, 1, res.Recoveries)

	res = run(Config{Faults: []Fault{{PE: 2, AfterEvent: "TakeCheckpoint", Nth: 2}}})
	_, err = Check(Config{}, res, clean)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, true}, res.Dead)

	// PE 1 is PE 0's buddy: both copies of PE 0's tasks are lost.
	pair := []Fault{{PE: 0, AtStep: 3}, {PE: 1, AtStep: 3}}
	res = run(Config{Faults: pair})
	require.ErrorIs(t, res.Err, migrate.ErrUnrecoverable)
	out, err := Check(Config{}, res, clean)
	require.NoError(t, err)
	require.Equal(t, Unrecoverable, out)

	res = run(Config{Faults: pair, Disk: true})
	out, err = Check(Config{}, res, clean)
	require.NoError(t, err)
	require.Equal(t, Completed, out, "rolled back to the disk checkpoint")
}
