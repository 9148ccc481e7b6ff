package kernel

import "fmt"

// Direction points from a chunk to one of its up to 26 neighbours in the
// grid of chunks: each component is -1, 0 or +1 (x, y, z), not all zero.
type Direction [3]int

// Opposite is the direction back from the neighbour.
func (dir Direction) Opposite() Direction { return Direction{-dir[0], -dir[1], -dir[2]} }

// kind is 1 for a face neighbour, 2 for an edge and 3 for a corner.
func (dir Direction) kind() int {
	k := 0
	for _, c := range dir {
		if c != 0 {
			k++
		}
	}
	return k
}

// allDirections are the 26 neighbour directions and the chunk itself
// (the zero direction), ordered by z, then y, then x component. Adding
// the same offset to all chunk positions keeps this order, so the chunks
// that share a node all see its holders in the same (global) order.
var allDirections = func() []Direction {
	var dirs []Direction
	for dz := -1; dz <= 1; dz++ {
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				dirs = append(dirs, Direction{dx, dy, dz})
			}
		}
	}
	return dirs
}()

// HasNeighbour says whether another chunk of the mesh lies in direction
// dir, that is whether the chunk is not on the global boundary there.
func (d *Domain) HasNeighbour(dir Direction) bool {
	if dir == (Direction{}) {
		return false
	}
	for axis, c := range dir {
		if c < 0 && d.chunk.onSymmetryPlane(axis) || c > 0 && d.chunk.onFreeSurface(axis) {
			return false
		}
	}
	return true
}

// Neighbours lists the directions in which the chunk has a neighbour:
// faces, then edges, then corners, each group in z, y, x order.
func (d *Domain) Neighbours() []Direction {
	var out []Direction
	for kind := 1; kind <= 3; kind++ {
		for _, dir := range allDirections {
			if dir.kind() == kind && d.HasNeighbour(dir) {
				out = append(out, dir)
			}
		}
	}
	return out
}

// Chunk is the box of the global mesh the domain covers.
func (d *Domain) Chunk() Chunk { return d.chunk }

// directionSlot numbers the 27 directions 0..26.
func directionSlot(dir Direction) int { return (dir[2]+1)*9 + (dir[1]+1)*3 + dir[0] + 1 }

// SharedNodes lists the local indices of the nodes the chunk shares with
// its neighbour in direction dir (a face, an edge line or a corner node),
// in global z, y, x order: the neighbour lists the same nodes in the
// same order for dir.Opposite(). It is nil where there is no neighbour.
// The slice belongs to the domain: do not modify it.
func (d *Domain) SharedNodes(dir Direction) []int32 {
	for _, c := range dir {
		if c < -1 || c > 1 {
			panic(fmt.Sprintf("kernel: direction %v has a component outside -1..1", dir))
		}
	}
	return d.sharedNodes[directionSlot(dir)]
}

// buildSharedNodes lists the shared nodes of every neighbour, and their
// union.
func (d *Domain) buildSharedNodes() {
	extent := [3]int{d.nodesX, d.nodesY, d.nodesZ}
	isShared := make([]bool, d.numNode)
	for _, dir := range d.Neighbours() {
		var ranges [3][2]int
		for axis, c := range dir {
			switch c {
			case -1:
				ranges[axis] = [2]int{0, 1}
			case 0:
				ranges[axis] = [2]int{0, extent[axis]}
			case 1:
				ranges[axis] = [2]int{extent[axis] - 1, extent[axis]}
			}
		}
		var nodes []int32
		for k := ranges[2][0]; k < ranges[2][1]; k++ {
			for j := ranges[1][0]; j < ranges[1][1]; j++ {
				for i := ranges[0][0]; i < ranges[0][1]; i++ {
					n := d.nodeIndex(i, j, k)
					nodes = append(nodes, int32(n))
					isShared[n] = true
				}
			}
		}
		d.sharedNodes[directionSlot(dir)] = nodes
	}
	for n, shared := range isShared {
		if shared {
			d.sharedNodeUnion = append(d.sharedNodeUnion, int32(n))
		}
	}
}

// Forces are the nodal force arrays (x, y, z), indexed by local node:
// after NodalForcePhase they hold this chunk's contributions; the
// exchange adds the other chunks' before NodalMotionPhase.
func (d *Domain) Forces() (fx, fy, fz []float64) { return d.fx, d.fy, d.fz }

// NodalMass is the nodal mass array, indexed by local node: after
// NewDomain it holds this chunk's share; a distributed run sums shared
// nodes' masses across chunks once, before the first cycle.
func (d *Domain) NodalMass() []float64 { return d.nodalMass }

