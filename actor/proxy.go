package actor

import (
	"fmt"
)

// Scope says which elements a Target addresses.
type Scope uint8

const (
	// ScopeOne addresses one element.
	ScopeOne Scope = iota
	// ScopeSection addresses a list of elements.
	ScopeSection
	// ScopeAll addresses every element of the collection.
	ScopeAll
)

// Target names a handler on one element, a section, or all elements of a
// collection.
type Target struct {
	Collection int32
	Handler    int32
	Scope      Scope
	Index      Index   // ScopeOne
	Section    Section // ScopeSection
}

// Section is a list of elements of one collection.
type Section []Index

// Proxy sends messages of type M to one handler of a collection.
type Proxy[M any] struct {
	coll    *CollectionDef
	handler *HandlerDef
	key     func(any) uint64
}

func (p *Proxy[M]) target(s Scope, at Index, sec Section) Target {
	return Target{Collection: p.coll.ID, Handler: p.handler.ID, Scope: s, Index: at, Section: sec}
}

func (p *Proxy[M]) keyOf(m M) uint64 {
	if p.key == nil {
		return 0
	}
	return p.key(m)
}

// Send sends m to the element at index to. The runtime encodes m before
// Send returns: the caller may change m, or reuse the buffers it refers
// to, once the call is over (e.g. one face buffer per neighbour, written
// again every iteration).
func (p *Proxy[M]) Send(ctx Context, to Index, m M) {
	if !p.coll.Shape.Contains(to) {
		panic(fmt.Sprintf("actor: send to %v outside collection %q of shape %v", to, p.coll.Name, p.coll.Shape))
	}
	ctx.Post(p.target(ScopeOne, to, nil), p.keyOf(m), m)
}

// Give is Send for a sender that gives m up: from the call on, m and
// everything it refers to (a bytes field's array, a slice's) belong to
// the runtime, and the caller must neither read nor write them again.
// In return, under --ft none (nothing is logged or replayed), a message to
// an element on the sender's own PE is not encoded at all: the handler
// receives m itself, with its buffers, and owns it like any message it
// receives (it may keep it, write it, send it on with Give). Anywhere
// else (another PE, a logging protocol, --record, replay,
// --check-annotations) Give encodes m like Send; m is garbage afterwards,
// or the receiver's. A handler cannot tell the two apart: it always gets
// a message of its own, and the sender must always act as if m had
// passed to the receiver.
//
// The rule is the caller's to keep, as with any memory handed to another
// goroutine: a sender that keeps writing a buffer it gave changes the
// message under its receiver. A sender that sends the same buffer every
// iteration keeps using Send; one that wants to spare the copies gives
// each message its own buffers (e.g. taking back the buffers of the
// messages it received, which are its own).
func (p *Proxy[M]) Give(ctx Context, to Index, m M) {
	if !p.coll.Shape.Contains(to) {
		panic(fmt.Sprintf("actor: send to %v outside collection %q of shape %v", to, p.coll.Name, p.coll.Shape))
	}
	t := p.target(ScopeOne, to, nil)
	if g, ok := ctx.(giver); ok {
		g.Give(t, p.keyOf(m), m)
		return
	}
	ctx.Post(t, p.keyOf(m), m)
}

// giver is a Context that can take a message the sender gave up
// (Proxy.Give); a Context without Give gets it through Post, encoded.
type giver interface {
	// Give is Post for a message m whose sender gave it up: the runtime
	// may hand m itself to its handler.
	Give(to Target, key uint64, m any)
}

// Broadcast sends m to every element of the collection. As with Send, m is
// the caller's again once the call returns.
func (p *Proxy[M]) Broadcast(ctx Context, m M) {
	ctx.Post(p.target(ScopeAll, Index{}, nil), p.keyOf(m), m)
}

// Multicast sends m to every element of the section. As with Send, m is
// the caller's again once the call returns.
func (p *Proxy[M]) Multicast(ctx Context, s Section, m M) {
	for _, to := range s {
		if !p.coll.Shape.Contains(to) {
			panic(fmt.Sprintf("actor: multicast to %v outside collection %q of shape %v", to, p.coll.Name, p.coll.Shape))
		}
	}
	ctx.Post(p.target(ScopeSection, Index{}, append(Section(nil), s...)), p.keyOf(m), m)
}

// At returns a callback that delivers to the element at index to. Its
// type says what the handler takes: Context.Contribute accepts only a
// CallbackTo[*ReductionResult] (a Callback), StartQuiescence only a
// CallbackTo[*Quiescence], so a callback to a handler of another message
// does not compile.
func (p *Proxy[M]) At(to Index) CallbackTo[M] {
	return CallbackTo[M]{target: p.target(ScopeOne, to, nil), handler: p.handler}
}

// All returns a callback that broadcasts to every element.
func (p *Proxy[M]) All() CallbackTo[M] {
	return CallbackTo[M]{target: p.target(ScopeAll, Index{}, nil), handler: p.handler}
}

// Handler returns the runtime's view of the proxy's handler.
func (p *Proxy[M]) Handler() *HandlerDef { return p.handler }

// CallbackTo is where the runtime delivers a message of type M: the
// result of a reduction (M is *ReductionResult, see Callback) or of a
// quiescence detection (*Quiescence).
type CallbackTo[M any] struct {
	target Target
	// handler, for a callback made by a proxy, gives the handler's ID
	// when the callback is used (IDs are final once the job is declared).
	handler *HandlerDef
	message string
}

// Callback is a reduction's callback.
type Callback = CallbackTo[*ReductionResult]

// Target returns the element or elements the callback delivers to.
func (c CallbackTo[M]) Target() Target {
	t := c.target
	if c.handler != nil {
		t.Handler = c.handler.ID
	}
	return t
}

// MessageName returns the name of the message the callback's handler
// takes ("" for the zero callback).
func (c CallbackTo[M]) MessageName() string {
	if c.handler != nil {
		return c.handler.Message.Name
	}
	return c.message
}

// NewCallback rebuilds a reduction callback from its parts (used by the
// runtime to decode callbacks carried in messages).
func NewCallback(t Target, messageName string) Callback {
	return Callback{target: t, message: messageName}
}
