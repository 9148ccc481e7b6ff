package logging

import (
	"errors"
	"fmt"
	"slices"
)

// Dumper bounds the memory of one PE's sender log by a quota: above a
// threshold the oldest entries are dumped to a logger (a process of the
// job that holds no task), and once the logger has stored them their
// memory is released. It decides only; the caller moves the bytes. Like
// the protocols it is a pure state machine: events in (an entry logged,
// a logger's acknowledgement, a logger's death, a checkpoint), actions out
// (dump this range to that logger, release this prefix, a checkpoint is
// needed), no clock, no goroutine, no I/O.
//
// Entries are numbered from 0 in log order since the last checkpoint, as
// the sender log numbers them. At any time they fall in three parts, in
// order: released (stored on a logger, no longer in memory), dumped (sent
// to a logger, not yet acknowledged: still in memory) and kept. Dumps go
// to one logger at a time (the PE's preferred one, Config.Prefer modulo
// the loggers, while it lives; then the next live one), in log order, with
// at most DumpConfig.Window bytes unacknowledged, so that the logger
// holds a run of entries without a gap and a recovery can take them back
// in log order (Sources).
//
// A logger's death: the entries it had stored are lost (Sources marks
// them; Need refuses a recovery that needs one, and the job's coordinator
// rolls every task back instead, see job.ErrDumpedEntriesLost), those
// dumped to it and not yet acknowledged are still in memory and go to the
// next live logger. With no live logger left (or none at all), nothing is
// dumped any more and the quota cannot hold: Fits admits every entry, the
// log grows past the quota (DumpStats.OverQuota says by how much), and the
// dumper asks once for a checkpoint (NeedCheckpoint). The engine's quota
// (quota.go) does not use Fits: its LogRoom stops the PE with
// ErrNoLoggerLeft instead once the log is full. Nothing is ever dropped.
type Dumper struct {
	cfg DumpConfig
	// dead marks the dead loggers; target is the logger dumps go to now
	// (-1: none left).
	dead   []bool
	target int
	epoch  uint64
	// end[i] is the byte offset of the end of entry i (prefix sums).
	end []int64
	// joined marks the entries logged with Joined: no dump ends right
	// before one.
	joined []bool
	// released and dumped are entry indexes: [0, released) are on
	// loggers, [released, dumped) in flight to target.
	released, dumped int
	// held are the runs of entries released, in log order, with the
	// logger that holds each; lost marks those of a dead logger.
	held []Source
	// askedCheckpoint: NeedCheckpoint went out since the last checkpoint.
	askedCheckpoint bool
	actions         []DumpAction
	stats           DumpStats
}

// DumpConfig is the configuration of a Dumper.
type DumpConfig struct {
	// Quota is the most bytes of entries the log keeps in memory (> 0).
	Quota int
	// Threshold is the memory above which the oldest entries are dumped
	// (default Quota/2).
	Threshold int
	// Batch is the most bytes one dump carries (default Quota/16; a dump
	// carries at least one entry), so a dump that starts above the
	// threshold takes the log below it by up to a Batch: the next one
	// starts a Batch of sends later. Window is the most bytes dumped and
	// not yet acknowledged (default Quota/4, at least a Batch): with a
	// logger that keeps up, the memory stays near Threshold+Window.
	Batch, Window int
	// Loggers is the number of loggers; Prefer the one this PE dumps to
	// while it lives (modulo Loggers; the PE's rank spreads the PEs).
	Loggers, Prefer int
	// Epoch is the period the log starts in (Dump.Epoch): a log made
	// afresh (a rollback's) starts in a period of its own, so that an
	// acknowledgement of the one before cannot count for it.
	Epoch uint64
}

// DumpAction is what a Dumper asks of its caller: Dump, Release or
// NeedCheckpoint.
type DumpAction interface{ dumpAction() }

// Dump asks the caller to send entries [From, To) of the log, Bytes in
// all, to Logger for checkpoint period Epoch; the logger acknowledges
// with Dumper.Acked once it stores them.
type Dump struct {
	Logger   int
	Epoch    uint64
	From, To int
	Bytes    int
}

// Release tells the caller that entries [0, To) are stored on loggers:
// their memory may be freed (Bytes more than the previous Release).
type Release struct {
	To    int
	Bytes int
}

// NeedCheckpoint tells the caller that the log went past its quota with
// no logger left to dump to: the next sync point should checkpoint, to
// empty the log.
type NeedCheckpoint struct{}

func (Dump) dumpAction()           {}
func (Release) dumpAction()        {}
func (NeedCheckpoint) dumpAction() {}

// Source says where a run of entries [From, To) is: on Logger, or in
// memory (Logger -1); Lost marks a run on a dead logger.
type Source struct {
	From, To int
	Logger   int
	Lost     bool
}

