package launcher

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/jobtls"
	"github.com/gochare/gochare/internal/testbin"
)

// Every mini-app, run with --tls and a PE killed by SIGKILL, ends with
// the result of a failure-free run without TLS.
func TestTLSAppsWithKill(t *testing.T) {
	for _, c := range []struct {
		app         []string
		digest      *regexp.Regexp
		every, step int
	}{
		{[]string{"stencil3d", "--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "40"}, digestLine, 10, 17},
		{[]string{"leanmd", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10", "--steps", "12", "--migrate-every", "10"}, regexp.MustCompile(`^digest: ([0-9a-f]{16})$`), 5, 7},
		{[]string{"lulesh", "--size", "10", "--chunk", "5,5,5", "--iterations", "30"}, regexp.MustCompile(`^Digest += ([0-9a-f]{16})$`), 10, 23},
	} {
		t.Run(c.app[0], func(t *testing.T) {
			clean := startJob(t, append([]string{"run", c.app[0], "--pes", "3"}, c.app[1:]...)...)
			require.Equal(t, 0, clean.wait(t, 2*time.Minute), clean.output())
			want := clean.waitLine(t, c.digest, time.Second)[1]

			j := startJob(t, append([]string{"run", c.app[0], "--pes", "3", "--tls",
				"--checkpoint-every", strconv.Itoa(c.every), "--kill", fmt.Sprintf("pe=1,at=step:%d", c.step)}, c.app[1:]...)...)
			require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
			j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 \(pid \d+.*killed by signal 9`), time.Second)
			require.Equal(t, want, j.waitLine(t, c.digest, time.Second)[1], "result after the failure under --tls, output:\n%s", j.output())
			j.waitLine(t, regexp.MustCompile(`msg="job stats".* restored_tasks=[1-9]`), time.Second)
			require.NotContains(t, j.output(), "refused connection", "a PE of the job was refused")
		})
	}
}

// With --tls the spawner passes the secret directory, not the secret:
// a PE's environment holds no GOCHARE_JOB_SECRET.
func TestTLSSpawnerPassesNoSecret(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-pe")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"args: $*\"\nenv\n"), 0o700))
	for _, withTLS := range []bool{true, false} {
		var out syncBuffer
		sp := &spawner{exe: script, secret: "00112233445566778899aabbccddeeff", transport: "tcp", stdout: &out, stderr: &out}
		if withTLS {
			sp.secret, sp.tlsDir = "", "/shared/secret"
		}
		ended := make(chan processExited, 1)
		require.NoError(t, sp.start(0, 1, "127.0.0.1:1", func(ev processExited) { ended <- ev }))
		<-ended
		sp.stop(0)
		text := out.String()
		require.Contains(t, text, "args: pe --coordinator 127.0.0.1:1 --rank 0 --size 1 --transport tcp")
		if withTLS {
			require.Contains(t, text, "--tls --secret-dir /shared/secret")
			require.NotContains(t, text, secretEnv+"=", "with --tls the secret must not be in the PE's environment")
		} else {
			require.Contains(t, text, secretEnv+"=00112233445566778899aabbccddeeff")
		}
	}
}

// A stranger without a certificate of the job is refused by the
// coordinator and by a PE's data port, each refusal logged with why; the
// job goes on and ends with the right result.
func TestTLSStrangersAreRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secret")
	j := startJob(t, "run", "stencil3d", "--pes", "2", "--external", "--tls", "--secret-dir", dir, "--iterations", "10")
	m := j.waitLine(t, regexp.MustCompile(`--coordinator (\S+) --rank R --size 2 --tls --secret-dir (\S+) --transport tcp`), 30*time.Second)
	addr := m[1]
	require.Equal(t, dir, m[2])
	job, err := jobtls.Load(dir)
	require.NoError(t, err)
	other, err := jobtls.New()
	require.NoError(t, err)
	strangers := []struct {
		name string
		cfg  *tls.Config // nil: plain TCP
		why  string
	}{
		{"plain TCP", nil, "first record does not look like a TLS handshake"},
		{"certificate of another CA", func() *tls.Config {
			c := other.PE().CoordinatorClientConfig()
			c.RootCAs = job.CoordinatorClientConfig().RootCAs // it trusts the job, the job does not trust it
			return c
		}(), "certificate signed by unknown authority"},
		{"no certificate", &tls.Config{RootCAs: job.CoordinatorClientConfig().RootCAs, ServerName: jobtls.CoordinatorName, MinVersion: tls.VersionTLS13}, "didn't provide a certificate"},
	}
	for _, s := range strangers {
		require.False(t, strangerGetsIn(t, addr, s.cfg), "%s: the coordinator let a stranger in", s.name)
		j.waitLine(t, regexp.MustCompile(`refused connection" peer=127.0.0.1:\d+ reason="TLS: .*`+regexp.QuoteMeta(s.why)), 30*time.Second)
	}

	// PE 0 joins; until PE 1 does, its data port waits for peers.
	pe0 := startBinary(t, testbin.Gochare(t), "pe", "--coordinator", addr, "--rank", "0", "--size", "2", "--tls", "--secret-dir", dir)
	var port string
	deadline := time.Now().Add(30 * time.Second)
	for port == "" {
		port = listeningPort(t, pe0.cmd.Process.Pid)
		require.True(t, time.Now().Before(deadline), "PE 0 listens on no port; output:\n%s", pe0.output())
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	data := "127.0.0.1:" + port
	for _, s := range strangers {
		if s.cfg != nil {
			s.cfg = s.cfg.Clone()
			s.cfg.ServerName = jobtls.PEName
		}
		require.False(t, strangerGetsIn(t, data, s.cfg), "%s: the PE let a stranger in", s.name)
		pe0.waitLine(t, regexp.MustCompile(`transport: refused connection".* addr=127.0.0.1:\d+ err=".*TLS: .*`+regexp.QuoteMeta(s.why)), 30*time.Second)
	}

	// PE 1 joins and the job runs to its right end.
	pe1 := startBinary(t, testbin.Gochare(t), "pe", "--coordinator", addr, "--rank", "1", "--size", "2", "--tls", "--secret-dir", dir)
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
	require.Equal(t, 0, pe0.wait(t, time.Minute), pe0.output())
	require.Equal(t, 0, pe1.wait(t, time.Minute), pe1.output())
}

// strangerGetsIn connects to addr, with TLS cfg (nil: plain TCP, sending
// what a PE of a job without TLS would), and reports whether the other
// side let it on: completed the handshake and sent something.
func strangerGetsIn(t *testing.T, addr string, cfg *tls.Config) bool {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(time.Minute))
	var c net.Conn = raw
	if cfg != nil {
		tc := tls.Client(raw, cfg)
		if err := tc.Handshake(); err != nil {
			return false
		}
		c = tc
	}
	// A transport handshake (rank 0 dialing rank 0 would be refused
	// anyway; the coordinator would read it as a broken hello): it makes
	// the server answer or close.
	if _, err := c.Write(append([]byte("GCT1"), make([]byte, 24)...)); err != nil {
		return false
	}
	var one [1]byte
	_, err = c.Read(one[:])
	return err == nil
}

// listeningPort is the port a TCP socket of process pid listens on ("" if
// none yet): the sockets among its open files, looked up in its view of
// /proc/net/tcp.
func listeningPort(t *testing.T, pid int) string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return ""
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
			continue
		}
		_, hexPort, _ := strings.Cut(fields[1], ":")
		p, err := strconv.ParseUint(hexPort, 16, 16)
		require.NoError(t, err)
		return strconv.FormatUint(p, 10)
	}
	return ""
}

// Bad TLS flags and bad or missing files are refused at start, with an
// error that says what is wrong.
func TestTLSBadFlagsAndFiles(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	creds, err := jobtls.New()
	require.NoError(t, err)
	require.NoError(t, creds.Write(good))
	loose := filepath.Join(t.TempDir(), "loose")
	require.NoError(t, creds.Write(loose))
	require.NoError(t, os.Chmod(filepath.Join(loose, jobtls.KeyFile), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "stencil3d", "--pes", "2", "--tls", "--transport", "protoactor"}, "--tls needs --transport tcp: the protoactor transport has no TLS"},
		{[]string{"run", "stencil3d", "--pes", "2", "--secret-dir", good}, "--secret-dir is where --tls keeps its files: give --tls too"},
		{[]string{"run", "stencil3d", "--pes", "2", "--external", "--tls", "--secret-file", "/tmp/x"}, "--secret-file is for a job without --tls"},
		{[]string{"pe", "--coordinator", "127.0.0.1:1", "--rank", "0", "--size", "1", "--tls"}, "pe --tls needs --secret-dir DIR"},
		{[]string{"pe", "--coordinator", "127.0.0.1:1", "--rank", "0", "--size", "1", "--tls", "--secret-dir", "/nonexistent"}, "/nonexistent/ca.crt is missing"},
		{[]string{"pe", "--coordinator", "127.0.0.1:1", "--rank", "0", "--size", "1", "--tls", "--secret-dir", loose}, "pe.key may be read by others (mode 0644): it must be 0600"},
	} {
		out, err := exec.Command(testbin.Gochare(t), c.args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", c.args, out)
		require.Equal(t, 2, ee.ExitCode(), "%v: %s", c.args, out)
		require.Contains(t, string(out), c.want, "%v", c.args)
		require.NotContains(t, string(out), "started PEs", "%v", c.args)
	}
	// A PE of a job run with --tls started without it is told what it
	// may have missed.
	j := startJob(t, "run", "stencil3d", "--pes", "1", "--external", "--tls", "--iterations", "3")
	m := j.waitLine(t, regexp.MustCompile(`--coordinator (\S+) --rank R --size 1 --tls --secret-dir (\S+)`), 30*time.Second)
	pe := exec.Command(testbin.Gochare(t), "pe", "--coordinator", m[1], "--rank", "0", "--size", "1")
	pe.Env = append(os.Environ(), secretEnv+"=00112233445566778899aabbccddeeff")
	out, err := pe.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "if the job runs with --tls, start the PE with --tls --secret-dir DIR")
	j.waitLine(t, regexp.MustCompile(`refused connection" peer=127.0.0.1:\d+ reason="TLS: `), 30*time.Second)
	// The right PE still gets in.
	require.NoError(t, exec.Command(testbin.Gochare(t), "pe", "--coordinator", m[1], "--rank", "0", "--size", "1", "--tls", "--secret-dir", m[2]).Run())
	require.Equal(t, 0, j.wait(t, time.Minute), j.output())
}

// syncBuffer is a bytes.Buffer several goroutines write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
