//go:build !race

package md

// raceDetector reports whether the tests run under -race, which makes the
// full reference run too slow.
const raceDetector = false
