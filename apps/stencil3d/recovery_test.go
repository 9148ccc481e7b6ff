package stencil3d

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/scheduler"
)

// A PE dies mid-run (in process); the job still ends with the reference
// values, under each protocol.
func TestRecoveryInProcess(t *testing.T) {
	args := []string{"--grid", "32,32,32", "--chunk", "8,8,8", "--iterations", "30"}
	clean, err := scheduler.RunInProcess(context.Background(), App, args, 3, nil)
	require.NoError(t, err)
	for _, kind := range []logging.Kind{logging.KindPartialDet, logging.KindFullDet, logging.KindNone} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := scheduler.RunInProcess(ctx, App, args, 3, nil,
				scheduler.WithProtocol(kind), scheduler.WithCheckpointEvery(10), scheduler.WithKill(1, 17))
			require.NoError(t, err)
			require.Equal(t, 0, res.Status)
			require.Equal(t, clean.Output[:3], res.Output[:3])
		})
	}
}
