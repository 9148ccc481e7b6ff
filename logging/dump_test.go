package logging

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func newDumper(t *testing.T, cfg DumpConfig) *Dumper {
	t.Helper()
	d, err := NewDumper(cfg)
	require.NoError(t, err)
	return d
}

// log logs n entries of size bytes, each of which must fit.
func logEntries(t *testing.T, d *Dumper, n, size int) {
	t.Helper()
	for range n {
		ok, err := d.Fits(size)
		require.NoError(t, err)
		require.True(t, ok, "entry %d of %d bytes must fit (memory %d)", d.Len(), size, d.Stats().InMemory)
		d.Logged(size)
	}
}

// Above the threshold the oldest entries go to the preferred logger, a
// batch at a time within the window; an acknowledgement releases them
// and lets the next dumps go.
func TestDumperDumpsTheOldestAboveTheThreshold(t *testing.T) {
	d := newDumper(t, DumpConfig{Quota: 1000, Threshold: 500, Batch: 100, Window: 200, Loggers: 3, Prefer: 4})
	logEntries(t, d, 5, 100)
	require.Empty(t, d.Actions(), "at the threshold: nothing dumped")
	logEntries(t, d, 1, 100)
	require.Equal(t, []DumpAction{Dump{Logger: 1, From: 0, To: 1, Bytes: 100}}, d.Actions(), "Prefer 4 of 3 loggers: logger 1")
	logEntries(t, d, 1, 100)
	require.Equal(t, []DumpAction{Dump{Logger: 1, From: 1, To: 2, Bytes: 100}}, d.Actions())
	logEntries(t, d, 2, 100)
	require.Empty(t, d.Actions(), "the window (200 bytes) is full")
	d.Acked(1, 0, 1)
	require.Equal(t, []DumpAction{Release{To: 1, Bytes: 100}, Dump{Logger: 1, From: 2, To: 3, Bytes: 100}}, d.Actions())
	d.Acked(1, 0, 3)
	require.Equal(t, []DumpAction{Release{To: 3, Bytes: 200}, Dump{Logger: 1, From: 3, To: 4, Bytes: 100}}, d.Actions())
	d.Acked(0, 0, 4)
	d.Acked(1, 7, 4)
	d.Acked(1, 0, 9)
	require.Empty(t, d.Actions(), "acknowledgements of another logger, period, or of entries not dumped change nothing")
	require.Equal(t, []Source{{From: 0, To: 3, Logger: 1}, {From: 3, To: 9, Logger: -1}}, d.Sources())
	st := d.Stats()
	require.Equal(t, 900, st.HighWater)
	require.Equal(t, 300, st.Dumped)
	require.Equal(t, 600, st.InMemory)
	// Small entries go in batches of up to Batch bytes.
	b := newDumper(t, DumpConfig{Quota: 1000, Threshold: 500, Batch: 100, Window: 400, Loggers: 1})
	logEntries(t, b, 50, 10)
	logEntries(t, b, 1, 10)
	require.Equal(t, []DumpAction{Dump{Logger: 0, From: 0, To: 10, Bytes: 100}}, b.Actions())
}

// A full quota with a logger that does not acknowledge refuses entries
// (the caller blocks the send) until an acknowledgement makes room; an
// entry larger than the quota is an error.
func TestDumperRefusesAtTheQuotaUntilTheLoggerAcknowledges(t *testing.T) {
	d := newDumper(t, DumpConfig{Quota: 1000, Loggers: 1})
	logEntries(t, d, 10, 100)
	ok, err := d.Fits(1)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, 1, d.Stats().Refused)
	var last Dump
	for _, a := range d.Actions() {
		if dump, ok := a.(Dump); ok {
			last = dump
		}
	}
	require.Positive(t, last.To)
	d.Acked(0, 0, last.To)
	ok, err = d.Fits(100)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = d.Fits(1001)
	require.ErrorIs(t, err, ErrEntryOverQuota)
}

