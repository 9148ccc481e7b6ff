// Package actor is the programming model of gochare: what applications are
// written against.
//
// An application is a set of tasks (Task) grouped in indexed collections
// (Collection, declared with NewCollection over a 1-d to 6-d Shape and an
// initial Map onto PEs). Tasks exchange asynchronous messages through
// proxies (Proxy, returned by Handle): to one element, to a Section, or by
// broadcast. A message is a protobuf message or a plain Go value (a struct
// with exported fields), encoded as deterministic CBOR (Codec): no code
// generator is needed. Handlers are identified by name (Job.Digest is
// compared across PEs at join). Every handler carries an Annotation
// (ordered, commutative region of a size fixed or told at run time per
// task and key, or order-dependent) that the fault-tolerance protocols use
// to decide which receptions need a determinant. Keyed messages (KeyBy) wait until their task expects their
// key (Context.Expect), which is how a program states its intrinsic order.
// Reductions (Context.Contribute) are combined over a fixed tree of element
// indices, so their results are bitwise reproducible on any number of PEs;
// their callbacks are typed (CallbackTo), so a reduction sent to a handler
// of another message does not compile. Tasks are packed for checkpoints
// and migration: a pointer to a struct is packed from its exported fields,
// a type with MarshalBinary and UnmarshalBinary packs itself (see Task).
//
// The runtime (package scheduler) implements Context; this package imports
// nothing of gochare (only fxamacker/cbor and protobuf), and applications
// import only this package.
package actor

//go:generate protoc -I .. --go_out=.. --go_opt=module=github.com/gochare/gochare actor/actor.proto
