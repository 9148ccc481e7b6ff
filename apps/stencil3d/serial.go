package stencil3d

import "github.com/gochare/gochare/actor"

// SolveSerial runs cfg in the calling goroutine: it holds every chunk of the
// grid, exchanges their faces periodically over the chunk grid with
// ExtractFace and StoreFace, and sweeps them with Sweep and ApplyBoundary,
// the same kernel the parallel app runs. It returns each chunk's result in
// linear index order of the chunk collection (z fastest). It is the
// reference the parallel app is checked against; cfg must be valid.
func SolveSerial(cfg Config) []ChunkResult {
	b := cfg.Block()
	shape := chunkShape(cfg)
	n := shape.Size()
	current := make([][]float64, n)
	scratch := make([][]float64, n)
	for c := range n {
		current[c] = make([]float64, b.Len())
		scratch[c] = make([]float64, b.Len())
		ApplyBoundary(b, current[c])
	}
	var face []float64
	for range cfg.Iterations {
		// Extraction reads only interiors and storing writes only halos, so
		// the order of the exchange does not matter; all of it happens
		// before any sweep, as in the parallel app.
		for c := range n {
			at := shape.At(c)
			for s := range Side(NumSides) {
				face = ExtractFace(b, current[c], s, face[:0])
				to := shape.Linear(neighbour(shape, at, s))
				if err := StoreFace(b, current[to], s.Opposite(), face); err != nil {
					panic(err) // the face comes from ExtractFace on the same block
				}
			}
		}
		for c := range n {
			Sweep(b, current[c], scratch[c])
			current[c], scratch[c] = scratch[c], current[c]
			ApplyBoundary(b, current[c])
		}
	}
	results := make([]ChunkResult, n)
	for c := range n {
		results[c] = Summarize(b, current[c])
	}
	return results
}

// chunkShape returns the index space of the chunk collection.
func chunkShape(cfg Config) actor.Shape {
	g := cfg.ChunkGrid()
	return actor.Shape{g[0], g[1], g[2]}
}

// neighbour returns the index of the chunk across side s of the chunk at,
// periodic over the chunk grid.
func neighbour(shape actor.Shape, at actor.Index, s Side) actor.Index {
	at[s.Axis()] += int32(s.Step())
	return shape.Wrap(at)
}
