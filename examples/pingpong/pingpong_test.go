package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// The round trips happen between the two PE processes, under each
// protocol, and the report gives a positive time per round trip.
func TestPingpongReportsARoundTrip(t *testing.T) {
	bin := testbin.Build(t, ".")
	for _, ft := range []string{"none", "partialdet", "fulldet"} {
		out, err := exec.Command(bin, "run", "pingpong", "--pes", "2", "--ft", ft, "--size", "100", "--iterations", "300", "--warmup", "20").CombinedOutput()
		require.NoError(t, err, "--ft %s: %s", ft, out)
		m := regexp.MustCompile(`round trip: ([0-9.]+) µs \(300 round trips of 100 bytes between PE 0 and PE 1\)`).FindSubmatch(out)
		require.NotNil(t, m, "--ft %s: %s", ft, out)
		us, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		require.Positive(t, us)
		// Every round trip is two handled messages on top of the start.
		require.Regexp(t, `pe=1 handled=3[0-9]{2} `, string(out), "--ft %s", ft)
	}
}

func TestPingpongRefusesBadArguments(t *testing.T) {
	out, err := exec.Command(testbin.Build(t, "."), "run", "pingpong", "--pes", "2", "--iterations", "0").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "--iterations 0")
}