// DumpStats are a Dumper's metrics: the high-water mark of the log's
// memory, bytes dumped (acknowledged), how often an entry did not fit
// (the caller times how long its sends waited), and the most the memory
// went past the quota with no logger left.
type DumpStats struct {
	HighWater  int
	Dumped     int
	Refused    int
	OverQuota  int
	InMemory   int
	LostBytes  int
	Checkpoint int
}

// ErrEntryOverQuota reports an entry larger than the whole quota: it can
// never be logged within it.
var ErrEntryOverQuota = errors.New("logging: a message is larger than the sender log's quota")

// ErrLogEntriesLost reports log entries a recovery needs that were dumped
// to a logger that died.
var ErrLogEntriesLost = errors.New("logging: log entries needed by a recovery were held by a failed logger")

// NewDumper returns a dumper for an empty log.
func NewDumper(cfg DumpConfig) (*Dumper, error) {
	if cfg.Quota <= 0 {
		return nil, fmt.Errorf("logging: log quota %d: want > 0", cfg.Quota)
	}
	if cfg.Threshold <= 0 || cfg.Threshold > cfg.Quota {
		cfg.Threshold = cfg.Quota / 2
	}
	if cfg.Batch <= 0 {
		cfg.Batch = max(cfg.Quota/16, 1)
	}
	if cfg.Window <= 0 {
		cfg.Window = cfg.Quota / 4
	}
	cfg.Window = max(cfg.Window, cfg.Batch)
	if cfg.Loggers < 0 {
		return nil, fmt.Errorf("logging: %d loggers", cfg.Loggers)
	}
	d := &Dumper{cfg: cfg, dead: make([]bool, cfg.Loggers), target: -1, epoch: cfg.Epoch}
	if cfg.Loggers > 0 {
		d.target = ((cfg.Prefer % cfg.Loggers) + cfg.Loggers) % cfg.Loggers
	}
	return d, nil
}

// Len is the number of entries logged since the last checkpoint.
func (d *Dumper) Len() int { return len(d.end) }

func (d *Dumper) offset(i int) int64 {
	if i == 0 {
		return 0
	}
	return d.end[i-1]
}

// inMemory is the bytes of the entries not released.
func (d *Dumper) inMemory() int { return int(d.offset(len(d.end)) - d.offset(d.released)) }

// Fits reports whether an entry of size bytes can be logged now without
// the log's memory exceeding the quota; if not, the caller holds the send
// back until an action (a Release) makes room, and counts the wait. With
// no live logger every entry fits (see Dumper). An entry larger than the
// quota never fits: ErrEntryOverQuota.
func (d *Dumper) Fits(size int) (bool, error) {
	if size > d.cfg.Quota {
		return false, fmt.Errorf("%w: %d bytes, quota %d", ErrEntryOverQuota, size, d.cfg.Quota)
	}
	over := d.inMemory() + size - d.cfg.Quota
	if over <= 0 {
		return true, nil
	}
	if d.target < 0 {
		d.stats.OverQuota = max(d.stats.OverQuota, over)
		if !d.askedCheckpoint {
			d.askedCheckpoint = true
			d.actions = append(d.actions, NeedCheckpoint{})
		}
		return true, nil
	}
	d.stats.Refused++
	return false, nil
}

// Logged records entry Len() of size bytes, appended to the log (the
// caller logs only what Fits).
func (d *Dumper) Logged(size int) { d.logged(size, false) }

// Joined records entry Len() of size bytes, appended to the log, as one
// that must go in the same dump as the entry before it: it shares that
// entry's payload (a multicast's, which the log holds once), and size
// counts its own bytes alone. So no dump, and no release, separates
// them: what the log holds in memory is exactly the bytes of the entries
// not released, and a dump carries the payload once. The caller makes
// sure the entry before was not dumped yet (a dump decided up to the end
// of the log ends a multicast's sharing).
func (d *Dumper) Joined(size int) { d.logged(size, true) }

// CanJoin reports whether the next entry may be Joined: the entry before
// it is not dumped yet.
func (d *Dumper) CanJoin() bool { return d.dumped < len(d.end) }

func (d *Dumper) logged(size int, joined bool) {
	if joined && !d.CanJoin() {
		panic(fmt.Sprintf("logging: entry %d joined to entry %d, which is dumped already", len(d.end), len(d.end)-1))
	}
	d.end = append(d.end, d.offset(len(d.end))+int64(size))
	d.joined = append(d.joined, joined)
	d.stats.HighWater = max(d.stats.HighWater, d.inMemory())
	d.dump()
}

// dump starts dumps while the memory not yet dumped is above the
// threshold and the window has room.
func (d *Dumper) dump() {
	for d.target >= 0 && d.dumped < len(d.end) {
		notDumped := int(d.offset(len(d.end)) - d.offset(d.dumped))
		inFlight := int(d.offset(d.dumped) - d.offset(d.released))
		if notDumped <= d.cfg.Threshold || inFlight >= d.cfg.Window {
			return
		}
		from, to := d.dumped, d.dumped+1
		for to < len(d.end) && int(d.offset(to+1)-d.offset(from)) <= d.cfg.Batch {
			to++
		}
		for to < len(d.end) && d.joined[to] {
			to++ // the rest of a multicast goes with its payload
		}
		bytes := int(d.offset(to) - d.offset(from))
		d.dumped = to
		d.actions = append(d.actions, Dump{Logger: d.target, Epoch: d.epoch, From: from, To: to, Bytes: bytes})
	}
}

