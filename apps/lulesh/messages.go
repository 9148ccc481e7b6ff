package lulesh

// The messages are plain Go structs (actor.CodecOf): their []float64
// fields travel as the floats' little-endian bits, one byte string each,
// a few nanoseconds a float more than protobuf's packed doubles (see
// docs/benchmarks.md, "LULESH: plain Go messages").

// Begin is broadcast by the main element to every chunk: contribute the
// chunk's nodal masses on shared nodes and start the first cycle.
type Begin struct{}

// SharedNodes carries one chunk's own values on the nodes it shares with
// one neighbour, in the order of kernel.Domain.SharedNodes: the nodal
// masses once at setup (key 1), or the three force components of a cycle
// (fx of every shared node, then fy, then fz; key 2·cycle).
type SharedNodes struct {
	// Key is the message key (see doc.go).
	Key uint64
	// FromX, FromY and FromZ are the direction from the receiving chunk
	// to the sending one: each is -1, 0 or +1.
	FromX, FromY, FromZ int32
	Values              []float64
}

// FaceGradients carries the monotonic-Q velocity gradients (delv along the
// face's normal) of the sender's elements on one face, for the receiver's
// ghost slots of that face (key 2·cycle+1).
type FaceGradients struct {
	Key uint64
	// Face is the receiver's face (kernel.Face: 0 x-, 1 x+, 2 y-, 3 y+,
	// 4 z-, 5 z+) whose ghost slots the values fill.
	Face   int32
	Values []float64
}
