package launcher

import (
	"sync"
	"time"

	"github.com/gochare/gochare/launcher/controlpb"
)

// outbox writes the coordinator's messages to one PE from a goroutine of
// its own, so that a PE that stopped reading (hung, stopped, cut off)
// never blocks the coordinator, and sends that PE a heartbeat at every
// interval once heartbeats are started, whatever the coordinator's main
// loop is doing.
type outbox struct {
	conn *conn
	wake chan struct{}
	done chan struct{}
	mu   struct {
		sync.Mutex
		queue []*controlpb.ToPE
		// closing: write what is queued, then stop; beat: the heartbeat
		// interval (0: none yet).
		closing bool
		beat    time.Duration
	}
}

func newOutbox(cn *conn) *outbox {
	o := &outbox{conn: cn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

func (o *outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// send queues m.
func (o *outbox) send(m *controlpb.ToPE) {
	o.mu.Lock()
	if !o.mu.closing {
		o.mu.queue = append(o.mu.queue, m)
	}
	o.mu.Unlock()
	o.poke()
}

// startHeartbeats makes the outbox send a heartbeat every interval.
func (o *outbox) startHeartbeats(interval time.Duration) {
	o.mu.Lock()
	o.mu.beat = interval
	o.mu.Unlock()
	o.poke()
}

func (o *outbox) run() {
	defer close(o.done)
	heartbeat := &controlpb.ToPE{Msg: &controlpb.ToPE_Heartbeat{Heartbeat: &controlpb.Heartbeat{}}}
	var ticker *time.Ticker
	var tick <-chan time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		beating := false
		select {
		case <-o.wake:
		case <-tick:
			beating = true
		}
		o.mu.Lock()
		queue, closing, beat := o.mu.queue, o.mu.closing, o.mu.beat
		o.mu.queue = nil
		o.mu.Unlock()
		if beat > 0 && ticker == nil {
			ticker = time.NewTicker(beat)
			tick = ticker.C
		}
		for _, m := range queue {
			if o.conn.send(m) != nil {
				return // the connection broke: the reader reports it
			}
		}
		if closing {
			return
		}
		if beating && o.conn.send(heartbeat) != nil {
			return
		}
	}
}

// close writes what is queued, waiting at most until deadline, and closes
// the connection.
func (o *outbox) close(deadline time.Time) {
	o.mu.Lock()
	o.mu.closing = true
	o.mu.Unlock()
	o.poke()
	o.conn.raw.SetWriteDeadline(deadline)
	<-o.done
	o.conn.close()
}

// abort closes the connection at once, dropping what is queued.
func (o *outbox) abort() {
	o.mu.Lock()
	o.mu.closing, o.mu.queue = true, nil
	o.mu.Unlock()
	o.conn.close()
	o.poke()
}