// Acked records that logger stored the entries below to of period
// epoch. An acknowledgement of another period, of a logger dumps do not
// go to, or of nothing new, changes nothing.
func (d *Dumper) Acked(logger int, epoch uint64, to int) {
	if epoch != d.epoch || logger != d.target || to <= d.released || to > d.dumped {
		return
	}
	bytes := int(d.offset(to) - d.offset(d.released))
	if n := len(d.held); n > 0 && d.held[n-1].Logger == logger && d.held[n-1].To == d.released && !d.held[n-1].Lost {
		d.held[n-1].To = to
	} else {
		d.held = append(d.held, Source{From: d.released, To: to, Logger: logger})
	}
	d.released = to
	d.stats.Dumped += bytes
	d.actions = append(d.actions, Release{To: to, Bytes: bytes})
	d.dump()
}

// LoggerFailed records the death of logger l: what it stored is lost,
// what was in flight to it goes to the next live logger.
func (d *Dumper) LoggerFailed(l int) {
	if l < 0 || l >= len(d.dead) || d.dead[l] {
		return
	}
	d.dead[l] = true
	for i := range d.held {
		if d.held[i].Logger == l && !d.held[i].Lost {
			d.held[i].Lost = true
			d.stats.LostBytes += int(d.offset(d.held[i].To) - d.offset(d.held[i].From))
		}
	}
	if l != d.target {
		return
	}
	// The dumps to it not carried out yet are dropped with the ones in
	// flight: all is still in memory, and dumped again.
	d.actions = slices.DeleteFunc(d.actions, func(a DumpAction) bool { dump, ok := a.(Dump); return ok && dump.Logger == l })
	d.dumped = d.released
	d.target = -1
	for k := 1; k <= len(d.dead); k++ {
		if c := (l + k) % len(d.dead); !d.dead[c] {
			d.target = c
			break
		}
	}
	d.dump()
}

// Checkpoint empties the log: a checkpoint committed, and no recovery
// needs an entry logged before it. Loggers may drop what they hold of
// earlier periods (dumps carry their Epoch).
func (d *Dumper) Checkpoint() {
	d.epoch++
	d.end = d.end[:0]
	d.joined = d.joined[:0]
	d.released, d.dumped = 0, 0
	d.held = d.held[:0]
	d.askedCheckpoint = false
	d.actions = nil // of the period that ended
	d.stats.Checkpoint++
}

// Actions returns and forgets the actions due, in the order the caller
// must carry them out.
func (d *Dumper) Actions() []DumpAction {
	a := d.actions
	d.actions = nil
	return a
}

// Epoch is the checkpoint period the log is in (Dump.Epoch).
func (d *Dumper) Epoch() uint64 { return d.epoch }

// Sources says where every entry of the log is, in log order: the runs
// held by loggers (Lost for a dead one's), then the entries in memory
// (Logger -1). A recovery resends the entries for a restored task in this
// order, fetching each run from its logger.
func (d *Dumper) Sources() []Source {
	out := append([]Source(nil), d.held...)
	if d.released < len(d.end) {
		out = append(out, Source{From: d.released, To: len(d.end), Logger: -1})
	}
	return out
}

// Need checks that entries idx (sorted, the ones a recovery must resend)
// are all available, in memory or on a live logger, and returns
// ErrLogEntriesLost naming the first that is not.
func (d *Dumper) Need(idx []int) error {
	for _, i := range idx {
		for _, s := range d.held {
			if i >= s.From && i < s.To && s.Lost {
				return fmt.Errorf("%w: entry %d of period %d was on logger %d", ErrLogEntriesLost, i, d.epoch, s.Logger)
			}
		}
	}
	return nil
}

// Tune sets the threshold and the window (as DumpConfig says; the
// window at least a Batch) and starts the dumps they call for.
func (d *Dumper) Tune(threshold, window int) {
	d.cfg.Threshold = min(max(threshold, 0), d.cfg.Quota)
	d.cfg.Window = max(window, d.cfg.Batch)
	d.dump()
}

// Live reports whether a live logger is left to dump to.
func (d *Dumper) Live() bool { return d.target >= 0 }

// InFlight is the bytes dumped and not yet acknowledged: a wait for room
// ends when they are (or when their logger dies).
func (d *Dumper) InFlight() int { return int(d.offset(d.dumped) - d.offset(d.released)) }

// Released is the number of entries stored on loggers and no longer in
// memory (the prefix [0, Released)).
func (d *Dumper) Released() int { return d.released }

// Stats returns the dumper's metrics.
func (d *Dumper) Stats() DumpStats {
	s := d.stats
	s.InMemory = d.inMemory()
	return s
}
