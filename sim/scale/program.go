package scale

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/apps/leanmd/md"
	"github.com/gochare/gochare/apps/lulesh"
	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/commutative"
)

// ErrConfig reports a pattern that cannot be built.
var ErrConfig = errors.New("scale: bad config")

// Send is one message a task sends: to task To, for its stage Stage
// (the message key), with the annotation and payload size the mini-app
// gives it.
type Send struct {
	To         int
	Handler    uint32
	Annotation commutative.Annotation
	Stage      uint64
	Bytes      int
	// Multicast: the payload is the previous send's of the list (one
	// payload to several tasks), which the sender log holds once.
	Multicast bool
}

// Pattern is a mini-app's communication pattern as the protocols see it:
// tasks placed on PEs, each going through numbered stages. A task
// completes stage s once it has handled Expect(t, s) messages keyed s
// (at once if 0); it then sends Sends(t, s) (stage 0 is the start). A step
// of the application is StagesPerStep stages.
type Pattern interface {
	Name() string
	PEs() int
	Tasks() int
	Home(task int) int
	Expect(task int, stage uint64) int
	Sends(task int, stage uint64) []Send
	StagesPerStep() uint64
}

// grid3 is a 3-d box of cells, row-major with z fastest (actor.Shape's
// order).
type grid3 [3]int

func (g grid3) size() int                { return g[0] * g[1] * g[2] }
func (g grid3) lin(x, y, z int) int      { return z + g[2]*(y+g[1]*x) }
func (g grid3) at(lin int) (x, y, z int) { return lin / (g[1] * g[2]), (lin / g[2]) % g[1], lin % g[2] }

// PEGrid factors n PEs into a 3-d grid, as cubic as it goes (largest
// first), for weak-scaling decompositions: a job of n PEs, each with the
// same block of work, has n blocks arranged this way.
func PEGrid(n int) [3]int {
	best := [3]int{n, 1, 1}
	score := func(g [3]int) int { return g[0] - g[2] }
	for a := 1; a*a*a <= n; a++ {
		if n%a != 0 {
			continue
		}
		for b := a; a*b*b <= n; b++ {
			if (n/a)%b != 0 {
				continue
			}
			g := [3]int{n / a / b, b, a}
			if score(g) < score(best) {
				best = g
			}
		}
	}
	return best
}

// Stencil is stencil3d: a periodic grid of chunks, each sending its six
// faces to its six neighbours every iteration, received as a commutative
// region of six keyed by iteration; chunks placed with actor.BlockMap.
type Stencil struct {
	Chunks grid3
	Chunk  [3]int // points of a chunk along x, y, z
	NumPEs int
	home   []int
	faces  [3]int // payload bytes of a face normal to x, y, z
}

// NewStencil returns stencil3d on pes PEs, with chunks chunks of chunk
// points each.
func NewStencil(pes int, chunks, chunk [3]int) (*Stencil, error) {
	s := &Stencil{Chunks: chunks, Chunk: chunk, NumPEs: pes}
	if chunks[0] < 1 || chunks[1] < 1 || chunks[2] < 1 || s.Chunks.size() < pes {
		return nil, fmt.Errorf("%w: %d chunks for %d PEs", ErrConfig, s.Chunks.size(), pes)
	}
	n := s.Chunks.size()
	s.home = make([]int, n)
	for lin := range n {
		s.home[lin] = actor.BlockMap(lin, n, pes)
	}
	for axis := range 3 {
		points := chunk[0] * chunk[1] * chunk[2] / chunk[axis]
		s.faces[axis] = proto.Size(&stencil3d.Face{Iteration: 100, Halo: stencil3d.Halo(2*axis + 1), Values: make([]byte, 8*points)})
	}
	return s, nil
}

// WeakStencil is stencil3d on pes PEs, a block of chunks per PE: the
// chunk grid is PEGrid(pes) times block (BlockMap then gives each PE
// block[0]*block[1]*block[2] consecutive chunks).
func WeakStencil(pes int, block, chunk [3]int) (*Stencil, error) {
	return NewStencil(pes, times(PEGrid(pes), block), chunk)
}

