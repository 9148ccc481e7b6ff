package stencil3d

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
)

// App is the stencil3d application, run by `gochare run stencil3d`.
var App = appkit.Spec[Config]{
	Name:    appName,
	Summary: "7-point Jacobi stencil on a periodic 3-d grid of chunks with ghost exchange (Charm++ stencil3d)",
	Parse:   ParseConfig,
	Declare: func(j *actor.Job, cfg Config) { declare(j, cfg, time.Now) },
	// The chunks offer steps 0 to iterations-2: a sync point after every
	// sweep but the last (see onFacesComplete).
	LastStep: func(cfg Config) (uint64, bool) {
		if cfg.Iterations < 2 {
			return 0, false
		}
		return uint64(cfg.Iterations - 2), true
	},
}.App()

// program holds the declarations of one job: its configuration and the
// proxies the handlers send through. It is built identically on every PE
// by Define and is never changed afterwards.
type program struct {
	cfg   Config
	shape actor.Shape // of the chunk collection

	begin *actor.Proxy[*Begin]
	face  *actor.Proxy[*Face]
	// results is the main element's callback for the chunk records.
	results actor.Callback
	// collect concatenates chunk records; see encodeRecord.
	collect actor.Reducer
}

// Names of the application, its collection and its reducer, as the
// runtime shows them.
const (
	appName          = "stencil3d"
	chunksCollection = "chunks"
	collectReducer   = "stencil3d.records"
)

// declare declares the job; now reads the clock of the main element's PE,
// for the elapsed time only.
func declare(j *actor.Job, cfg Config, now func() time.Time) *program {
	p := &program{cfg: cfg, shape: chunkShape(cfg)}
	p.collect = j.CustomReducer(collectReducer, appkit.ConcatBytes)
	p.results = appkit.Main{Clock: now, Begin: p.start, Finish: p.finish}.Declare(j)

	chunks := actor.NewCollection(j, chunksCollection, p.shape, actor.BlockMap,
		func(actor.Index) *Chunk {
			c := newChunk(cfg)
			c.resume = p.sendFaces
			return c
		})
	chunks.UsesAtSync()
	p.begin = actor.Handle(chunks, "begin", actor.AnnotateOrdered(), p.onBegin,
		actor.KeyBy(func(*Begin) uint64 { return 0 }))
	p.face = actor.Handle(chunks, "face", actor.AnnotateCommutative(NumSides), p.onFace,
		actor.KeyBy(func(m *Face) uint64 { return faceKey(m.GetIteration()) }),
		actor.WhenComplete(p.onFacesComplete))
	return p
}

// faceKey is the message key of the faces of an iteration. It is the
// iteration plus one because a task expects key 0 when it is created:
// faces of iteration 0 that reach a chunk before its Begin must wait until
// Begin has applied the boundary condition and sent the chunk's own faces.
func faceKey(iteration uint64) uint64 { return iteration + 1 }

// start begins the run: every chunk applies its boundary condition and
// sends its first faces.
func (p *program) start(ctx actor.Context) { p.begin.Broadcast(ctx, &Begin{}) }

func (p *program) onBegin(c *Chunk, ctx actor.Context, _ *Begin) {
	if err := c.begin(); err != nil {
		panic(err)
	}
	p.sendFaces(c, ctx)
}

// sendFaces expects the faces of the chunk's current iteration, then sends
// its own six faces of that iteration to its neighbours.
func (p *program) sendFaces(c *Chunk, ctx actor.Context) {
	ctx.Expect(faceKey(c.iteration))
	at := ctx.Index()
	faces := c.takeFaces() // taken by the sweep; nil after begin or a sync point
	for s := range Side(NumSides) {
		var values []byte
		if faces != nil {
			values, faces[s] = faces[s], nil
		} else {
			values = AppendFaceBytes(c.block, c.temperature, s, nil)
		}
		// Given, buffer and all: on this PE under --ft none the
		// neighbour gets this very message, and this chunk takes the
		// neighbours' faces in exchange (Chunk.recycle).
		m := c.message(s)
		m.Iteration, m.Halo, m.Values = c.iteration, haloOf(s.Opposite()), values
		p.face.Give(ctx, neighbour(p.shape, at, s), m)
	}
}

