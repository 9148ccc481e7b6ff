package kernel

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. A run that returns one of them has produced a state
// that the physics cannot continue from; the reference aborts there.
var (
	// ErrNegativeVolume reports an element whose volume became zero or
	// negative (the mesh tangled).
	ErrNegativeVolume = errors.New("kernel: non-positive element volume")
	// ErrExcessiveQ reports an artificial viscosity above QStop.
	ErrExcessiveQ = errors.New("kernel: artificial viscosity above qstop")
	// ErrBadChunk reports a chunk that does not fit in its global mesh.
	ErrBadChunk = errors.New("kernel: invalid chunk")
)

// Problem constants of the Sedov problem as LULESH 2.0 defines them.
const (
	meshExtent         = 1.125      // the global mesh spans [0, meshExtent]³
	originEnergyAt45   = 3.948746e7 // energy deposited in element 0 of a 45³ mesh
	defaultStopTime    = 1.0e-2
	defaultDtMax       = 1.0e-2
	dtGrowthLowerBound = 1.1
	dtGrowthUpperBound = 1.2
	noConstraint       = 1.0e20 // value of a time constraint no element limits
)

// Chunk places a box of elements in the global N³ mesh. Element (i, j, k)
// of the chunk is element (Offset[0]+i, Offset[1]+j, Offset[2]+k) of the
// global mesh; x varies fastest in every index space of the package.
type Chunk struct {
	// MeshSize is N, the number of elements along each edge of the
	// global mesh.
	MeshSize int
	// Offset is the global (x, y, z) position of the chunk's first element.
	Offset [3]int
	// Size is the chunk's element count along x, y and z.
	Size [3]int
}

// WholeMesh is the chunk that covers a whole n³ mesh: the serial kernel.
func WholeMesh(n int) Chunk {
	return Chunk{MeshSize: n, Size: [3]int{n, n, n}}
}

func (c Chunk) validate() error {
	if c.MeshSize < 1 {
		return fmt.Errorf("%w: mesh size %d", ErrBadChunk, c.MeshSize)
	}
	for axis := range 3 {
		if c.Size[axis] < 1 || c.Offset[axis] < 0 || c.Offset[axis]+c.Size[axis] > c.MeshSize {
			return fmt.Errorf("%w: axis %d offset %d size %d in mesh %d",
				ErrBadChunk, axis, c.Offset[axis], c.Size[axis], c.MeshSize)
		}
	}
	return nil
}

// onSymmetryPlane says whether the chunk's low face along axis lies on the
// global symmetry plane (coordinate 0).
func (c Chunk) onSymmetryPlane(axis int) bool { return c.Offset[axis] == 0 }

// onFreeSurface says whether the chunk's high face along axis is the
// global mesh's free surface.
func (c Chunk) onFreeSurface(axis int) bool { return c.Offset[axis]+c.Size[axis] == c.MeshSize }

// RegionOptions shape the material regions the way the reference's -r, -b
// and -c options do. Regions change no result bit; they change the work
// done in the equation of state (expensive regions evaluate it several
// times), so they matter when comparing speed with the reference.
type RegionOptions struct {
	// Count is the number of material regions (the reference's -r, default 11).
	Count int
	// Balance weights region sizes by (region+1)^Balance (-b, default 1).
	Balance int
	// Cost multiplies the EOS repetitions of expensive regions (-c, default 1).
	Cost int
	// Seed seeds the region layout; the reference seeds with its MPI rank.
	Seed uint32
}

// ReferenceRegions are the reference's default region options.
func ReferenceRegions() RegionOptions {
	return RegionOptions{Count: 11, Balance: 1, Cost: 1}
}

// Config is everything NewDomain needs.
type Config struct {
	Chunk   Chunk
	Regions RegionOptions
}

