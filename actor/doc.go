// Package actor is the programming model of gochare: what applications are
// written against.
//
// An application is a set of tasks (Task) grouped in indexed collections
// (Collection, declared with NewCollection over a 1-d to 6-d Shape and an
// initial Map onto PEs). Tasks exchange asynchronous protobuf messages
// through proxies (Proxy, returned by Handle): to one element, to a Section,
// or by broadcast. Every handler carries an Annotation (ordered,
// commutative region of known size, or order-dependent) that the
// fault-tolerance protocols use to decide which receptions need a
// determinant. Keyed messages (KeyBy) wait until their task expects their
// key (Context.Expect), which is how a program states its intrinsic order.
// Reductions (Context.Contribute) are combined over a fixed tree of element
// indices, so their results are bitwise reproducible on any number of PEs.
// Tasks serialise their state (Task is an encoding.BinaryMarshaler and
// BinaryUnmarshaler) for checkpoints and migration.
//
// The runtime (package scheduler) implements Context; this package imports
// nothing of gochare, and applications import only this package.
package actor

//go:generate protoc -I .. --go_out=.. --go_opt=module=github.com/gochare/gochare actor/actor.proto