// onFace is the per-message handler of the ghost-exchange region: it writes
// the face into its own halo and nothing else, so the six faces of an
// iteration commute.
func (p *program) onFace(c *Chunk, _ actor.Context, m *Face) {
	s, ok := sideOf(m.GetHalo())
	if !ok {
		panic(fmt.Sprintf("stencil3d: face of iteration %d for halo %v", m.GetIteration(), m.GetHalo()))
	}
	if err := c.storeFace(m.GetIteration(), s, m.GetValues()); err != nil {
		panic(err)
	}
	c.keep(s, m)
}

// onFacesComplete runs once all six faces of an iteration are stored: the
// sweep, then either the next iteration's sends or the final contribution.
func (p *program) onFacesComplete(c *Chunk, ctx actor.Context, key uint64) {
	last, err := c.completeIteration(key - 1)
	if err != nil {
		panic(err)
	}
	if !last {
		// A sync point after every sweep: when the runtime takes it (a
		// checkpoint period), the next faces go out from ResumeFromSync.
		if ctx.AtSync(c.iteration - 1) {
			return
		}
		p.sendFaces(c, ctx)
		return
	}
	record := encodeRecord(p.shape.Linear(ctx.Index()), c.result())
	ctx.Contribute(p.collect, actor.Value{Bytes: record}, p.results)
}

// finish takes every chunk's record and returns the report.
func (p *program) finish(_ actor.Context, run appkit.Run) ([]string, int, error) {
	r := run.Results[0]
	results, err := decodeRecords(r.GetBytes(), p.cfg.NumChunks())
	if r.GetReducer() != collectReducer {
		err = fmt.Errorf("stencil3d: results combined by reducer %q, want %q", r.GetReducer(), collectReducer)
	}
	if err != nil {
		return nil, 1, err
	}
	lines, status := report(p.cfg, results, run.PEs, run.Elapsed)
	return lines, status, nil
}

// haloOf and sideOf convert between a Side and its wire name.
func haloOf(s Side) Halo { return Halo(int32(s) + 1) }

func sideOf(h Halo) (Side, bool) {
	s := Side(int32(h) - 1)
	return s, s >= 0 && s < NumSides
}

// A record is one chunk's contribution to the final reduction, 20 bytes
// little-endian: its linear index in the chunk collection (uint32), its
// FNV-1a hash (uint64) and the bits of its sum (uint64). The reducer
// concatenates records; the main element sorts them by index, so the job
// digest does not depend on the combining order.
const recordBytes = 4 + 8 + 8

func encodeRecord(linear int, r ChunkResult) []byte {
	out := make([]byte, 0, recordBytes)
	out = binary.LittleEndian.AppendUint32(out, uint32(linear))
	out = binary.LittleEndian.AppendUint64(out, r.FNV1a)
	return binary.LittleEndian.AppendUint64(out, math.Float64bits(r.Sum))
}

// decodeRecords returns the results of chunks 0..n-1 in linear index
// order, checking that each chunk contributed exactly once.
func decodeRecords(data []byte, n int) ([]ChunkResult, error) {
	if len(data) != n*recordBytes {
		return nil, fmt.Errorf("stencil3d: %d bytes of chunk records, want %d for %d chunks", len(data), n*recordBytes, n)
	}
	results := make([]ChunkResult, n)
	seen := make([]bool, n)
	for ; len(data) > 0; data = data[recordBytes:] {
		linear := int(binary.LittleEndian.Uint32(data))
		if linear >= n || seen[linear] {
			return nil, fmt.Errorf("stencil3d: chunk record for linear index %d (of %d) is out of range or repeated", linear, n)
		}
		seen[linear] = true
		results[linear] = ChunkResult{
			FNV1a: binary.LittleEndian.Uint64(data[4:]),
			Sum:   math.Float64frombits(binary.LittleEndian.Uint64(data[12:])),
		}
	}
	return results, nil
}

// Reference statuses, as in the JSON line.
const (
	referenceMatch    = "match"
	referenceMismatch = "mismatch"
	referenceNone     = "none"
)

// maxDifferingLines bounds the lines listing chunks that differ.
const maxDifferingLines = 8