// Domain is the state of one chunk of the Lagrangian mesh: nodes
// (positions, velocities, accelerations, forces, masses) and elements
// (energy, pressure, viscosity, volumes, gradients), plus the time-step
// state that every chunk of a run holds identically.
//
// A Domain is not safe for concurrent use; one task owns it.
type Domain struct {
	chunk Chunk

	// element counts along x, y, z, and node counts (one more each).
	elemsX, elemsY, elemsZ int
	nodesX, nodesY, nodesZ int
	numElem, numNode       int

	// Node-centred fields, indexed by local node.
	x, y, z    []float64 // position
	xd, yd, zd []float64 // velocity
	xdd, ydd   []float64 // acceleration
	zdd        []float64
	fx, fy, fz []float64 // force
	nodalMass  []float64

	// Nodes on global symmetry planes (normal acceleration zeroed).
	symmetryX, symmetryY, symmetryZ []int32

	// Element-centred fields, indexed by local element.
	nodelist []int32 // 8 nodes per element

	// Face neighbours for the monotonic Q limiter: an index into the
	// matching gradient array. It names the neighbour element, a ghost
	// slot (filled by the face exchange), the element itself (symmetry
	// plane) or the array's last slot, which always holds 0 (free surface).
	xiMinus, xiPlus     []int32
	etaMinus, etaPlus   []int32
	zetaMinus, zetaPlus []int32

	e, p, q  []float64 // energy, pressure, artificial viscosity
	ql, qq   []float64 // linear and quadratic terms of q
	v, volo  []float64 // relative volume, reference volume
	vnew     []float64 // relative volume at the new time
	delv     []float64 // vnew - v
	vdov     []float64 // volume derivative over volume
	arealg   []float64 // characteristic length
	ss       []float64 // sound speed
	elemMass []float64

	// Monotonic Q gradients. delvXi has numElem entries, then the ghost
	// slots of the x-minus and x-plus faces (elemsY·elemsZ each), then one
	// zero slot; delvEta and delvZeta likewise for y and z faces.
	delvXi, delvEta, delvZeta []float64
	delxXi, delxEta, delxZeta []float64

	// Exchange bookkeeping: shared nodes per neighbour direction (see
	// directionSlot), their union, and the elements on each face.
	sharedNodes     [27][]int32
	sharedNodeUnion []int32
	sumScratch      []float64
	faceElements    [6][]int32

	// Material regions and the EOS repetitions of each.
	regions     [][]int32
	regionReps  []int
	vnewClamped []float64
	eos         eosScratch

	// Physical parameters (the reference's values; see newParameters).
	params parameters

	// Time-step state: identical in every chunk of a run.
	time, deltaTime float64
	cycle           int
	dtCourant       float64
	dtHydro         float64
}

// parameters are the material and numerical constants of the problem.
// They are fields, not Go constants, so that products of two of them are
// rounded at run time exactly as the reference computes them.
type parameters struct {
	eCut, pCut, qCut, vCut, uCut float64
	hourglassCoefficient         float64
	qStop                        float64
	monoqMaxSlope                float64
	monoqLimiterMult             float64
	qlcMonoq, qqcMonoq           float64
	qqc                          float64
	eosVMax, eosVMin             float64
	pMin, eMin                   float64
	dvovMax                      float64
	refDensity                   float64
	stopTime, dtMax              float64
	dtMultLower, dtMultUpper     float64
}

func newParameters() parameters {
	return parameters{
		eCut:                 1.0e-7,
		pCut:                 1.0e-7,
		qCut:                 1.0e-7,
		vCut:                 1.0e-10,
		uCut:                 1.0e-7,
		hourglassCoefficient: 3.0,
		qStop:                1.0e12,
		monoqMaxSlope:        1.0,
		monoqLimiterMult:     2.0,
		qlcMonoq:             0.5,
		qqcMonoq:             2.0 / 3.0,
		qqc:                  2.0,
		eosVMax:              1.0e9,
		eosVMin:              1.0e-9,
		pMin:                 0,
		eMin:                 -1.0e15,
		dvovMax:              0.1,
		refDensity:           1.0,
		stopTime:             defaultStopTime,
		dtMax:                defaultDtMax,
		dtMultLower:          dtGrowthLowerBound,
		dtMultUpper:          dtGrowthUpperBound,
	}
}

// NewDomain builds the chunk's part of the Sedov problem: the mesh, the
// boundary conditions, the material regions, the element volumes and
// masses, the chunk's own contribution to the nodal masses (a distributed
// run sums shared nodes' masses across chunks before the first cycle), the
// deposited energy and the initial time step.
func NewDomain(cfg Config) (*Domain, error) {
	c := cfg.Chunk
	if err := c.validate(); err != nil {
		return nil, err
	}
	d := &Domain{chunk: c, params: newParameters()}
	d.elemsX, d.elemsY, d.elemsZ = c.Size[0], c.Size[1], c.Size[2]
	d.nodesX, d.nodesY, d.nodesZ = d.elemsX+1, d.elemsY+1, d.elemsZ+1
	d.numElem = d.elemsX * d.elemsY * d.elemsZ
	d.numNode = d.nodesX * d.nodesY * d.nodesZ
	d.allocate()
	d.buildMesh()
	d.buildSymmetryPlanes()
	d.buildFaceNeighbours()
	if err := d.buildRegions(cfg.Regions); err != nil {
		return nil, err
	}
	d.initialiseFields()
	d.buildSharedNodes()
	for _, f := range Faces() {
		d.faceElements[f] = d.FaceElements(f)
	}
	return d, nil
}

