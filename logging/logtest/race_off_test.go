//go:build !race

package logtest

const raceEnabled = false