func times(a, b [3]int) [3]int { return [3]int{a[0] * b[0], a[1] * b[1], a[2] * b[2]} }

func (s *Stencil) Name() string          { return "stencil3d" }
func (s *Stencil) PEs() int              { return s.NumPEs }
func (s *Stencil) Tasks() int            { return s.Chunks.size() }
func (s *Stencil) Home(t int) int        { return s.home[t] }
func (s *Stencil) StagesPerStep() uint64 { return 1 }

func (s *Stencil) Expect(int, uint64) int { return 6 }

func (s *Stencil) Sends(t int, stage uint64) []Send {
	x, y, z := s.Chunks.at(t)
	g := s.Chunks
	wrap := func(v, n int) int { return (v + n) % n }
	to := [6]int{
		g.lin(wrap(x-1, g[0]), y, z), g.lin(wrap(x+1, g[0]), y, z),
		g.lin(x, wrap(y-1, g[1]), z), g.lin(x, wrap(y+1, g[1]), z),
		g.lin(x, y, wrap(z-1, g[2])), g.lin(x, y, wrap(z+1, g[2])),
	}
	out := make([]Send, 6)
	for i, dst := range to {
		out[i] = Send{To: dst, Handler: 1, Annotation: commutative.CommutativeAnnotation(6), Stage: stage + 1, Bytes: s.faces[i/2]}
	}
	return out
}

// LeanMD is leanmd: cells, and per cell H computes (the self pair and
// the half shell of pairs); each step a cell sends its positions to the
// computes that touch it, each compute sends forces to its cells, and a
// cell takes its n force messages as a commutative region. Cells are
// placed with actor.BlockMap, each compute on its home cell's PE.
// Migration steps are left out.
type LeanMD struct {
	geo    md.Geometry
	NumPEs int
	cells  int
	h      int
	// touching[c] are the computes a cell's positions go to.
	touching [][]int
	home     []int
	posBytes int
	frcBytes int
}

// NewLeanMD returns leanmd on pes PEs with the given cells, k-away
// factors and atoms per cell.
func NewLeanMD(pes int, cells, kaway [3]int, atoms int) (*LeanMD, error) {
	cfg := md.Config{Cells: cells, KAway: kaway, AtomsPerCell: atoms, Steps: 1}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	l := &LeanMD{geo: md.NewGeometry(cfg), NumPEs: pes}
	l.cells = l.geo.NumCells()
	l.h = l.geo.ComputesPerCell()
	if l.cells < pes {
		return nil, fmt.Errorf("%w: %d cells for %d PEs", ErrConfig, l.cells, pes)
	}
	l.touching = make([][]int, l.cells)
	l.home = make([]int, l.cells*(1+l.h))
	for c := range l.cells {
		pe := actor.BlockMap(c, l.cells, pes)
		l.home[c] = pe
		for k := range l.h {
			comp := l.cells + c*l.h + k
			l.home[comp] = pe
			l.touching[c] = append(l.touching[c], comp)
			if k > 0 {
				partner := l.geo.CellID(l.geo.PartnerOf(l.geo.CellAt(c), k))
				l.touching[partner] = append(l.touching[partner], comp)
			}
		}
	}
	l.posBytes = proto.Size(&leanmd.Positions{Step: 100, Cell: int32(l.cells - 1), Coordinates: make([]byte, 8*3*atoms)})
	l.frcBytes = proto.Size(&leanmd.Forces{Step: 100, Slot: int32(l.geo.NumNeighbours() - 1), Forces: make([]byte, 8*3*atoms)})
	return l, nil
}

// WeakLeanMD is leanmd on pes PEs, a block of cells per PE (the cell
// grid is PEGrid(pes) times block), with the default k-away factors
// 2,2,1: the cell grid must have more cells than that along each axis.
func WeakLeanMD(pes int, block [3]int, atoms int) (*LeanMD, error) {
	return NewLeanMD(pes, times(PEGrid(pes), block), [3]int{2, 2, 1}, atoms)
}

