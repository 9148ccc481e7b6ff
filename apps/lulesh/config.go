package lulesh

import (
	"fmt"

	"github.com/gochare/gochare/apps/appkit"
)

// Limits on a configuration, so that a typo cannot ask for an impossible
// allocation.
const (
	maxMeshSize   = 1024    // elements along one edge of the mesh
	maxChunks     = 1 << 16 // tasks in the chunk collection
	maxIterations = 1 << 30
)

// DefaultMeshSize is the reference's default problem size (-s 30).
const DefaultMeshSize = 30

// Config is a lulesh run: the mesh, its split into chunks and the limits.
type Config struct {
	// Size is N: the mesh has N³ elements.
	Size int
	// Chunk is the number of elements of one chunk along x, y and z; each
	// divides Size. Zero means the default (see DefaultChunk).
	Chunk [3]int
	// Iterations is the cycle limit; 0 runs to the stop time.
	Iterations int
	// Progress prints a progress line every Progress cycles (0: never).
	Progress int
	// JSON asks for a final JSON line after the text output.
	JSON bool
}

// DefaultConfig is the configuration used for flags that are not given.
func DefaultConfig() Config { return Config{Size: DefaultMeshSize} }

// DefaultChunk is the chunk size used without --chunk: half the mesh along
// each axis (8 chunks) when n is even, the whole mesh (1 chunk) when odd.
func DefaultChunk(n int) [3]int {
	if n%2 == 0 {
		return [3]int{n / 2, n / 2, n / 2}
	}
	return [3]int{n, n, n}
}

// ChunkGrid returns the number of chunks along x, y and z: the shape of
// the chunk collection.
func (c Config) ChunkGrid() [3]int {
	return [3]int{c.Size / c.Chunk[0], c.Size / c.Chunk[1], c.Size / c.Chunk[2]}
}

// NumChunks returns the number of chunks.
func (c Config) NumChunks() int {
	g := c.ChunkGrid()
	return g[0] * g[1] * g[2]
}

// Validate reports the first problem of the configuration, if any.
func (c Config) Validate() error {
	if c.Size < 1 || c.Size > maxMeshSize {
		return fmt.Errorf("lulesh: --size %d, want 1 to %d", c.Size, maxMeshSize)
	}
	axes := [3]string{"x", "y", "z"}
	for d := range 3 {
		if c.Chunk[d] < 1 || c.Chunk[d] > c.Size {
			return fmt.Errorf("lulesh: --chunk %s extent %d, want 1 to --size %d", axes[d], c.Chunk[d], c.Size)
		}
		if c.Size%c.Chunk[d] != 0 {
			return fmt.Errorf("lulesh: --chunk %s extent %d does not divide --size %d (the mesh has %d elements along %s)",
				axes[d], c.Chunk[d], c.Size, c.Size, axes[d])
		}
	}
	if n := c.NumChunks(); n > maxChunks {
		return fmt.Errorf("lulesh: --size %d / --chunk %s gives %d chunks, at most %d", c.Size, appkit.FormatTriple(c.Chunk), n, maxChunks)
	}
	if c.Iterations < 0 || c.Iterations > maxIterations {
		return fmt.Errorf("lulesh: --iterations %d, want 0 (run to the stop time) to %d", c.Iterations, maxIterations)
	}
	if c.Progress < 0 {
		return fmt.Errorf("lulesh: --progress %d, want 0 (none) or a positive cycle count", c.Progress)
	}
	return nil
}

// ParseConfig reads the application arguments:
//
//	--size N          mesh of N³ elements (default 30, as the reference)
//	--chunk X,Y,Z     elements per chunk along x, y, z; each must divide N
//	                  (a single value is used for all three; default
//	                  N/2 when N is even, else N)
//	--iterations I    cycle limit (default 0: run to the stop time)
//	--progress K      print a progress line every K cycles (default 0: none)
//	--json            print a final JSON line
//
// It returns an error naming the flag for an unknown flag or a bad value,
// and for a configuration that Validate refuses.
func ParseConfig(args []string) (Config, error) {
	cfg := DefaultConfig()
	if err := newFlags(&cfg).Parse(args); err != nil {
		return Config{}, fmt.Errorf("lulesh: %w", err)
	}
	if cfg.Chunk == ([3]int{}) && cfg.Size >= 1 {
		cfg.Chunk = DefaultChunk(cfg.Size)
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
	fs := appkit.NewFlags("lulesh", "usage: lulesh [--size N] [--chunk X,Y,Z] [--iterations I] [--progress K] [--json]")
	fs.IntVar(&cfg.Size, "size", cfg.Size, "mesh edge `N` (N³ elements)")
	fs.Var((*appkit.TripleOrOne)(&cfg.Chunk), "chunk", "elements per chunk `X,Y,Z` (or one value for all three); must divide --size (default N/2 if N is even, else N)")
	fs.IntVar(&cfg.Iterations, "iterations", cfg.Iterations, "cycle limit (0: run to the stop time)")
	fs.IntVar(&cfg.Progress, "progress", cfg.Progress, "print a progress line every `K` cycles (0: none)")
	fs.BoolVar(&cfg.JSON, "json", false, "print a final JSON line")
	return fs
}
