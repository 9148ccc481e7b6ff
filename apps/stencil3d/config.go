package stencil3d

import (
	"fmt"

	"github.com/gochare/gochare/apps/appkit"
)

// Limits on a configuration, so that a typo cannot ask for an impossible
// allocation or overflow an int.
const (
	maxGridExtent  = 1 << 16 // points along one dimension of the grid
	maxChunkPoints = 1 << 24 // interior points of one chunk (128 MiB per array)
	maxChunks      = 1 << 20 // tasks in the chunk collection
	maxIterations  = 1 << 30
)

// Config is a stencil3d run: the global grid, its split into chunks and the
// number of iterations.
type Config struct {
	// Grid is the number of points of the global grid in x, y and z.
	Grid [3]int
	// Chunk is the number of interior points of one chunk in x, y and z.
	Chunk [3]int
	// Iterations is the number of sweeps.
	Iterations int
	// JSON asks for a final JSON line after the text output.
	JSON bool
}

// DefaultConfig is the configuration used for flags that are not given.
func DefaultConfig() Config {
	return Config{Grid: [3]int{64, 64, 64}, Chunk: [3]int{16, 16, 16}, Iterations: 100}
}

// Block returns the extent of one chunk's interior.
func (c Config) Block() Block { return Block{X: c.Chunk[0], Y: c.Chunk[1], Z: c.Chunk[2]} }

// ChunkGrid returns the number of chunks in x, y and z: the shape of the
// chunk collection.
func (c Config) ChunkGrid() [3]int {
	return [3]int{c.Grid[0] / c.Chunk[0], c.Grid[1] / c.Chunk[1], c.Grid[2] / c.Chunk[2]}
}

// NumChunks returns the number of chunks.
func (c Config) NumChunks() int {
	g := c.ChunkGrid()
	return g[0] * g[1] * g[2]
}

// Validate reports the first problem of the configuration, if any.
func (c Config) Validate() error {
	axes := [3]string{"x", "y", "z"}
	for d := range 3 {
		if c.Grid[d] < 1 || c.Grid[d] > maxGridExtent {
			return fmt.Errorf("stencil3d: --grid %s extent %d, want 1 to %d", axes[d], c.Grid[d], maxGridExtent)
		}
		if c.Chunk[d] < 1 {
			return fmt.Errorf("stencil3d: --chunk %s extent %d, want at least 1", axes[d], c.Chunk[d])
		}
		if c.Grid[d]%c.Chunk[d] != 0 {
			return fmt.Errorf("stencil3d: --grid %s extent %d is not divisible by --chunk %s extent %d",
				axes[d], c.Grid[d], axes[d], c.Chunk[d])
		}
	}
	if points := c.Chunk[0] * c.Chunk[1] * c.Chunk[2]; points > maxChunkPoints {
		return fmt.Errorf("stencil3d: --chunk %s has %d points, at most %d", appkit.FormatTriple(c.Chunk), points, maxChunkPoints)
	}
	if n := c.NumChunks(); n > maxChunks {
		return fmt.Errorf("stencil3d: --grid %s / --chunk %s gives %d chunks, at most %d",
			appkit.FormatTriple(c.Grid), appkit.FormatTriple(c.Chunk), n, maxChunks)
	}
	if c.Iterations < 1 || c.Iterations > maxIterations {
		return fmt.Errorf("stencil3d: --iterations %d, want 1 to %d", c.Iterations, maxIterations)
	}
	return nil
}

// ParseConfig reads the application arguments:
//
//	--grid X,Y,Z      global grid points (default 64,64,64)
//	--chunk X,Y,Z     interior points per chunk (default 16,16,16)
//	--iterations N    number of sweeps (default 100)
//	--json            print a final JSON line
//
// It returns an error naming the flag for an unknown flag or a bad value,
// and for a configuration that Validate refuses.
func ParseConfig(args []string) (Config, error) {
	cfg := DefaultConfig()
	if err := newFlags(&cfg).Parse(args); err != nil {
		return Config{}, fmt.Errorf("stencil3d: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Usage returns the description of the flags.
func Usage() string {
	cfg := DefaultConfig()
	return newFlags(&cfg).Usage()
}

func newFlags(cfg *Config) *appkit.Flags {
	fs := appkit.NewFlags("stencil3d", "usage: stencil3d [--grid X,Y,Z] [--chunk X,Y,Z] [--iterations N] [--json]")
	fs.Var((*appkit.Triple)(&cfg.Grid), "grid", "global grid points `X,Y,Z`")
	fs.Var((*appkit.Triple)(&cfg.Chunk), "chunk", "interior points per chunk `X,Y,Z`; must divide --grid")
	fs.IntVar(&cfg.Iterations, "iterations", cfg.Iterations, "number of sweeps")
	fs.BoolVar(&cfg.JSON, "json", false, "print a final JSON line")
	return fs
}