func (l *LeanMD) Name() string          { return "leanmd" }
func (l *LeanMD) PEs() int              { return l.NumPEs }
func (l *LeanMD) Tasks() int            { return l.cells * (1 + l.h) }
func (l *LeanMD) Home(t int) int        { return l.home[t] }
func (l *LeanMD) StagesPerStep() uint64 { return 2 }

func (l *LeanMD) isCell(t int) bool { return t < l.cells }

// Stages: odd ones are the computes' positions, even ones the cells'
// forces.
func (l *LeanMD) Expect(t int, stage uint64) int {
	switch {
	case l.isCell(t) && stage%2 == 0:
		return l.geo.NumNeighbours()
	case !l.isCell(t) && stage%2 == 1:
		if (t-l.cells)%l.h == 0 {
			return 1
		}
		return 2
	}
	return 0
}

func (l *LeanMD) Sends(t int, stage uint64) []Send {
	if l.isCell(t) && stage%2 == 0 {
		out := make([]Send, 0, len(l.touching[t]))
		for _, comp := range l.touching[t] {
			s := Send{To: comp, Handler: 2, Annotation: commutative.CommutativeAnnotation(2), Stage: stage + 1, Bytes: l.posBytes, Multicast: len(out) > 0}
			if (comp-l.cells)%l.h == 0 {
				s.Handler, s.Annotation = 3, commutative.OrderedAnnotation()
			}
			out = append(out, s)
		}
		return out
	}
	if !l.isCell(t) && stage%2 == 1 {
		c, k := (t-l.cells)/l.h, (t-l.cells)%l.h
		n := l.geo.NumNeighbours()
		out := []Send{{To: c, Handler: 4, Annotation: commutative.CommutativeAnnotation(n), Stage: stage + 1, Bytes: l.frcBytes}}
		if k > 0 {
			partner := l.geo.CellID(l.geo.PartnerOf(l.geo.CellAt(c), k))
			out = append(out, Send{To: partner, Handler: 4, Annotation: commutative.CommutativeAnnotation(n), Stage: stage + 1, Bytes: l.frcBytes})
		}
		return out
	}
	return nil
}

// Lulesh is lulesh: a non-periodic grid of chunks (BlockMap), each cycle
// a min-reduction of the time step to the collection's reducer task
// (one task, on PE 1 mod PEs, taking every chunk's contribution as one
// commutative region), its result broadcast to every chunk (ordered),
// then nodal forces to the up to 26 neighbours and velocity gradients to
// the up to 6 face neighbours, each a commutative region.
type Lulesh struct {
	Chunks grid3
	Edge   int // elements along each axis of a chunk
	NumPEs int
	home   []int
	// neighbours[t] are a chunk's neighbours, faces[t] its face
	// neighbours (with the face's axis).
	neighbours [][]int
	shared     [][]int // nodes shared with each neighbour
	faces      [][]int
	reducer    int
	contrib    int
	timestep   int
	gradBytes  int
}

