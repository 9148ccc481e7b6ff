//go:build !race

package lulesh

// raceDetector reports whether the tests run under -race, which makes the
// longer runs too slow.
const raceDetector = false
