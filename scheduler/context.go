package scheduler

import (
	"fmt"

	"github.com/gochare/gochare/actor"
)

// taskContext is the actor.Context of one handler invocation.
type taskContext struct {
	pe *PE
	el *element
}

var _ actor.Context = (*taskContext)(nil)

func (c *taskContext) Index() actor.Index { return c.el.index }
func (c *taskContext) PE() int            { return c.pe.cfg.Rank }
func (c *taskContext) NumPEs() int        { return c.pe.cfg.Size }

func (c *taskContext) Post(t actor.Target, key uint64, m any) {
	c.pe.post(t, key, m, c.el.id)
}

// Give is Post for a message its sender gave up (actor.Proxy.Give).
func (c *taskContext) Give(t actor.Target, key uint64, m any) {
	c.pe.give(t, key, m, c.el.id)
}

func (c *taskContext) Expect(key uint64) { c.el.expected = key }

func (c *taskContext) Contribute(r actor.Reducer, v actor.Value, cb actor.Callback) {
	c.pe.contribute(c.el, r, v, cb)
}

func (c *taskContext) StartQuiescence(cb actor.CallbackTo[*actor.Quiescence]) {
	c.pe.qdCallbacks = append(c.pe.qdCallbacks, cb)
	c.pe.cfg.Control.RequestQuiescence()
}

func (c *taskContext) AtSync(step uint64) bool { return c.pe.atSync(c.el, step) }

func (c *taskContext) Exit(status int) {
	c.pe.transmit()
	c.pe.cfg.Control.Exit(status)
}

func (c *taskContext) Printf(format string, args ...any) {
	seq := c.el.printed
	c.el.printed++
	c.pe.cfg.Control.Output(uint64(c.el.id), seq, fmt.Sprintf(format, args...))
}

func (c *taskContext) Logf(format string, args ...any) {
	fmt.Fprintf(c.pe.cfg.Stderr, "%s%v: %s\n", c.el.coll.def.Name, c.el.index, fmt.Sprintf(format, args...))
}
