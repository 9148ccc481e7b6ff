// Package actortest helps the unit tests of applications written against
// package actor.
//
// CheckCommutative runs one task's commutative region, given as the
// task's state before it and the region's messages, in every order (or,
// for a region of more than 6 messages, in the reverse order and seeded
// random ones) and fails the test at the first order whose packed state
// or sends differ from the given order's (see actor/regioncheck for what
// is compared). CommutativeErr returns that failure as an error.
//
// Imports: actor and actor/regioncheck.
package actortest
