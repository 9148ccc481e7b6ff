package scheduler

import (
	"testing"

	"github.com/gochare/gochare/logging"
	"github.com/stretchr/testify/require"
)

// The event logger's stamps (creator, number) cross the wire with the
// records they stamp; records without one decode as before.
func TestRecordStampsCrossTheWire(t *testing.T) {
	envs := []logging.Envelope{
		{Kind: logging.EnvelopeMessage, From: 0, To: 1, Message: logging.Message{ID: logging.MessageID{Sender: 1, SRN: 1}},
			Determinants: []logging.Determinant{
				{Message: logging.MessageID{Sender: 5, SRN: 2}, Receiver: 3, RSN: 4, Creator: 2, Seq: 77},
				{Message: logging.MessageID{Sender: 5, SRN: 3}, Receiver: 3, RSN: 5},
			},
			Progress: []logging.Progress{{Task: 3, RSN: 5, Creator: 0, Seq: 78}, {Task: 6, RSN: 1}}},
		{Kind: logging.EnvelopeRecovery, From: 2, To: 1, Task: 3, Epoch: 2,
			Determinants: []logging.Determinant{{Message: logging.MessageID{Sender: 5, SRN: 2}, Receiver: 3, RSN: 4, Creator: 1, Seq: 1 << 40}}},
	}
	var ob outBatch
	for i := range envs {
		ob.add(&envs[i])
	}
	var d batchDecoder
	require.NoError(t, d.decode(append(batchHeader(nil, 42, 0), ob.buf...)))
	require.Len(t, d.envelopes, len(envs))
	for i := range envs {
		got, err := d.envelope(i, int(envs[i].From), 1, 3)
		require.NoError(t, err)
		require.Equal(t, envs[i].Determinants, got.Determinants)
		require.Equal(t, envs[i].Progress, got.Progress)
	}
}

func TestEventLoggerConfigErrors(t *testing.T) {
	base := Config{Rank: 0, Size: 2, Protocol: logging.KindFullDet, EventLogger: true, Loggers: 1}
	cases := map[string]func(c *Config){
		"no logger":       func(c *Config) { c.Loggers = 0 },
		"None":            func(c *Config) { c.Protocol = logging.KindNone },
		"no EventLogSink": func(c *Config) {},
	}
	for name, mutate := range cases {
		cfg := base
		mutate(&cfg)
		require.ErrorIs(t, checkEventLog(cfg), ErrEventLogger, name)
	}
	base.Loggers = 0
	base.EventLogger = false
	require.NoError(t, checkEventLog(base), "no event logger, nothing to check")
}
