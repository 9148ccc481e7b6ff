//go:build race

package sim

// defaultSeeds is the sweep under the race detector (ten times slower).
const defaultSeeds = 100
