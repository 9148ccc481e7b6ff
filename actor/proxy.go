package actor

import (
	"fmt"

	"google.golang.org/protobuf/proto"
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
type Proxy[M proto.Message] struct {
	coll    *CollectionDef
	handler *HandlerDef
	key     func(proto.Message) uint64
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

// At returns a callback that delivers to the element at index to. The
// handler's message type must be the one the callback produces
// (*ReductionResult for reductions, *Quiescence for quiescence detection).
func (p *Proxy[M]) At(to Index) Callback {
	return Callback{Target: p.target(ScopeOne, to, nil), message: string(p.handler.MessageName)}
}

// All returns a callback that broadcasts to every element.
func (p *Proxy[M]) All() Callback {
	return Callback{Target: p.target(ScopeAll, Index{}, nil), message: string(p.handler.MessageName)}
}

// Handler returns the runtime's view of the proxy's handler.
func (p *Proxy[M]) Handler() *HandlerDef { return p.handler }

// Callback is where the runtime delivers the result of a reduction or a
// quiescence detection.
type Callback struct {
	Target  Target
	message string
}

// MessageName returns the protobuf full name of the message the callback's
// handler takes ("" for the zero Callback).
func (c Callback) MessageName() string { return c.message }

// NewCallback rebuilds a callback from its parts (used by the runtime to
// decode callbacks carried in messages).
func NewCallback(t Target, messageName string) Callback {
	return Callback{Target: t, message: messageName}
}
