//go:build !race

package kernel

const raceDetectorEnabled = false