// NewSerialDomain is the whole n³ mesh with the reference's default regions.
func NewSerialDomain(n int) (*Domain, error) {
	return NewDomain(Config{Chunk: WholeMesh(n), Regions: ReferenceRegions()})
}

func (d *Domain) allocate() {
	nn, ne := d.numNode, d.numElem
	nodeFields := make([]float64, 13*nn)
	next := func(n int) []float64 {
		s := nodeFields[:n:n]
		nodeFields = nodeFields[n:]
		return s
	}
	d.x, d.y, d.z = next(nn), next(nn), next(nn)
	d.xd, d.yd, d.zd = next(nn), next(nn), next(nn)
	d.xdd, d.ydd, d.zdd = next(nn), next(nn), next(nn)
	d.fx, d.fy, d.fz = next(nn), next(nn), next(nn)
	d.nodalMass = next(nn)

	d.nodelist = make([]int32, 8*ne)
	for _, s := range []*[]int32{&d.xiMinus, &d.xiPlus, &d.etaMinus, &d.etaPlus, &d.zetaMinus, &d.zetaPlus} {
		*s = make([]int32, ne)
	}
	for _, s := range []*[]float64{&d.e, &d.p, &d.q, &d.ql, &d.qq, &d.v, &d.volo, &d.vnew,
		&d.delv, &d.vdov, &d.arealg, &d.ss, &d.elemMass, &d.vnewClamped,
		&d.delxXi, &d.delxEta, &d.delxZeta} {
		*s = make([]float64, ne)
	}
	d.delvXi = make([]float64, ne+2*d.elemsY*d.elemsZ+1)
	d.delvEta = make([]float64, ne+2*d.elemsX*d.elemsZ+1)
	d.delvZeta = make([]float64, ne+2*d.elemsX*d.elemsY+1)
	d.eos = newEOSScratch(ne)
}

func (d *Domain) nodeIndex(i, j, k int) int { return (k*d.nodesY+j)*d.nodesX + i }
func (d *Domain) elemIndex(i, j, k int) int { return (k*d.elemsY+j)*d.elemsX + i }

// buildMesh places the nodes on the uniform global lattice and connects
// each hexahedron to its 8 corners (bottom face counter-clockwise, then
// the top face).
func (d *Domain) buildMesh() {
	n := float64(d.chunk.MeshSize)
	ox, oy, oz := d.chunk.Offset[0], d.chunk.Offset[1], d.chunk.Offset[2]
	node := 0
	for k := range d.nodesZ {
		zc := meshExtent * float64(oz+k) / n
		for j := range d.nodesY {
			yc := meshExtent * float64(oy+j) / n
			for i := range d.nodesX {
				d.x[node] = meshExtent * float64(ox+i) / n
				d.y[node] = yc
				d.z[node] = zc
				node++
			}
		}
	}
	plane := d.nodesX * d.nodesY
	for k := range d.elemsZ {
		for j := range d.elemsY {
			for i := range d.elemsX {
				base := d.nodeIndex(i, j, k)
				nl := d.nodelist[8*d.elemIndex(i, j, k):][:8]
				nl[0] = int32(base)
				nl[1] = int32(base + 1)
				nl[2] = int32(base + d.nodesX + 1)
				nl[3] = int32(base + d.nodesX)
				nl[4] = int32(base + plane)
				nl[5] = int32(base + plane + 1)
				nl[6] = int32(base + plane + d.nodesX + 1)
				nl[7] = int32(base + plane + d.nodesX)
			}
		}
	}
}

func (d *Domain) buildSymmetryPlanes() {
	if d.chunk.onSymmetryPlane(0) {
		for k := range d.nodesZ {
			for j := range d.nodesY {
				d.symmetryX = append(d.symmetryX, int32(d.nodeIndex(0, j, k)))
			}
		}
	}
	if d.chunk.onSymmetryPlane(1) {
		for k := range d.nodesZ {
			for i := range d.nodesX {
				d.symmetryY = append(d.symmetryY, int32(d.nodeIndex(i, 0, k)))
			}
		}
	}
	if d.chunk.onSymmetryPlane(2) {
		for j := range d.nodesY {
			for i := range d.nodesX {
				d.symmetryZ = append(d.symmetryZ, int32(d.nodeIndex(i, j, 0)))
			}
		}
	}
}

