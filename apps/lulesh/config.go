package lulesh

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
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
		return fmt.Errorf("lulesh: --size %d / --chunk %s gives %d chunks, at most %d", c.Size, formatTriple(c.Chunk), n, maxChunks)
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
	fs := newFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, fmt.Errorf("lulesh: %w\n%s", err, Usage())
		}
		return Config{}, fmt.Errorf("lulesh: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("lulesh: unexpected argument %q", fs.Arg(0))
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
	fs := newFlagSet(&cfg)
	var b strings.Builder
	b.WriteString("usage: lulesh [--size N] [--chunk X,Y,Z] [--iterations I] [--progress K] [--json]\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

func newFlagSet(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("lulesh", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&cfg.Size, "size", cfg.Size, "mesh edge `N` (N³ elements)")
	fs.Var((*chunkExtent)(&cfg.Chunk), "chunk", "elements per chunk `X,Y,Z` (or one value for all three); must divide --size (default N/2 if N is even, else N)")
	fs.IntVar(&cfg.Iterations, "iterations", cfg.Iterations, "cycle limit (0: run to the stop time)")
	fs.IntVar(&cfg.Progress, "progress", cfg.Progress, "print a progress line every `K` cycles (0: none)")
	fs.BoolVar(&cfg.JSON, "json", false, "print a final JSON line")
	return fs
}

// chunkExtent is a flag value of three positive integers written X,Y,Z,
// or one integer for all three.
type chunkExtent [3]int

func (t *chunkExtent) String() string {
	if t == nil || *t == ([3]int{}) {
		return ""
	}
	return formatTriple(*t)
}

func (t *chunkExtent) Set(s string) error {
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != 3 {
		return fmt.Errorf("want X,Y,Z or a single extent, got %d values", len(parts))
	}
	var v [3]int
	for d, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%q is not an integer", p)
		}
		if n < 1 {
			return fmt.Errorf("extent %d, want at least 1", n)
		}
		v[d] = n
	}
	if len(parts) == 1 {
		v[1], v[2] = v[0], v[0]
	}
	*t = v
	return nil
}

func formatTriple(t [3]int) string { return fmt.Sprintf("%d,%d,%d", t[0], t[1], t[2]) }