// report returns the output lines of a finished run (format in doc.go) and
// the job's exit status: 1 if the chunks differ or disagree with the
// reference table, 0 otherwise. results are in linear index order.
func report(cfg Config, results []ChunkResult, pes int, elapsed time.Duration) (lines []string, status int) {
	shape := chunkShape(cfg)
	g := cfg.ChunkGrid()
	lines = append(lines, fmt.Sprintf("stencil3d grid %s chunk %s chunks %s iterations %d pes %d",
		appkit.FormatTriple(cfg.Grid), appkit.FormatTriple(cfg.Chunk), appkit.FormatTriple(g), cfg.Iterations, pes))

	common := results[0]
	var differing []int
	hashes := make([]uint64, len(results))
	for n, r := range results {
		hashes[n] = r.FNV1a
		if !sameResult(r, common) {
			differing = append(differing, n)
		}
	}
	equality := fmt.Sprintf("all %d chunks equal", len(results))
	if len(differing) > 0 {
		equality = fmt.Sprintf("chunks DIFFER: %d of %d differ from chunk %v", len(differing), len(results), shape.At(0))
		status = 1
	}
	lines = append(lines, fmt.Sprintf("chunk sum %s fnv1a %016x (%s)", appkit.FormatExact(common.Sum), common.FNV1a, equality))
	for _, n := range differing[:min(len(differing), maxDifferingLines)] {
		lines = append(lines, fmt.Sprintf("chunk %v sum %s fnv1a %016x", shape.At(n), appkit.FormatExact(results[n].Sum), results[n].FNV1a))
	}
	digest := JobDigest(hashes)
	lines = append(lines, fmt.Sprintf("job digest %016x", digest))

	reference := referenceNone
	if want, ok := Reference(cfg); ok {
		reference = referenceMatch
		if len(differing) > 0 || !sameResult(common, want) {
			reference = referenceMismatch
			status = 1
		}
		if reference == referenceMatch {
			lines = append(lines, "reference: match")
		} else {
			lines = append(lines, fmt.Sprintf("reference: MISMATCH (want chunk sum %s fnv1a %016x)", appkit.FormatExact(want.Sum), want.FNV1a))
		}
	} else {
		lines = append(lines, fmt.Sprintf("reference: none (no reference value for chunk %v, %d iterations)", cfg.Block(), cfg.Iterations))
	}
	lines = append(lines, fmt.Sprintf("elapsed %.6f s", elapsed.Seconds()))

	if cfg.JSON {
		line, err := jsonLine(cfg, pes, common, len(differing) == 0, digest, reference, elapsed)
		if err != nil {
			lines = append(lines, fmt.Sprintf("error: %v", err))
			return lines, 1
		}
		lines = append(lines, line)
	}
	return lines, status
}

// sameResult compares bit for bit (a NaN sum equals itself).
func sameResult(a, b ChunkResult) bool {
	return a.FNV1a == b.FNV1a && math.Float64bits(a.Sum) == math.Float64bits(b.Sum)
}

// jsonReport is the final JSON line of --json.
type jsonReport struct {
	App        string `json:"app"`
	Grid       [3]int `json:"grid"`
	Chunk      [3]int `json:"chunk"`
	Chunks     int    `json:"chunks"`
	Iterations int    `json:"iterations"`
	PEs        int    `json:"pes"`
	// ChunkSum is written as in the text (appkit.FormatExact).
	ChunkSum    json.Number `json:"chunk_sum"`
	ChunkFNV1a  string      `json:"chunk_fnv1a"`
	ChunksEqual bool        `json:"chunks_equal"`
	JobDigest   string      `json:"job_digest"`
	Reference   string      `json:"reference"`
	ElapsedS    float64     `json:"elapsed_s"`
}

func jsonLine(cfg Config, pes int, common ChunkResult, equal bool, digest uint64, reference string, elapsed time.Duration) (string, error) {
	if math.IsNaN(common.Sum) || math.IsInf(common.Sum, 0) {
		return "", errors.New("stencil3d: chunk sum is not finite, no JSON line")
	}
	out, err := json.Marshal(jsonReport{
		App:         appName,
		Grid:        cfg.Grid,
		Chunk:       cfg.Chunk,
		Chunks:      cfg.NumChunks(),
		Iterations:  cfg.Iterations,
		PEs:         pes,
		ChunkSum:    json.Number(appkit.FormatExact(common.Sum)),
		ChunkFNV1a:  fmt.Sprintf("%016x", common.FNV1a),
		ChunksEqual: equal,
		JobDigest:   fmt.Sprintf("%016x", digest),
		Reference:   reference,
		ElapsedS:    elapsed.Seconds(),
	})
	return string(out), err
}
