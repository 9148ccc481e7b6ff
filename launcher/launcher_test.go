package launcher

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
	"github.com/gochare/gochare/launcher/controlpb"
)

// The integration tests start the gochare command (testbin.Gochare) and
// the same launcher with the faults test app (faultsPackage), each built
// once per test process.
const faultsPackage = "github.com/gochare/gochare/launcher/internal/faults"

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// job is a running `gochare run` whose output lines are collected.
type job struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	more  chan struct{}
	done  chan struct{} // closed once the process ended and its output was read
	err   error
}

// output returns everything the job printed so far.
func (j *job) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.lines, "\n")
}

func startJob(t *testing.T, args ...string) *job {
	t.Helper()
	return startBinary(t, testbin.Gochare(t), args...)
}

func startBinary(t *testing.T, bin string, args ...string) *job {
	t.Helper()
	j := &job{cmd: exec.Command(bin, args...), more: make(chan struct{}, 1), done: make(chan struct{})}
	pr, pw := io.Pipe()
	j.cmd.Stdout = pw
	j.cmd.Stderr = pw
	require.NoError(t, j.cmd.Start())
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			j.mu.Lock()
			j.lines = append(j.lines, sc.Text())
			j.mu.Unlock()
			select {
			case j.more <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		j.err = j.cmd.Wait()
		pw.Close()
		<-eof
		close(j.done)
	}()
	t.Cleanup(func() {
		j.cmd.Process.Kill()
		<-j.done
	})
	return j
}

// waitLine waits until a line matches re and returns its submatches.
func (j *job) waitLine(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		j.mu.Lock()
		for _, l := range j.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				j.mu.Unlock()
				return m
			}
		}
		j.mu.Unlock()
		select {
		case <-j.more:
		case <-j.done:
			// One last look after the process ended.
			select {
			case <-j.more:
				continue
			default:
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			for _, l := range j.lines {
				if m := re.FindStringSubmatch(l); m != nil {
					return m
				}
			}
			t.Fatalf("job ended without a line matching %q; output:\n%s", re, strings.Join(j.lines, "\n"))
		case <-deadline.C:
			j.mu.Lock()
			defer j.mu.Unlock()
			t.Fatalf("no line matching %q within %v; output:\n%s", re, timeout, strings.Join(j.lines, "\n"))
		}
	}
}

func (j *job) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(timeout):
		t.Fatalf("job still running after %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(j.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, j.err)
	return 0
}

var pidsLine = regexp.MustCompile(`msg="started PEs".* pids="?\[([0-9 ]+)\]`)

func parsePids(t *testing.T, s string) []int {
	var pids []int
	for _, f := range strings.Fields(s) {
		p, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, p)
	}
	return pids
}

// gone reports whether no process with this pid exists (zombies count as
// gone: they no longer run).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] == "Z"
}

func TestStencilOnRealPEsMatchesReference(t *testing.T) {
	for _, pes := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprintf("%dpes", pes), func(t *testing.T) {
			j := startJob(t, "run", "stencil3d", "--pes", strconv.Itoa(pes), "--iterations", "10")
			require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
			j.waitLine(t, regexp.MustCompile(`^chunk sum 465997.75732668047 fnv1a ebd12050aa174b8e \(all 64 chunks equal\)$`), time.Second)
			j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
		})
	}
}

