package launcher

import (
	"net"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A coordinator listening on a wildcard address (--listen 0.0.0.0:P, as
// for PEs on other hosts) tells PEs to dial this host's name, not 0.0.0.0
// or [::], and a PE that does joins and the job ends.
func TestExternalHintNamesTheHost(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	j := startJob(t, "run", "stencil3d", "--pes", "1", "--external", "--listen", "0.0.0.0:0",
		"--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "10")
	m := j.waitLine(t, regexp.MustCompile(`--coordinator (\S+):(\d+) `), 30*time.Second)
	require.Equal(t, host, m[1])
	port, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	require.Positive(t, port)
	if _, err := net.LookupHost(host); err != nil {
		t.Skipf("this host's name %q does not resolve here (%v): the PE cannot dial it", host, err)
	}
	p := startPE(t, j, 0, 1)
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	status, _ := p.wait(t, 30*time.Second)
	require.Equal(t, 0, status, p.output())
}
