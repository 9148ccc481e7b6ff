//go:build !race

package leanmd

// raceDetector reports whether the tests run under -race, which makes the
// long runs too slow.
const raceDetector = false
