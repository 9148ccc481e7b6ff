//go:build race

package md

const raceDetector = true