func TestKilledPEIsReportedWithinOneSecondAndNothingIsLeft(t *testing.T) {
	args := []string{"run", "stencil3d", "--pes", "3", "--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "3000", "--checkpoint-every", "500"}
	clean := startJob(t, args...)
	require.Equal(t, 0, clean.wait(t, 2*time.Minute), clean.output())
	want := clean.waitLine(t, regexp.MustCompile(`^job digest ([0-9a-f]+)$`), time.Second)[1]

	j := startJob(t, args...)
	pids := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	require.Len(t, pids, 3)
	j.waitLine(t, regexp.MustCompile(`checkpoint committed" epoch=2`), 30*time.Second)
	victim := pids[1]
	killed := time.Now()
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE 1 \(pid %d.*killed by signal 9`, victim)), 5*time.Second)
	detected := time.Since(killed)
	require.Less(t, detected, time.Second, "the launcher must report a dead PE within one second")
	// The job recovers and ends with the failure-free result.
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, regexp.MustCompile(`^job digest ([0-9a-f]+)$`), time.Second)[1])
	for _, pid := range pids {
		require.True(t, gone(pid), "PE pid %d still running after the job ended", pid)
	}
	t.Logf("dead PE reported after %v", detected)
}

func TestKilledLauncherLeavesNoOrphans(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "2", "--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "100000000")
	pids := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`job begins`), 30*time.Second)
	require.NoError(t, j.cmd.Process.Kill())
	<-j.done
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			require.True(t, time.Now().Before(deadline), "PE pid %d outlived its launcher", pid)
			time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
		}
	}
}

func TestStrangerIsRefusedByCoordinator(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "1", "--external", "--iterations", "10")
	addr := j.waitLine(t, regexp.MustCompile(`--coordinator (\S+)`), 30*time.Second)[1]

	for _, tc := range []struct {
		name  string
		hello func(nonce []byte) *controlpb.Hello
		why   string
	}{
		{"wrong secret", func(nonce []byte) *controlpb.Hello {
			return &controlpb.Hello{Rank: 0, Size: 1, Mac: helloMAC([]byte("not the job secret at all"), nonce)}
		}, "wrong job secret"},
		{"no hello", nil, "first message is not a hello"},
	} {
		raw, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		c := newConn(raw)
		var first controlpb.ToPE
		require.NoError(t, c.recv(&first))
		nonce := first.GetChallenge().GetNonce()
		require.Len(t, nonce, 32)
		if tc.hello != nil {
			require.NoError(t, c.send(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Hello{Hello: tc.hello(nonce)}}))
		} else {
			require.NoError(t, c.send(&controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Ready{Ready: &controlpb.Ready{}}}))
		}
		var reply controlpb.ToPE
		require.Error(t, c.recv(&reply), "%s: the coordinator must close the connection", tc.name)
		c.close()
		j.waitLine(t, regexp.MustCompile(`refused connection" peer=127.0.0.1:\d+ reason="`+tc.why), 10*time.Second)
	}
	// A garbage stream is refused too, and the job still accepts its PE.
	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	raw.Write(bytes.Repeat([]byte{0xff}, 64))
	raw.Close()
	secret := j.waitLine(t, regexp.MustCompile(`GOCHARE_JOB_SECRET=([0-9a-f]+)`), time.Second)[1]
	// A PE of the job started with another transport is told why it is
	// refused, and the job goes on waiting for its PE.
	pe := exec.Command(testbin.Gochare(t), "pe", "--coordinator", addr, "--rank", "0", "--size", "1", "--transport", "protoactor")
	pe.Env = append(os.Environ(), "GOCHARE_JOB_SECRET="+secret)
	out, err := pe.CombinedOutput()
	require.Error(t, err, "a PE with another transport must fail")
	require.Contains(t, string(out), `launcher: PE 0: the coordinator refused it: PE 0 runs the "protoactor" transport, the job runs "tcp" (--transport)`)
	j.waitLine(t, regexp.MustCompile(`refused connection" peer=127.0.0.1:\d+ reason="PE 0 runs the \\"protoactor\\" transport`), 10*time.Second)
	pe = exec.Command(testbin.Gochare(t), "pe", "--coordinator", addr, "--rank", "0", "--size", "1")
	pe.Env = append(os.Environ(), "GOCHARE_JOB_SECRET="+secret)
	require.NoError(t, pe.Run())
	require.Equal(t, 0, j.wait(t, time.Minute))
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
}

func TestBadFlagsAreRefusedBeforeAnyPEStarts(t *testing.T) {
	for _, args := range [][]string{
		{"run", "stencil3d", "--pes", "2", "--grid", "banana"},
		{"run", "stencil3d", "--pes", "0"},
		{"run", "stencil3d"},
		{"run", "nosuchapp", "--pes", "2"},
		{"pe", "--coordinator", "127.0.0.1:1"},
	} {
		out, err := exec.Command(testbin.Gochare(t), args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		require.Equal(t, 2, ee.ExitCode(), "%v: %s", args, out)
		require.NotContains(t, string(out), "started PEs", "%v", args)
		require.Contains(t, string(out), "gochare:", "%v", args)
	}
}

func TestSplitRunArgs(t *testing.T) {
	o, app, err := splitRunArgs([]string{"--grid", "8,8,8", "--pes=3", "--json", "--listen", "0.0.0.0:7000", "--iterations", "5"})
	require.NoError(t, err)
	require.Equal(t, 3, o.pes)
	require.Equal(t, "0.0.0.0:7000", o.listen)
	require.Equal(t, []string{"--grid", "8,8,8", "--json", "--iterations", "5"}, app)
	_, _, err = splitRunArgs([]string{"--pes"})
	require.ErrorIs(t, err, errUsage)
}

var _ = context.Background

func TestLeanMDDigestIndependentOfPECount(t *testing.T) {
	digests := map[int]string{}
	for _, pes := range []int{1, 3} {
		j := startJob(t, "run", "leanmd", "--pes", strconv.Itoa(pes), "--cells", "3,3,3", "--steps", "25", "--json")
		require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
		digests[pes] = j.waitLine(t, regexp.MustCompile(`^digest: ([0-9a-f]{16})$`), time.Second)[1]
		j.waitLine(t, regexp.MustCompile(`^\{"app":"leanmd".*"atoms_migrated":\d+`), time.Second)
	}
	require.Equal(t, digests[1], digests[3], "the final atom state must not depend on the number of PEs")
}

// GOCHARE_CPUPROFILE makes every PE and logger write a complete CPU
// profile (a gzipped protobuf, finished when the process stops),
// GOCHARE_MEMPROFILE a PE's allocation profile; a logger says the CPU it
// used when it stops.
func TestCPUProfilePerPE(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOCHARE_CPUPROFILE", dir)
	t.Setenv("GOCHARE_MEMPROFILE", dir)
	j := startJob(t, "run", "stencil3d", "--pes", "2", "--iterations", "5", "--loggers", "1")
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`logger stops.* cpu_ms=\d+`), time.Second)
	for _, name := range []string{"pe-0.prof", "pe-1.prof", "pe-0.allocs.prof", "pe-1.allocs.prof", "logger-0.prof"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err, name)
		n, err := io.Copy(io.Discard, zr)
		f.Close()
		require.NoError(t, err, name)
		require.Positive(t, n, name)
	}
}