// buildFaceNeighbours fills the limiter's neighbour indices. On a chunk
// face the neighbour is, by the face's kind: the element itself on a
// symmetry plane, the zero slot on a free surface, and otherwise the ghost
// slot that the face exchange fills.
func (d *Domain) buildFaceNeighbours() {
	ne := d.numElem
	sx, sy, sz := d.elemsX, d.elemsY, d.elemsZ
	xiZero, etaZero, zetaZero := len(d.delvXi)-1, len(d.delvEta)-1, len(d.delvZeta)-1
	boundary := func(axis int, self, zero, ghostBase, faceSlot int, low bool) int32 {
		switch {
		case low && d.chunk.onSymmetryPlane(axis):
			return int32(self)
		case !low && d.chunk.onFreeSurface(axis):
			return int32(zero)
		default:
			return int32(ghostBase + faceSlot)
		}
	}
	for k := range sz {
		for j := range sy {
			for i := range sx {
				el := d.elemIndex(i, j, k)
				xSlot, ySlot, zSlot := k*sy+j, k*sx+i, j*sx+i
				if i > 0 {
					d.xiMinus[el] = int32(el - 1)
				} else {
					d.xiMinus[el] = boundary(0, el, xiZero, ne, xSlot, true)
				}
				if i < sx-1 {
					d.xiPlus[el] = int32(el + 1)
				} else {
					d.xiPlus[el] = boundary(0, el, xiZero, ne+sy*sz, xSlot, false)
				}
				if j > 0 {
					d.etaMinus[el] = int32(el - sx)
				} else {
					d.etaMinus[el] = boundary(1, el, etaZero, ne, ySlot, true)
				}
				if j < sy-1 {
					d.etaPlus[el] = int32(el + sx)
				} else {
					d.etaPlus[el] = boundary(1, el, etaZero, ne+sx*sz, ySlot, false)
				}
				if k > 0 {
					d.zetaMinus[el] = int32(el - sx*sy)
				} else {
					d.zetaMinus[el] = boundary(2, el, zetaZero, ne, zSlot, true)
				}
				if k < sz-1 {
					d.zetaPlus[el] = int32(el + sx*sy)
				} else {
					d.zetaPlus[el] = boundary(2, el, zetaZero, ne+sx*sy, zSlot, false)
				}
			}
		}
	}
}

// initialiseFields sets the Sedov initial state: unit relative volumes,
// element masses equal to initial volumes, the chunk's share of nodal
// masses, the energy spike in the global origin element, and the
// analytic first time step (which every chunk computes alike).
func (d *Domain) initialiseFields() {
	var xs, ys, zs [8]float64
	for el := range d.numElem {
		nl := d.nodelist[8*el:][:8]
		for c := range 8 {
			xs[c], ys[c], zs[c] = d.x[nl[c]], d.y[nl[c]], d.z[nl[c]]
		}
		volume := elementVolume(&xs, &ys, &zs)
		d.v[el] = 1
		d.volo[el] = volume
		d.elemMass[el] = volume
		for c := range 8 {
			d.nodalMass[nl[c]] += volume / 8.0
		}
	}
	energy := originEnergy(d.chunk.MeshSize)
	if d.chunk.Offset == [3]int{} {
		d.e[0] = energy
	}
	d.deltaTime = 0.5 * math.Cbrt(originElementVolume(d.chunk.MeshSize)) / math.Sqrt(2.0*energy)
	d.dtCourant = noConstraint
	d.dtHydro = noConstraint
}

// originEnergy is the energy deposited in the origin element of an n³ mesh.
func originEnergy(n int) float64 {
	ebase := originEnergyAt45
	scale := float64(n) / 45.0
	return ebase * scale * scale * scale
}

// originElementVolume is the initial volume of global element 0, which a
// chunk away from the origin needs for the first time step.
func originElementVolume(n int) float64 {
	h := meshExtent * 1 / float64(n)
	xs := [8]float64{0, h, h, 0, 0, h, h, 0}
	ys := [8]float64{0, 0, h, h, 0, 0, h, h}
	zs := [8]float64{0, 0, 0, 0, h, h, h, h}
	return elementVolume(&xs, &ys, &zs)
}
