//go:build race

package logtest

// The race detector slows the simulator down about tenfold.
const raceEnabled = true
