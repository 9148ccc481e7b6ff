package launcher

import (
	"sync/atomic"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
)

// Failure detection: the coordinator and every PE send each other a
// heartbeat at every heartbeatInterval, from goroutines that depend only
// on the connection, and each side declares the other dead after the
// bound (--heartbeat-timeout) without any message from it.

// heartbeatInterval is how often each side sends a heartbeat: ten per
// bound, at most every half second.
func heartbeatInterval(bound time.Duration) time.Duration {
	return max(min(bound/10, 500*time.Millisecond), time.Millisecond)
}

// silenceJudge decides when a peer's silence exceeds the bound. Its
// owner calls tick at every check. An owner that was itself not running
// for more than a quarter of the bound (stopped, starved of CPU) cannot
// tell who was silent while it was away, since it could not read: silence
// counts again from then, so a busy judge makes no false verdict.
type silenceJudge struct {
	bound               time.Duration
	lastTick, judgeFrom time.Time
}

// tick notes a check at now and returns how long the owner was away, if
// it was.
func (j *silenceJudge) tick(now time.Time) (away time.Duration) {
	if !j.lastTick.IsZero() && now.Sub(j.lastTick) > j.bound/4 {
		away = now.Sub(j.lastTick)
		j.judgeFrom = now
	}
	j.lastTick = now
	return away
}

// dead reports whether a peer last heard from at last is to be declared
// dead at now.
func (j *silenceJudge) dead(now, last time.Time) bool {
	if last.Before(j.judgeFrom) {
		last = j.judgeFrom
	}
	return now.Sub(last) > j.bound
}

// sendHeartbeats sends the coordinator a heartbeat every interval until
// done. It depends on nothing but the connection: a busy or blocked
// scheduler does not stop it.
func sendHeartbeats(done <-chan struct{}, cn *conn, interval time.Duration) {
	heartbeat := &controlpb.ToCoordinator{Msg: &controlpb.ToCoordinator_Heartbeat{Heartbeat: &controlpb.Heartbeat{}}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if cn.send(heartbeat) != nil {
				return
			}
		}
	}
}

// watchCoordinator calls silent once nothing came from the coordinator
// for longer than bound (heard is when something last did).
func watchCoordinator(done <-chan struct{}, heard *atomic.Int64, bound time.Duration, silent func(time.Duration)) {
	t := time.NewTicker(heartbeatInterval(bound))
	defer t.Stop()
	judge := silenceJudge{bound: bound}
	judge.tick(time.Now())
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			judge.tick(now)
			if last := time.Unix(0, heard.Load()); judge.dead(now, last) {
				silent(now.Sub(last))
				return
			}
		}
	}
}