// A logger's death: what it stored is lost (and a recovery that needs it
// is refused), what was in flight to it goes to the next live logger.
// With none left, the log grows past its quota (a blocked send would wait
// for a checkpoint its task cannot reach) and the dumper asks once for a
// checkpoint, which empties it.
func TestDumperLoggerFailure(t *testing.T) {
	d := newDumper(t, DumpConfig{Quota: 1000, Threshold: 500, Batch: 100, Window: 200, Loggers: 2})
	logEntries(t, d, 7, 100)
	d.Acked(0, 0, 1)
	d.Actions()
	d.LoggerFailed(0)
	require.Equal(t, []DumpAction{Dump{Logger: 1, From: 1, To: 2, Bytes: 100}}, d.Actions(), "the unacknowledged dump goes to logger 1")
	require.Equal(t, []Source{{From: 0, To: 1, Logger: 0, Lost: true}, {From: 1, To: 7, Logger: -1}}, d.Sources())
	require.ErrorIs(t, d.Need([]int{0, 5}), ErrLogEntriesLost)
	require.NoError(t, d.Need([]int{1, 5}))
	require.Equal(t, 100, d.Stats().LostBytes)
	d.Acked(0, 0, 2)
	require.Empty(t, d.Actions(), "a dead logger's late acknowledgement changes nothing")
	d.Acked(1, 0, 2)
	require.Equal(t, []DumpAction{Release{To: 2, Bytes: 100}}, d.Actions())

	d.LoggerFailed(1)
	require.Empty(t, d.Actions())
	logEntries(t, d, 5, 100)
	require.Empty(t, d.Actions(), "no logger left: nothing dumped")
	require.Equal(t, 1000, d.Stats().InMemory)
	logEntries(t, d, 3, 100)
	require.Equal(t, []DumpAction{NeedCheckpoint{}}, d.Actions(), "asked once")
	require.Equal(t, 1300, d.Stats().InMemory)
	require.Equal(t, 300, d.Stats().OverQuota)
	require.Zero(t, d.Stats().Refused)
	d.Checkpoint()
	require.Empty(t, d.Sources())
	require.Equal(t, uint64(1), d.Epoch())
	logEntries(t, d, 10, 100)
	require.NoError(t, d.Need([]int{0, 9}))
}

// A seeded run of random entry sizes, logger delays and deaths: the
// memory never exceeds the quota, nothing is dropped (every entry is in
// memory or on a logger, in log order), an entry is lost only with a dead
// logger, and a send waits only while a dump is unacknowledged or no
// logger is left.
func TestDumperRandomized(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 7))
		loggers := 1 + rng.IntN(3)
		quota := 200 + rng.IntN(5000)
		d := newDumper(t, DumpConfig{Quota: quota, Loggers: loggers, Prefer: rng.IntN(8)})
		type pending struct {
			dump Dump
			due  int
		}
		var inflight []pending
		dead := make([]bool, loggers)
		anyDied := false
		refusedSince := -1
		for step := range 2000 {
			for _, a := range d.Actions() {
				switch a := a.(type) {
				case Dump:
					require.False(t, dead[a.Logger], "seed %d: dump to dead logger %d", seed, a.Logger)
					inflight = append(inflight, pending{a, step + rng.IntN(20)})
				case NeedCheckpoint:
					require.False(t, slices.Contains(dead, false), "seed %d: checkpoint asked with a live logger", seed)
					d.Checkpoint()
					inflight = nil
				}
			}
			// The loggers acknowledge what is due, in order.
			for len(inflight) > 0 && inflight[0].due <= step {
				p := inflight[0]
				inflight = inflight[1:]
				if !dead[p.dump.Logger] {
					d.Acked(p.dump.Logger, p.dump.Epoch, p.dump.To)
				}
			}
			if rng.IntN(1000) == 0 {
				l := rng.IntN(loggers)
				dead[l], anyDied = true, true
				d.LoggerFailed(l)
				// What was in flight to it is dumped again.
				inflight = slices.DeleteFunc(inflight, func(p pending) bool { return p.dump.Logger == l })
			}
			if rng.IntN(500) == 0 {
				d.Checkpoint()
				inflight = nil
				continue
			}
			size := 1 + rng.IntN(quota/4)
			ok, err := d.Fits(size)
			require.NoError(t, err)
			allDead := !slices.Contains(dead, false)
			if ok {
				d.Logged(size)
				refusedSince = -1
			} else {
				waiting := len(inflight) > 0 || slices.ContainsFunc(d.actions, func(a DumpAction) bool { _, ok := a.(Dump); return ok })
				require.False(t, allDead, "seed %d: a send refused with no logger left", seed)
				require.True(t, waiting, "seed %d: a send refused with nothing dumped to wait for", seed)
				if refusedSince < 0 {
					refusedSince = step
				}
				require.True(t, step-refusedSince < 100, "seed %d: sends refused for %d steps with a live logger", seed, step-refusedSince)
			}
			st := d.Stats()
			if slices.Contains(dead, false) {
				require.LessOrEqual(t, st.InMemory, quota, "seed %d: a logger lives", seed)
			}
			if st.OverQuota == 0 {
				require.LessOrEqual(t, st.HighWater, quota, "seed %d", seed)
			}
			src := d.Sources()
			next := 0
			for _, s := range src {
				require.Equal(t, next, s.From, "seed %d: sources in log order, without a gap: %v", seed, src)
				require.Less(t, s.From, s.To)
				next = s.To
				if s.Lost {
					require.True(t, anyDied && dead[s.Logger], "seed %d", seed)
				}
			}
			require.Equal(t, d.Len(), next, "seed %d: every entry has a source", seed)
		}
	}
}
