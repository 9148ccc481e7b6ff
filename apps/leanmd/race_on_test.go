//go:build race

package leanmd

const raceDetector = true
