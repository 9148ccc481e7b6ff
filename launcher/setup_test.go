package launcher

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
	"github.com/stretchr/testify/require"
)

// A PE that the coordinator stops after its hello and before its setup
// (the job ended before it began) leaves quietly, as a PE stopped later
// does, and says why; it used to fail with "bad setup from coordinator".
func TestPEStoppedBeforeItsSetupLeavesQuietly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var logs bytes.Buffer
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		status, err := runPE(context.Background(), peOptions{
			Coordinator: ln.Addr().String(), Rank: 1, Size: 2, Secret: []byte("job-secret"),
			Host: "127.0.0.1", Log: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		done <- result{status, err}
	}()
	raw, err := ln.Accept()
	require.NoError(t, err)
	cn := newConn(raw)
	defer cn.close()
	require.NoError(t, cn.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Challenge{Challenge: &controlpb.Challenge{Nonce: []byte("nonce")}}}))
	var hello controlpb.ToCoordinator
	require.NoError(t, cn.recv(&hello))
	require.Equal(t, int32(1), hello.GetHello().GetRank())
	require.NoError(t, cn.send(&controlpb.ToPE{Msg: &controlpb.ToPE_Stop{Stop: &controlpb.Stop{Status: 1}}}))
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, 0, r.status)
	case <-time.After(time.Minute):
		t.Fatal("the PE did not leave after a stop before its setup")
	}
	require.Contains(t, logs.String(), "the job stopped before this PE was set up")
}
