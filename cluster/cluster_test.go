package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// skipStatus is the exit status with which a harness says it cannot run
// here (not root, no network namespaces, no Slurm), with a message.
const skipStatus = 77

// needRoot skips t unless the test runs as root: both harnesses change
// the machine (network namespaces; Slurm's daemons).
func needRoot(t *testing.T, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("cluster: %s needs root (run go test as root); skipped", what)
	}
}

// runScript runs a harness script with args in its own process group, its
// output logged line by line as it comes, and returns the output and exit
// status. Past timeout the group gets SIGTERM (the scripts clean up on
// it), and SIGKILL 30 s later. A script that says it cannot run here
// (status 77) skips t with its message.
func runScript(t *testing.T, timeout time.Duration, script string, args ...string) (string, int) {
	t.Helper()
	// Within the test binary's own deadline (go test -timeout), so that
	// the script is stopped and cleans up before the test binary is.
	if d, ok := t.Deadline(); ok {
		timeout = min(timeout, time.Until(d)-45*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var (
		mu  sync.Mutex
		out strings.Builder
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			t.Log(sc.Text())
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	require.NoError(t, cmd.Start())
	// Whatever the script left behind in its group goes with the test.
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	pw.Close()
	<-read
	mu.Lock()
	text := out.String()
	mu.Unlock()
	require.NoError(t, ctx.Err(), "%s did not end within %v", script, timeout)
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	if status == skipStatus {
		t.Skipf("cluster: %s cannot run here: %s", script, lastLine(text))
	}
	return text, status
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// netnsList returns the network namespaces whose name starts with prefix.
func netnsList(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	require.NoError(t, err, "ip netns list")
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names
}

// TestNetnsHarness runs cluster/netns.sh: four hosts as network
// namespaces, the coordinator on one and six PEs on the three others;
// each mini-app with a PE SIGKILLed on another host, then a host whose
// link goes down, each ending with the failure-free digest; stencil3d
// again with --tls (and a stranger without a certificate refused); and a PE that
// listens on loopback where a PE on another host must dial it, which
// stops the job at once with an error naming both. The script
// checks each outcome (status, digest, reference, which PEs failed and
// how, how the others ended); this test checks that every scenario said
// so and that no namespace is left. On the project's shared 2-core
// machine: 26 s at a quiet moment, 4.6 min at load 41.
func TestNetnsHarness(t *testing.T) {
	needRoot(t, "the network-namespace harness")
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("cluster: the network-namespace harness needs the ip command (iproute2); skipped")
	}
	prefix := fmt.Sprintf("gct%d", os.Getpid())
	t.Cleanup(func() {
		// The script removes its namespaces; if it could not, they go here
		// and the test has failed below.
		for _, n := range netnsList(t, prefix+"-") {
			exec.Command("ip", "netns", "del", n).Run()
		}
	})
	out, status := runScript(t, 8*time.Minute, "./netns.sh", "--bin", testbin.Gochare(t), "--prefix", prefix, "--timeout", "120")
	require.Equal(t, 0, status, "netns.sh failed")
	for _, re := range []string{
		`(?m)^netns\.sh: stencil3d: ok: recovered across hosts, digest [0-9a-f]{16} = failure-free, reference: match`,
		`(?m)^netns\.sh: leanmd: ok: recovered across hosts, digest [0-9a-f]{16} = failure-free`,
		`(?m)^netns\.sh: lulesh: ok: recovered across hosts, digest [0-9a-f]{16} = failure-free, reference: match`,
		`(?m)^netns\.sh: linkdown: ok: PEs 0 3 declared dead for missed heartbeats, recovered, digest [0-9a-f]{16} = failure-free, reference: match`,
		`(?m)^netns\.sh: loopback: ok: PE 0 on loopback runs \(nobody dials it\); PE 1 on loopback, to be dialed from \S+, stops the job at once, naming both`,
		`(?m)^netns\.sh: tls: ok: stencil3d with --tls, a stranger without a certificate refused, recovered across hosts, digest [0-9a-f]{16} = failure-free, reference: match`,
		`(?m)^netns\.sh: PASS: stencil3d,leanmd,lulesh,linkdown,loopback,tls$`,
	} {
		require.Regexp(t, regexp.MustCompile(re), out)
	}
	require.Empty(t, netnsList(t, prefix+"-"), "netns.sh left network namespaces behind")
}

// freePort returns a TCP port nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestSlurm runs cluster/slurm.sh on a Slurm installed beforehand
// (cluster/slurm.sh install; this test installs nothing): a private
// single-node instance (munged, slurmctld, slurmd) on free ports, then
// stencil3d with its coordinator started as README.md says and its PEs
// by srun -n 4, one task's PE SIGKILLed; the same with --tls; then the same through
// cluster/sbatch-example.sh. The script checks each outcome (statuses,
// digest, reference, how the failure was detected, what srun reported);
// this test checks that both runs said so and that the instance is gone.
// On the project's shared 2-core machine: 30 s, and 78 s at load 41.
func TestSlurm(t *testing.T) {
	needRoot(t, "the Slurm harness")
	for _, c := range []string{"slurmctld", "slurmd", "srun", "sbatch", "munged"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("cluster: Slurm is not installed (no %s; sudo cluster/slurm.sh install installs Debian's slurm-wlm); skipped", c)
		}
	}
	dir, err := os.MkdirTemp("/var/tmp", "gochare-slurm-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	out, status := runScript(t, 8*time.Minute, "./slurm.sh", "start", "check", "stop",
		"--bin", testbin.Gochare(t), "--dir", dir, "--timeout", "120",
		"--ctld-port", freePort(t), "--slurmd-port", freePort(t), "--coordinator-port", freePort(t))
	require.Equal(t, 0, status, "slurm.sh failed")
	for _, re := range []string{
		`(?m)^slurm\.sh: srun: ok: job \d+, task 1's PE SIGKILLed, recovered, the other tasks ended with status 0, digest [0-9a-f]{16} = failure-free, reference: match$`,
		`(?m)^slurm\.sh: srun-tls: ok: job \d+ with --tls \(files in \S+\), task 1's PE SIGKILLed, recovered, the other tasks ended with status 0, digest [0-9a-f]{16} = failure-free, reference: match$`,
		`(?m)^slurm\.sh: sbatch: ok: job \d+ completed, task 1's PE SIGKILLed, recovered, digest [0-9a-f]{16} = failure-free, reference: match$`,
		`(?m)^slurm\.sh: Slurm instance in \S+ stopped$`,
		`(?m)^slurm\.sh: PASS: start check stop$`,
	} {
		require.Regexp(t, regexp.MustCompile(re), out)
	}
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "slurm.sh stop leaves its directory")
}