// SumSharedNodes replaces field's value on every shared node by the sum
// of all its holders' contributions: this chunk's own (field's current
// value) and, for each neighbour direction dir, received(dir)[i] for the
// node SharedNodes(dir)[i] (the neighbour's own value, before its sum).
// The terms of a node's sum are added in the global order of the chunks
// that hold it (z, then y, then x), so every chunk holding the node
// computes the same bits and shared nodes' positions and velocities need
// no synchronisation afterwards. Use it for the forces after
// NodalForcePhase and, once, for the nodal mass.
//
// received must return a slice of len(SharedNodes(dir)) for every
// direction in Neighbours; SumSharedNodes panics otherwise.
func (d *Domain) SumSharedNodes(field []float64, received func(Direction) []float64) {
	if d.sumScratch == nil {
		d.sumScratch = make([]float64, d.numNode)
	}
	own := d.sumScratch[:len(field)]
	for _, n := range d.sharedNodeUnion {
		own[n] = field[n]
		field[n] = 0
	}
	for _, dir := range allDirections {
		if dir == (Direction{}) {
			for _, n := range d.sharedNodeUnion {
				field[n] += own[n]
			}
			continue
		}
		nodes := d.sharedNodes[directionSlot(dir)]
		if nodes == nil {
			continue
		}
		values := received(dir)
		if len(values) != len(nodes) {
			panic(fmt.Sprintf("kernel: %d values received from direction %v, which shares %d nodes",
				len(values), dir, len(nodes)))
		}
		for i, n := range nodes {
			field[n] += values[i]
		}
	}
}

// PackSharedNodes appends field's values on SharedNodes(dir) to buf: what
// this chunk sends to its neighbour in direction dir.
func (d *Domain) PackSharedNodes(dir Direction, field []float64, buf []float64) []float64 {
	for _, n := range d.SharedNodes(dir) {
		buf = append(buf, field[n])
	}
	return buf
}

// Face is one of the six faces of a chunk.
type Face int

// The faces, by the axis they are normal to and their side.
const (
	XMinus Face = iota
	XPlus
	YMinus
	YPlus
	ZMinus
	ZPlus
)

// Faces lists the six faces.
func Faces() [6]Face { return [6]Face{XMinus, XPlus, YMinus, YPlus, ZMinus, ZPlus} }

func (f Face) axis() int  { return int(f) / 2 }
func (f Face) high() bool { return int(f)%2 == 1 }

// Direction points to the chunk across the face.
func (f Face) Direction() Direction {
	var dir Direction
	if f.high() {
		dir[f.axis()] = 1
	} else {
		dir[f.axis()] = -1
	}
	return dir
}

// Opposite is the same face seen from the chunk across it.
func (f Face) Opposite() Face { return f ^ 1 }

func (f Face) String() string {
	return [...]string{"x-", "x+", "y-", "y+", "z-", "z+"}[f]
}

// faceGradients returns the gradient array along the face's normal and
// the start of the face's ghost slots in it.
func (d *Domain) faceGradients(f Face) (gradient []float64, ghostStart, faceArea int) {
	switch f.axis() {
	case 0:
		gradient, faceArea = d.delvXi, d.elemsY*d.elemsZ
	case 1:
		gradient, faceArea = d.delvEta, d.elemsX*d.elemsZ
	default:
		gradient, faceArea = d.delvZeta, d.elemsX*d.elemsY
	}
	ghostStart = d.numElem
	if f.high() {
		ghostStart += faceArea
	}
	return gradient, ghostStart, faceArea
}

// FaceElements lists the local indices of the chunk's elements on face
// f, in the order of its ghost slots (the slower varying of the two other
// axes first, z before y before x). It allocates.
func (d *Domain) FaceElements(f Face) []int32 {
	lo := [3]int{}
	hi := [3]int{d.elemsX, d.elemsY, d.elemsZ}
	if f.high() {
		lo[f.axis()] = hi[f.axis()] - 1
	} else {
		hi[f.axis()] = 1
	}
	var elems []int32
	for k := lo[2]; k < hi[2]; k++ {
		for j := lo[1]; j < hi[1]; j++ {
			for i := lo[0]; i < hi[0]; i++ {
				elems = append(elems, int32(d.elemIndex(i, j, k)))
			}
		}
	}
	return elems
}

// PackFaceGradients appends to buf the velocity gradient along face f's
// normal (delv xi, eta or zeta) of the elements on f, in FaceElements
// order: what the neighbour across f copies into its GhostGradients(f.Opposite()).
func (d *Domain) PackFaceGradients(f Face, buf []float64) []float64 {
	gradient, _, _ := d.faceGradients(f)
	for _, el := range d.faceElements[f] {
		buf = append(buf, gradient[el])
	}
	return buf
}

// GhostGradients are the ghost slots of face f: the gradients of the
// neighbour's elements across f, in the neighbour's FaceElements order.
// Fill them after ElementGradientPhase and before ElementMaterialPhase.
// They are unused on a face without neighbour.
func (d *Domain) GhostGradients(f Face) []float64 {
	gradient, start, area := d.faceGradients(f)
	return gradient[start : start+area]
}

// Energies are the element energies, indexed by local element: element
// (i, j, k) of the chunk, x fastest, is at (k·Size[1]+j)·Size[0]+i.
// The slice belongs to the domain: do not modify it.
func (d *Domain) Energies() []float64 { return d.e[:d.numElem] }

// GlobalElement is the global index (x fastest, then y, then z) of local
// element el, for assembling whole-mesh results from chunks.
func (d *Domain) GlobalElement(el int) int {
	i, j, k := el%d.elemsX, el/d.elemsX%d.elemsY, el/(d.elemsX*d.elemsY)
	n := d.chunk.MeshSize
	return ((d.chunk.Offset[2]+k)*n+d.chunk.Offset[1]+j)*n + d.chunk.Offset[0] + i
}
