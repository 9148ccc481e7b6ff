package job

import (
	"errors"
	"fmt"
)

// Loggers are processes of the job that hold no task: the PEs dump the
// oldest entries of their sender logs to them when a log quota bounds the
// logs' memory. The coordinator counts them as members of their own kind
// (Config.Loggers, numbered from 0): they are admitted and watched like
// PEs, and the driver reports the death of one with OnLoggerFailure.
//
// What a logger's death costs: the entries dumped to it are lost. They are
// needed only to replay the messages of the current checkpoint period to a
// task that fails before the next checkpoint commits. So:
//
//   - without dumping (Config.Dumping false) nothing was on the logger:
//     the job goes on as if it had none;
//   - with an event logger (Config.EventLogger) the records it made
//     stable are lost: a PE that depended on one without holding it
//     would need it after a PE failure. The same rule as for dumping
//     follows (a PE failure before the forced checkpoint commits rolls
//     every task back). A task restored since the checkpoint without
//     the dead logger's answer stops the job instead, from its PE
//     (logging.ErrEventLogLost);
//   - with dumping, the coordinator has the next sync point checkpoint
//     whatever the logs hold (a log limit notwithstanding), which makes
//     every lost entry useless once it commits; a PE that fails before
//     that commit may need a lost entry: rather than replay without it,
//     every task rolls back to the last committed checkpoint (which
//     needs no log: from the copies in memory, or from --checkpoint-dir
//     where those are lost, or the job stops as for any rollback that
//     has neither). A PE failure after the commit is recovered as usual.
//
// The PEs stop dumping to a dead logger: they dump to another. With none
// left a PE goes on while its log fits its quota (the checkpoint forced
// here empties the logs), and a PE whose log reaches the quota stops the
// job (logging.ErrNoLoggerLeft, scheduler/quota.go): blocking its sends
// would hang the job, since the checkpoint that would empty its log needs
// every task at a sync point, and going past the quota would break it.

// ErrDumpedEntriesLost describes a PE failure that recovery cannot
// replay: a logger failed since the last committed checkpoint, and the
// logged messages the failed PE's tasks need may have been held by it
// alone. The coordinator rolls every task back instead (see above).
var ErrDumpedEntriesLost = errors.New("job: logged messages dumped to a failed logger may be needed")

// LiveLoggers reports which loggers are alive.
func (c *Coordinator) LiveLoggers() []bool {
	if c.loggerLive == nil {
		c.loggerLive = make([]bool, c.cfg.Loggers)
		for l := range c.loggerLive {
			c.loggerLive[l] = true
		}
	}
	out := make([]bool, len(c.loggerLive))
	copy(out, c.loggerLive)
	return out
}

// OnLoggerFailure handles the death of logger l (see Loggers above). It
// never stops the job by itself.
func (c *Coordinator) OnLoggerFailure(l int) []Command {
	live := c.LiveLoggers()
	if l < 0 || l >= len(live) || !live[l] || c.done {
		return nil
	}
	c.loggerLive[l] = false
	left := 0
	for _, ok := range c.loggerLive {
		if ok {
			left++
		}
	}
	if !c.cfg.Dumping && !c.cfg.EventLogger {
		c.note("logger %d failed (%d of %d left): no log entry is dumped in this job, the job goes on", l, left, c.cfg.Loggers)
		return nil
	}
	c.lostLoggers = append(c.lostLoggers, l)
	c.forceCheckpoint = true
	if !c.cfg.Dumping {
		c.note("logger %d failed (%d of %d left): the records it made stable since checkpoint %d ride on messages again; the next sync point checkpoints, "+
			"and a PE that fails before that checkpoint commits rolls every task back to it", l, left, c.cfg.Loggers, c.committed)
		return nil
	}
	c.note("logger %d failed (%d of %d left): the log entries dumped to it since checkpoint %d are lost; the next sync point checkpoints, "+
		"and a PE that fails before that checkpoint commits stops the job", l, left, c.cfg.Loggers, c.committed)
	return nil
}

// lostEntries returns the error that stops the job when PE pe fails while
// entries dumped to a dead logger may be needed, or nil.
func (c *Coordinator) lostEntries(pe int) error {
	if len(c.lostLoggers) == 0 {
		return nil
	}
	return fmt.Errorf("%w: PE %d failed after logger(s) %v failed and before a checkpoint committed since (last committed: %d); "+
		"its tasks' replay may need messages whose log entries were dumped to those loggers only",
		ErrDumpedEntriesLost, pe, c.lostLoggers, c.committed)
}

// loggersCommitted forgets the entries lost with dead loggers: a
// checkpoint committed, and no recovery replays messages sent before it.
func (c *Coordinator) loggersCommitted() {
	c.lostLoggers, c.forceCheckpoint = nil, false
}
