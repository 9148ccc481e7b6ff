//go:build !race

package sim

// defaultSeeds is the sweep of a plain go test.
const defaultSeeds = 2000
