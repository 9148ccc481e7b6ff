package launcher

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var quotaStatsLine = regexp.MustCompile(`msg="PE stats" pe=(\d+) .*log_peak_bytes=(\d+) .*log_dumped_bytes=(\d+) log_blocked_ms=(\d+) log_fetched_bytes=(\d+)`)

// quotaArgs is LeanMD as the docs measure its log (default policy).
var quotaArgs = []string{"run", "leanmd", "--pes", "2", "--cells", "3,3,3", "--steps", "25"}

type quotaStats struct{ peak, dumped, blockedMs, fetched int }

func (j *job) quotaStats(t *testing.T) map[int]quotaStats {
	t.Helper()
	out := map[int]quotaStats{}
	for _, l := range strings.Split(j.output(), "\n") {
		if m := quotaStatsLine.FindStringSubmatch(l); m != nil {
			var v [5]int
			for i := range v {
				v[i], _ = strconv.Atoi(m[i+1])
			}
			out[v[0]] = quotaStats{v[1], v[2], v[3], v[4]}
		}
	}
	return out
}

// unboundedPeak runs args without a quota and returns the largest log
// high-water mark of a PE and the digest.
func unboundedPeak(t *testing.T, args []string) (int, string) {
	t.Helper()
	j := startJob(t, args...)
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	peak := 0
	for _, s := range j.quotaStats(t) {
		peak = max(peak, s.peak)
	}
	require.Positive(t, peak, j.output())
	return peak, j.waitLine(t, leanmdDigest, time.Second)[1]
}

// LeanMD on real PE processes with --log-quota at a tenth of its
// unbounded high-water mark: every PE's log stays under the quota, the
// oldest entries go to the logger over the dump stream, and the result
// is the unbounded run's; a logger SIGKILLed mid-run (of two) changes
// neither. The only logger SIGKILLed ends the job with the reason once a
// log fills again.
// sharedLogLine is the line a PE whose log memory was shared with its
// loggers writes at its end.
var sharedLogLine = regexp.MustCompile(`msg="shared log memory" pe=(\d+) slots_fresh=(\d+) slots_reused=(\d+) chunks_refused=(\d+) placed_dumps=(\d+)`)

func TestLogQuotaOnRealPEs(t *testing.T) {
	peak, want := unboundedPeak(t, quotaArgs)
	quota := peak / 10
	t.Logf("unbounded peak %d bytes, quota %d", peak, quota)
	for _, tc := range []struct {
		name    string
		loggers string
		kill    bool
		extra   []string
		stops   string // the error the job ends with, if it does
	}{
		{"one logger", "1", false, nil, ""},
		{"one logger under TLS", "1", false, []string{"--tls"}, ""},
		{"a logger killed", "2", true, nil, ""},
		{"a PE killed", "1", false, []string{"--kill", "pe=1,at=step:18"}, ""},
		{"the only logger killed", "1", true, nil, "the sender log reached its quota and no logger is left to dump to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append(append([]string(nil), quotaArgs...), "--loggers", tc.loggers, "--log-quota", strconv.Itoa(quota)), tc.extra...)
			j := startJob(t, args...)
			if tc.kill {
				loggers := parsePids(t, j.waitLine(t, loggerPidsLine, 30*time.Second)[1])
				j.waitLine(t, regexp.MustCompile(`job begins`), time.Minute)
				require.NoError(t, syscall.Kill(loggers[0], syscall.SIGKILL))
				j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`logger failed; the job goes on" detail="logger 0 \(pid %d on \S+\) was killed by signal 9`, loggers[0])), 30*time.Second)
			}
			if tc.stops != "" {
				require.NotEqual(t, 0, j.wait(t, 3*time.Minute), j.output())
				j.waitLine(t, regexp.MustCompile(regexp.QuoteMeta(tc.stops)), time.Second)
				return
			}
			require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
			require.Equal(t, want, j.waitLine(t, leanmdDigest, time.Second)[1])
			st := j.quotaStats(t)
			if len(tc.extra) > 0 && tc.extra[0] == "--kill" {
				// The survivor fetched back from the logger what the
				// restored tasks needed and it had dumped.
				j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 .*killed by signal 9`), time.Second)
				require.Len(t, st, 1, j.output())
				require.Positive(t, st[0].fetched, j.output())
			} else {
				require.Len(t, st, 2, j.output())
			}
			for pe, s := range st {
				t.Logf("PE %d: log peak %d, dumped %d, blocked %d ms, fetched %d", pe, s.peak, s.dumped, s.blockedMs, s.fetched)
				require.LessOrEqual(t, s.peak, quota, "PE %d", pe)
				require.Positive(t, s.dumped, "PE %d", pe)
			}
			// The log's memory is shared with a logger on the host
			// (placed dumps) only without TLS, and only on Linux.
			shared := sharedLogLine.FindAllStringSubmatch(j.output(), -1)
			switch {
			case slices.Contains(tc.extra, "--tls"):
				require.Empty(t, shared, "log memory shared under TLS")
			case tc.name == "one logger" && runtime.GOOS == "linux":
				require.Len(t, shared, 2, j.output())
				for _, m := range shared {
					placed, _ := strconv.Atoi(m[5])
					require.Positive(t, placed, "PE %s placed no dump", m[1])
				}
			}
		})
	}
}

func TestLogQuotaFlag(t *testing.T) {
	o, _, err := splitRunArgs([]string{"--pes", "2", "--loggers", "1", "--log-quota", "4MiB"})
	require.NoError(t, err)
	require.Equal(t, 4<<20, o.logQuota)
	o, _, err = splitRunArgs([]string{"--pes", "2", "--loggers", "1", "--log-quota=1000"})
	require.NoError(t, err)
	require.Equal(t, 1000, o.logQuota)
	for _, bad := range [][]string{
		{"--log-quota", "4MiB"},                    // no logger
		{"--loggers", "1", "--log-quota", "0"},     // not positive
		{"--loggers", "1", "--log-quota", "-5"},    // negative
		{"--loggers", "1", "--log-quota", "lots"},  // not a number
		{"--loggers", "1", "--log-quota", "2TiB"},  // unknown unit
		{"--loggers", "1", "--log-quota", "9999G"}, // too large
		{"--loggers", "1", "--log-quota", "1M", "--ft", "none"},
	} {
		_, _, err := splitRunArgs(append([]string{"--pes", "2"}, bad...))
		require.ErrorIs(t, err, errUsage, bad)
	}
	_, _, err = splitRunArgs([]string{"--pes", "2", "--log-quota", "4MiB"})
	require.ErrorContains(t, err, "--log-quota needs --loggers")
}