// NewLulesh returns lulesh on pes PEs with the given chunk grid and
// chunks of edge³ elements.
func NewLulesh(pes int, chunks [3]int, edge int) (*Lulesh, error) {
	l := &Lulesh{Chunks: chunks, Edge: edge, NumPEs: pes}
	n := l.Chunks.size()
	if n < pes || edge < 1 {
		return nil, fmt.Errorf("%w: %d chunks of edge %d for %d PEs", ErrConfig, n, edge, pes)
	}
	l.reducer = n
	l.home = make([]int, n+1)
	for lin := range n {
		l.home[lin] = actor.BlockMap(lin, n, pes)
	}
	l.home[n] = 1 % pes // the reducer of collection 1 (after main), round robin
	l.neighbours, l.faces, l.shared = make([][]int, n), make([][]int, n), make([][]int, n)
	for lin := range n {
		x, y, z := l.Chunks.at(lin)
		for dx := -1; dx <= 1; dx++ {
			for dy := -1; dy <= 1; dy++ {
				for dz := -1; dz <= 1; dz++ {
					nx, ny, nz := x+dx, y+dy, z+dz
					if (dx == 0 && dy == 0 && dz == 0) || nx < 0 || ny < 0 || nz < 0 || nx >= chunks[0] || ny >= chunks[1] || nz >= chunks[2] {
						continue
					}
					other := l.Chunks.lin(nx, ny, nz)
					l.neighbours[lin] = append(l.neighbours[lin], other)
					// Nodes shared: (edge+1) along an axis where the
					// offset is 0, 1 where it is not.
					nodes := 1
					for _, d := range []int{dx, dy, dz} {
						if d == 0 {
							nodes *= edge + 1
						}
					}
					l.shared[lin] = append(l.shared[lin], nodes)
					if abs(dx)+abs(dy)+abs(dz) == 1 {
						l.faces[lin] = append(l.faces[lin], other)
					}
				}
			}
		}
	}
	// A contribution (the element, the reducer's name, the callback, two
	// floats) and the result (the reducer, two floats, the number, the
	// contributors), as the runtime encodes them: about 64 and 48 bytes.
	l.contrib, l.timestep = 64, 48
	l.gradBytes = plainSize(&lulesh.FaceGradients{Key: 100, Face: 5, Values: make([]float64, edge*edge)})
	return l, nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// WeakLulesh is lulesh on pes PEs, a block of chunks of edge³ elements
// per PE (the chunk grid is PEGrid(pes) times block).
func WeakLulesh(pes int, block [3]int, edge int) (*Lulesh, error) {
	return NewLulesh(pes, times(PEGrid(pes), block), edge)
}

func (l *Lulesh) Name() string          { return "lulesh" }
func (l *Lulesh) PEs() int              { return l.NumPEs }
func (l *Lulesh) Tasks() int            { return l.Chunks.size() + 1 }
func (l *Lulesh) Home(t int) int        { return l.home[t] }
func (l *Lulesh) StagesPerStep() uint64 { return 4 }

// Stages of cycle c: 4c+1 the reducer's contributions, 4c+2 the chunks'
// time step, 4c+3 their forces, 4c+4 their gradients.
func (l *Lulesh) Expect(t int, stage uint64) int {
	phase := stage % 4
	if t == l.reducer {
		if phase == 1 {
			return l.Chunks.size()
		}
		return 0
	}
	switch phase {
	case 2:
		return 1
	case 3:
		return len(l.neighbours[t])
	case 0:
		if stage > 0 {
			return len(l.faces[t])
		}
	}
	return 0
}

func (l *Lulesh) Sends(t int, stage uint64) []Send {
	phase := stage % 4
	if t == l.reducer {
		if phase != 1 {
			return nil
		}
		out := make([]Send, l.Chunks.size())
		for c := range out {
			out[c] = Send{To: c, Handler: 2, Annotation: commutative.OrderedAnnotation(), Stage: stage + 1, Bytes: l.timestep}
		}
		return out
	}
	switch phase {
	case 0:
		return []Send{{To: l.reducer, Handler: 1, Annotation: commutative.CommutativeAnnotation(l.Chunks.size()), Stage: stage + 1, Bytes: l.contrib}}
	case 2:
		out := make([]Send, len(l.neighbours[t]))
		for i, nb := range l.neighbours[t] {
			size := plainSize(&lulesh.SharedNodes{Key: 100, FromX: 1, FromY: 1, FromZ: 1, Values: make([]float64, 3*l.shared[t][i])})
			out[i] = Send{To: nb, Handler: 10 + uint32(len(l.neighbours[nb])), Annotation: commutative.CommutativeAnnotation(len(l.neighbours[nb])), Stage: stage + 1, Bytes: size}
		}
		return out
	case 3:
		out := make([]Send, len(l.faces[t]))
		for i, nb := range l.faces[t] {
			out[i] = Send{To: nb, Handler: 40 + uint32(len(l.faces[nb])), Annotation: commutative.CommutativeAnnotation(len(l.faces[nb])), Stage: stage + 1, Bytes: l.gradBytes}
		}
		return out
	}
	return nil
}

// plainSize is the size of m, a plain Go message, as the runtime's codec
// encodes it.
func plainSize[M any](m *M) int {
	c, err := actor.CodecOf[*M]()
	if err != nil {
		panic(err)
	}
	b, err := c.Append(nil, m)
	if err != nil {
		panic(err)
	}
	return len(b)
}
