//go:build race

package lulesh

const raceDetector = true
