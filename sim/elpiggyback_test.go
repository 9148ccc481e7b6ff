package sim

import (
	"flag"
	"testing"

	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
)

var piggybackFlag = flag.Bool("el-piggyback", false, "measure LeanMD's piggybacked bytes with and without event loggers (TestEventLoggerPiggyback)")

// TestEventLoggerPiggyback measures, in the simulator (real PEs and
// protocols, simulated network and loggers, no failure), the record bytes
// LeanMD's envelopes carry per step under FullDet and PartialDet without
// an event logger (f = 2) and with one whose links are like the network,
// instant, or slow at times. A measurement, run with -el-piggyback; the
// numbers are in docs/benchmarks.md.
func TestEventLoggerPiggyback(t *testing.T) {
	if !*piggybackFlag {
		t.Skip("run with -el-piggyback")
	}
	const steps = 20
	args := []string{"--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "8", "--steps", "20"}
	for _, kind := range []logging.Kind{logging.KindFullDet, logging.KindPartialDet} {
		var bytes [4]int
		var records [4]int
		links := []LoggerLink{LoggerLikeNet, LoggerLikeNet, LoggerInstant, LoggerSlowAtTimes}
		for i, link := range links {
			for seed := uint64(1); seed <= 3; seed++ {
				cfg := Config{Seed: seed, App: leanmd.App, Args: args, PEs: 4, Protocol: kind, CheckpointEvery: 10,
					Net: NetConfig{MinDelay: 20e3, MaxDelay: 200e3}}
				if i > 0 {
					cfg.Loggers, cfg.EventLogger, cfg.EventLoggerLink = 1, true, link
				}
				res, err := Run(cfg)
				require.NoError(t, err)
				require.NoError(t, res.Err)
				for _, s := range res.Stats {
					bytes[i] += s.Protocol.PiggybackedBytes
					records[i] += s.Protocol.PiggybackedDeterminants + s.Protocol.ProgressRecords
				}
			}
		}
		t.Logf("%v LeanMD 3x3x3 cells, 4 PEs, %d steps, 3 seeds: piggybacked bytes (records) per step without the event logger %d (%d); with, links like the network %d (%d) %.1f %%, instant %d (%d) %.1f %%, slow at times %d (%d) %.1f %%",
			kind, steps, bytes[0]/steps/3, records[0]/steps/3,
			bytes[1]/steps/3, records[1]/steps/3, 100*float64(bytes[1])/float64(bytes[0]),
			bytes[2]/steps/3, records[2]/steps/3, 100*float64(bytes[2])/float64(bytes[0]),
			bytes[3]/steps/3, records[3]/steps/3, 100*float64(bytes[3])/float64(bytes[0]))
	}
}
