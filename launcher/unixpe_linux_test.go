package launcher

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// peUnixSockets returns the Unix sockets of process pid bound to a PE's
// name (the transport's "@gochare-pe " + TCP address), as "listening" or
// "connected" with the name: from /proc, the process's descriptors
// matched with its network namespace's Unix sockets.
func peUnixSockets(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	require.NoError(t, err)
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/unix", pid))
	require.NoError(t, err)
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	sc.Scan() // Num RefCount Protocol Flags Type St Inode Path
	for sc.Scan() {
		// The path, last, may hold spaces.
		fields := strings.SplitN(sc.Text(), " ", 8)
		if len(fields) < 8 || !inodes[fields[6]] || !strings.HasPrefix(fields[7], "@gochare-pe ") {
			continue
		}
		state := "connected"
		if fields[5] == "01" {
			state = "listening"
		}
		found = append(found, state+" "+fields[7])
	}
	require.NoError(t, sc.Err())
	return found
}

// PEs of a job on one host connect over their Unix sockets; with
// --tcp-only the PEs get the flag and have no Unix socket of the
// transport at all.
func TestSameHostPEsConnectOverUnix(t *testing.T) {
	for _, tcpOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("tcp-only=%v", tcpOnly), func(t *testing.T) {
			args := []string{"run", "stencil3d", "--pes", "2", "--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "100000000"}
			if tcpOnly {
				args = append(args, "--tcp-only")
			}
			j := startJob(t, args...)
			pids := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
			require.Len(t, pids, 2)
			j.waitLine(t, regexp.MustCompile(`job begins`), 30*time.Second)
			for _, pid := range pids {
				cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				require.NoError(t, err)
				require.Equal(t, tcpOnly, strings.Contains(string(cmdline), "\x00--tcp-only"), "PE %d: %q", pid, cmdline)
			}
			if tcpOnly {
				// The job began: its PEs are connected, over TCP.
				for _, pid := range pids {
					require.Empty(t, peUnixSockets(t, pid), "PE pid %d", pid)
				}
				return
			}
			// PE 1 listens on its name and accepted PE 0's connection
			// there (the accepted socket carries the listener's name).
			waitFor(t, fmt.Sprintf("PE 1 (pid %d) listening on its Unix socket with PE 0 connected there", pids[1]), func() bool {
				var connected, listening bool
				for _, s := range peUnixSockets(t, pids[1]) {
					connected = connected || strings.HasPrefix(s, "connected ")
					listening = listening || strings.HasPrefix(s, "listening ")
				}
				return connected && listening
			})
		})
	}
}
