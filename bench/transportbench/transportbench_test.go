package transportbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// peerEnv makes the test binary the peer process of Main: "1" runs Peer
// with the arguments Main gives it, "exit" ends at once with status 3.
const peerEnv = "GOCHARE_TRANSPORTBENCH_TEST_PEER"

// peerUp is the line a test peer process writes to stderr as it starts.
const peerUp = "test peer up"

func TestMain(m *testing.M) {
	switch os.Getenv(peerEnv) {
	case "1":
		fmt.Fprintln(os.Stderr, peerUp)
		if err := Peer(os.Args[1:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "exit":
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// stackEnv makes TestMainMeasuresEveryStack measure this one stack itself.
const stackEnv = "GOCHARE_TRANSPORTBENCH_TEST_STACK"

// TestMainMeasuresEveryStack runs `gochare bench transport` as the command
// does, with the echo side in a child process, and checks that the table
// has a figure of the stack measured for every size and metric. A process
// may start only one protoactor remote (remote.Start sets gRPC's global
// logger, a data race with the gRPC goroutines of a remote already
// running), so each stack is measured by a test process of its own.
func TestMainMeasuresEveryStack(t *testing.T) {
	if stack := os.Getenv(stackEnv); stack != "" {
		measureOneStack(t, stack)
		return
	}
	for i, stack := range benchStacks() {
		t.Run(stack, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMainMeasuresEveryStack$", "-test.v")
			cmd.Env = append(os.Environ(), stackEnv+"="+stack)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "--- PASS: TestMainMeasuresEveryStack", "%s", out)
			require.Contains(t, string(out), fmt.Sprintf("column %d measured", 2+i), "%s", out)
		})
	}
}

func measureOneStack(t *testing.T, stack string) {
	t.Setenv(peerEnv, "1")
	var stdout, stderr bytes.Buffer
	err := Main(t.Context(), []string{"--stacks", stack, "--sizes", "64,40000", "--time", "5ms", "--rounds", "1"}, &stdout, &stderr, []string{os.Args[0]})
	require.NoError(t, err, stderr.String())
	table := stdout.String()
	column := 2 + slices.Index(benchStacks(), stack)
	rows := 0
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.Len(t, cells, 2+len(benchStacks())+len(ratios), line)
		for i, c := range cells[2 : 2+len(benchStacks())] {
			if 2+i == column {
				require.NotEqual(t, "–", strings.TrimSpace(c), "%s has no figure: %s", stack, line)
			} else {
				require.Equal(t, "–", strings.TrimSpace(c), "a stack not measured has a figure: %s", line)
			}
		}
		rows++
	}
	require.Equal(t, 2*3, rows, table) // two sizes, three metrics
	require.Contains(t, table, "| 64 B | round trip")
	require.Contains(t, table, "| 40000 B | one-way (MB/s)")
	t.Logf("column %d measured:\n%s", column, table)
}

// A peer process that ends before it connects is an error at once, not a
// wait for the connection timeout.
func TestMainPeerThatEnds(t *testing.T) {
	t.Setenv(peerEnv, "exit")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := Main(t.Context(), []string{"--sizes", "64", "--time", "1ms", "--rounds", "1"}, &stdout, &stderr, []string{os.Args[0]})
	require.ErrorIs(t, err, ErrBench)
	require.ErrorContains(t, err, "ended")
	require.ErrorContains(t, err, "exit status 3")
	require.Less(t, time.Since(start), 25*time.Second, "waited for the connection timeout")
	require.Empty(t, stdout.String())
}

// Cancelling the context stops a measurement at once, with the reason.
func TestMainStopsWhenCancelled(t *testing.T) {
	t.Setenv(peerEnv, "1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	up := make(chan struct{})
	stderr := &watchWriter{line: peerUp, seen: up}
	done := make(chan error, 1)
	go func() {
		// Measurements of an hour each: only the cancel ends this.
		done <- Main(ctx, []string{"--stacks", "gochare-tcp", "--time", "1h"}, io.Discard, stderr, []string{os.Args[0]})
	}()
	select {
	case <-up:
	case err := <-done:
		t.Fatalf("Main returned before the peer was up: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the peer process did not start")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrBench)
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("Main did not stop when cancelled")
	}
}

// watchWriter closes seen when line is written.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line string
	seen chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.seen != nil && strings.Contains(w.buf.String(), w.line) {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

func TestMainRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"--stacks", "gochare-tcp,udp"},
		{"--sizes", "64,0"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		err := Main(t.Context(), args, &stdout, &stderr, []string{"/nonexistent/peer"})
		require.ErrorIs(t, err, ErrBench, "%v", args)
		require.Empty(t, stdout.String())
	}
	require.ErrorIs(t, Peer(nil, new(bytes.Buffer)), ErrBench)
}

// testLog sends log lines to t.Log while the test runs.
type testLog struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func newTestLog(t testing.TB) *slog.Logger {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// BenchmarkTransport measures, for each stack, the round trip (ping-pong)
// and one-way throughput of 64 B, 32 KiB, 256 KiB and 512 KiB payloads between two
// endpoints in this process. gochare bench transport measures the same
// between two processes.
func BenchmarkTransport(b *testing.B) {
	logger := newTestLog(b)
	secret := []byte("bench-secret")
	for _, stack := range benchStacks() {
		b.Run(stack, func(b *testing.B) {
			d, err := newBenchDriver(stack, secret, logger)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			e, err := newBenchEcho(stack, secret, logger)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if err := e.Connect(orDash(d.Addr())); err != nil {
				b.Fatal(err)
			}
			if err := d.Connect(e.Addr()); err != nil {
				b.Fatal(err)
			}
			for _, size := range []int{64, 32 << 10, 256 << 10, 512 << 10} {
				if _, err := d.PingPong(b.Context(), 20, size); err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("pingpong/%s", sizeName(size)), func(b *testing.B) {
					el, err := d.PingPong(b.Context(), b.N, size)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(el)/float64(time.Microsecond)/float64(b.N), "µs/rtt")
				})
				b.Run(fmt.Sprintf("oneway/%s", sizeName(size)), func(b *testing.B) {
					b.SetBytes(int64(size))
					el, err := d.Stream(b.Context(), b.N, size)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)*float64(size)/1e6/el.Seconds(), "MB/s")
					b.ReportMetric(float64(b.N)/el.Seconds(), "msg/s")
				})
			}
		})
	}
}
