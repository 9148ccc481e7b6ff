package stencil3d

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The numerical kernel, as plain functions over one chunk's array, shared by
// the parallel app and the serial reference solver (serial.go).

// Block is the extent of a chunk's interior in points, in x, y and z.
type Block struct{ X, Y, Z int }

func (b Block) String() string { return fmt.Sprintf("%dx%dx%d", b.X, b.Y, b.Z) }

// extent returns the interior extent along axis 0 (x), 1 (y) or 2 (z).
func (b Block) extent(axis int) int {
	switch axis {
	case 0:
		return b.X
	case 1:
		return b.Y
	}
	return b.Z
}

// Len returns the number of doubles of a chunk's array, halo included:
// (X+2)(Y+2)(Z+2).
func (b Block) Len() int { return (b.X + 2) * (b.Y + 2) * (b.Z + 2) }

// Interior returns the number of interior points, X*Y*Z.
func (b Block) Interior() int { return b.X * b.Y * b.Z }

// At returns the position of local point (i, j, k) in a chunk's array; each
// coordinate runs over 0..B+1, i fastest, then j, then k.
func (b Block) At(i, j, k int) int { return i + (b.X+2)*(j+(b.Y+2)*k) }

// stride returns the distance in the array between neighbours along axis.
func (b Block) stride(axis int) int {
	switch axis {
	case 0:
		return 1
	case 1:
		return b.X + 2
	}
	return (b.X + 2) * (b.Y + 2)
}

// Side names one face of a chunk: the halo layer on that side, or the
// neighbour across it.
type Side int

// The six sides, in the order in which a chunk sends its faces.
const (
	XLow  Side = iota // halo i == 0, neighbour at x-1
	XHigh             // halo i == BX+1, neighbour at x+1
	YLow              // halo j == 0, neighbour at y-1
	YHigh             // halo j == BY+1, neighbour at y+1
	ZLow              // halo k == 0, neighbour at z-1
	ZHigh             // halo k == BZ+1, neighbour at z+1
)

// NumSides is the number of faces of a chunk, and of messages of one
// iteration's ghost exchange.
const NumSides = 6

func (s Side) String() string {
	if s < 0 || s >= NumSides {
		return fmt.Sprintf("Side(%d)", int(s))
	}
	return [...]string{"-x", "+x", "-y", "+y", "-z", "+z"}[s]
}

// Axis returns 0, 1 or 2 for the x, y or z sides.
func (s Side) Axis() int { return int(s) / 2 }

// Step returns -1 for a low side, +1 for a high one: the offset of the
// neighbour across s in the chunk grid.
func (s Side) Step() int {
	if s%2 == 0 {
		return -1
	}
	return 1
}

// Opposite returns the side facing s: the halo in which the neighbour
// across s stores the face this chunk sends it.
func (s Side) Opposite() Side { return s ^ 1 }

// boundaryValue is the temperature of the heated interior layers.
const boundaryValue = 255.0

// oneSeventh is the weight of each of the seven points of the stencil, the
// literal of the reference implementation.
const oneSeventh = 0.14285714285714285714

// ApplyBoundary sets every interior point of t with i == 1, j == 1 or
// k == 1 to 255.0 (each chunk has three heated faces).
func ApplyBoundary(b Block, t []float64) {
	checkLen(b, t)
	for k := 1; k <= b.Z; k++ {
		for j := 1; j <= b.Y; j++ {
			if j == 1 || k == 1 {
				row := b.At(1, j, k)
				for i := range b.X {
					t[row+i] = boundaryValue
				}
				continue
			}
			t[b.At(1, j, k)] = boundaryValue
		}
	}
}

// Sweep writes into next the seven-point average of every interior point
// of t, summing x-, x+, y-, y+, z-, z+ and the centre in exactly that order.
// It reads the face halos of t (not its edges or corners) and writes only
// the interior of next.
func Sweep(b Block, t, next []float64) {
	checkLen(b, t)
	checkLen(b, next)
	sy, sz := b.stride(1), b.stride(2)
	n := b.X
	for k := 1; k <= b.Z; k++ {
		for j := 1; j <= b.Y; j++ {
			row := b.At(1, j, k)
			sweepRow(next[row:row+n], t[row-1:row+n+1], t[row-sy:row-sy+n], t[row+sy:row+sy+n],
				t[row-sz:row-sz+n], t[row+sz:row+sz+n])
		}
	}
}

// sweepRowGo computes one row of a sweep: out[i] is the average of centre
// row c (which holds one point on either side: c[i+1] is the centre of
// out[i]) and the rows ym, yp, zm, zp, summed as in Sweep. All rows are
// resliced to len(out) so that the compiler drops the bounds checks of
// the loop. It is the definition of a row: sweepRow, which the sweeps
// call, is this function on architectures without a vector version
// (kernel_other.go) and must equal it bit for bit on the others
// (kernel_amd64.go, which also runs it on the tail of a row).
func sweepRowGo(out, c, ym, yp, zm, zp []float64) {
	n := len(out)
	c = c[:n+2]
	ym, yp, zm, zp = ym[:n], yp[:n], zm[:n], zp[:n]
	xm, x0, xp := c[0:n], c[1:n+1], c[2:n+2]
	for i := range out {
		out[i] = (xm[i] + xp[i] + ym[i] + yp[i] + zm[i] + zp[i] + x0[i]) * oneSeventh
	}
}

// Step is one iteration of a chunk after its ghost exchange, fused into one
// pass over its array and done in place. Its result is bitwise that of
//
//	StoreFaceBytes(b, t, s, halos[s]) for each side s
//	Sweep(b, t, next)
//	clearHalo(b, next)
//	ApplyBoundary(b, next)
//	faces[s] = AppendFaceBytes(b, next, s, faces[s][:0]) for each side s
//	copy(t, next)
//
// in t and faces, but each array line is touched while it is in the
// cache, and a chunk needs one array, not two. The new values of a layer
// normal to z go into one of the two layers of layers, which must hold
// 2*StepLayers(b) points (any values: Step writes every point of them it
// copies); layer k is copied into t once layer k+1 is computed, which was
// the last to read t's old layer k. The copy writes lines that the sweep
// has just read, so in memory the array costs a read and a write per
// point where a second array would cost a read, a line fill and a write.
// A received face goes into t's halo just before the row that reads it,
// and the outgoing faces are taken from the new rows as they are computed
// (the x faces especially, one point per row, would otherwise cost a cache
// miss per point). The points with i == 1, j == 1 or k == 1 are set to
// the boundary value rather than computed and overwritten, so the low
// halos, which only they read, are not stored at all. halos[s] must hold
// 8*b.FaceLen(s) bytes, or be nil if that face is already in t's halo (the
// same as StoreFaceBytes done on t before); faces may be nil (no faces
// taken), otherwise faces[s] is overwritten with a buffer of that size
// (reusing its capacity).
func Step(b Block, t, layers []float64, halos *[NumSides][]byte, faces *[NumSides][]byte) error {
	checkLen(b, t)
	sy, sz := b.stride(1), b.stride(2)
	if len(layers) != 2*sz {
		return fmt.Errorf("stencil3d: %d points of layers for chunk %v, want %d", len(layers), b, 2*sz)
	}
	for s := range Side(NumSides) {
		if halos[s] != nil && len(halos[s]) != 8*b.FaceLen(s) {
			return fmt.Errorf("stencil3d: face %v of chunk %v has %d bytes, want %d (8 per point)", s, b, len(halos[s]), 8*b.FaceLen(s))
		}
		if faces != nil {
			faces[s] = slices.Grow(faces[s][:0], 8*b.FaceLen(s))[:8*b.FaceLen(s)]
		}
	}
	X, Y, Z := b.X, b.Y, b.Z
	layer := func(k int) []float64 { return layers[(k&1)*sz : (k&1)*sz+sz] }
	for k := 1; k <= Z; k++ {
		if h := halos[ZHigh]; k == Z && Z > 1 && h != nil {
			// The +z halo, read by the rows of layer Z.
			for j := 2; j <= Y; j++ {
				decodeRow(t[b.At(1, j, Z+1):b.At(1, j, Z+1)+X], h[8*(j-1)*X:8*j*X])
			}
		}
		// The new layer k, its halo cleared: positions in it are those in
		// t less k*sz.
		newK := layer(k)
		clear(newK[:X+2])
		clear(newK[(Y+1)*sy : (Y+2)*sy])
		for j := 1; j <= Y; j++ {
			row := b.At(1, j, k)
			at := row - k*sz
			out := newK[at : at+X]
			if j == 1 || k == 1 {
				for i := range out {
					out[i] = boundaryValue
				}
			} else {
				if j == Y && halos[YHigh] != nil {
					// The +y halo row of layer k.
					decodeRow(t[row+sy:row+sy+X], halos[YHigh][8*(k-1)*X:8*k*X])
				}
				if halos[XHigh] != nil {
					t[row+X] = decodeAt(halos[XHigh], (j-1)+(k-1)*Y)
				}
				sweepRow(out, t[row-1:row+X+1], t[row-sy:row-sy+X], t[row+sy:row+sy+X], t[row-sz:row-sz+X], t[row+sz:row+sz+X])
				out[0] = boundaryValue
			}
			newK[at-1], newK[at+X] = 0, 0
			if faces == nil {
				continue
			}
			n := (j - 1) + (k-1)*Y
			encodeAt(faces[XLow], n, out[0])
			encodeAt(faces[XHigh], n, out[X-1])
			if j == 1 {
				encodeRow(faces[YLow][8*(k-1)*X:8*k*X], out)
			}
			if j == Y {
				encodeRow(faces[YHigh][8*(k-1)*X:8*k*X], out)
			}
			if k == 1 {
				encodeRow(faces[ZLow][8*(j-1)*X:8*j*X], out)
			}
			if k == Z {
				encodeRow(faces[ZHigh][8*(j-1)*X:8*j*X], out)
			}
		}
		if k > 1 {
			copy(t[(k-1)*sz:k*sz], layer(k-1))
		}
	}
	copy(t[Z*sz:(Z+1)*sz], layer(Z))
	clear(t[:sz])
	clear(t[(Z+1)*sz : (Z+2)*sz])
	return nil
}

// StepLayers returns the points of one of the two layers Step keeps:
// (X+2)(Y+2).
func StepLayers(b Block) int { return b.stride(2) }

// decodeRow and encodeRow convert between points and their wire form, 8
// little-endian bytes each; decodeAt and encodeAt do it for point n.
//
// The loops advance both slices by what they took, a form in which the
// compiler proves every index in range (no bounds checks in the loop,
// go build -gcflags=-d=ssa/check_bce); the reslicing before them panics
// on a short src or dst.
func decodeRow(dst []float64, src []byte) {
	src = src[:8*len(dst)]
	for len(dst) > 0 && len(src) >= 8 {
		dst[0] = math.Float64frombits(binary.LittleEndian.Uint64(src))
		dst, src = dst[1:], src[8:]
	}
}

func encodeRow(dst []byte, src []float64) {
	dst = dst[:8*len(src)]
	for len(src) > 0 && len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, math.Float64bits(src[0]))
		dst, src = dst[8:], src[1:]
	}
}

func decodeAt(src []byte, n int) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(src[8*n : 8*n+8]))
}

func encodeAt(dst []byte, n int, v float64) {
	binary.LittleEndian.PutUint64(dst[8*n:8*n+8], math.Float64bits(v))
}

// FaceLen returns the number of points of a face on side s: the product of
// the interior extents along the two other axes.
func (b Block) FaceLen(s Side) int {
	u, v := faceAxes(s.Axis())
	return b.extent(u) * b.extent(v)
}

// faceAxes returns the two axes spanning a face normal to axis, the faster
// one first.
func faceAxes(axis int) (u, v int) {
	switch axis {
	case 0:
		return 1, 2
	case 1:
		return 0, 2
	}
	return 0, 1
}

// layerGeometry describes the interior points of one layer of a chunk's
// array normal to an axis, in face order: rows along the faster of the
// two other axes (u), stacked along the slower one (v).
type layerGeometry struct {
	base           int // array position of the layer's first point
	uStride, uLen  int
	vStride, vRows int
}

func layerOf(b Block, s Side, layer int) layerGeometry {
	axis := s.Axis()
	u, v := faceAxes(axis)
	su, sv := b.stride(u), b.stride(v)
	return layerGeometry{
		base:    layer*b.stride(axis) + su + sv,
		uStride: su, uLen: b.extent(u),
		vStride: sv, vRows: b.extent(v),
	}
}

// visitLayer calls fn with the array position of every interior point of
// the layer normal to s's axis at local coordinate layer, in face order.
func visitLayer(b Block, s Side, layer int, fn func(n, pos int)) {
	g := layerOf(b, s, layer)
	n := 0
	for q := range g.vRows {
		for p := range g.uLen {
			fn(n, g.base+q*g.vStride+p*g.uStride)
			n++
		}
	}
}

// copyLayer copies between a face and a layer of a chunk's array, face to
// array if toArray, array to face otherwise; rows along x are contiguous.
func copyLayer(g layerGeometry, array, face []float64, toArray bool) {
	n := 0
	for q := range g.vRows {
		row := g.base + q*g.vStride
		if g.uStride == 1 {
			if toArray {
				copy(array[row:row+g.uLen], face[n:n+g.uLen])
			} else {
				copy(face[n:n+g.uLen], array[row:row+g.uLen])
			}
			n += g.uLen
			continue
		}
		for p := range g.uLen {
			if toArray {
				array[row+p*g.uStride] = face[n]
			} else {
				face[n] = array[row+p*g.uStride]
			}
			n++
		}
	}
}

// ExtractFace appends to dst and returns the interior boundary layer of t
// that goes to the neighbour across s: layer i == 1 for XLow, i == BX for
// XHigh, and likewise in y and z. The neighbour stores it with StoreFace on
// side s.Opposite().
func ExtractFace(b Block, t []float64, s Side, dst []float64) []float64 {
	checkLen(b, t)
	layer := 1
	if s.Step() > 0 {
		layer = b.extent(s.Axis())
	}
	out := append(dst, make([]float64, b.FaceLen(s))...)
	face := out[len(dst):]
	copyLayer(layerOf(b, s, layer), t, face, false)
	return out
}

// StoreFace writes face into the halo layer of t on side s: i == 0 for
// XLow, i == BX+1 for XHigh, and likewise in y and z. It reports an error if
// the face has the wrong number of points.
func StoreFace(b Block, t []float64, s Side, face []float64) error {
	checkLen(b, t)
	if len(face) != b.FaceLen(s) {
		return fmt.Errorf("stencil3d: face %v of chunk %v has %d points, want %d", s, b, len(face), b.FaceLen(s))
	}
	layer := 0
	if s.Step() > 0 {
		layer = b.extent(s.Axis()) + 1
	}
	copyLayer(layerOf(b, s, layer), t, face, true)
	return nil
}

// AppendFaceBytes appends to dst and returns the face ExtractFace would
// return, as 8 little-endian bytes per point (the bits of each value): the
// wire form of a face, written straight from the chunk's array.
func AppendFaceBytes(b Block, t []float64, s Side, dst []byte) []byte {
	checkLen(b, t)
	layer := 1
	if s.Step() > 0 {
		layer = b.extent(s.Axis())
	}
	g := layerOf(b, s, layer)
	start := len(dst)
	out := slices.Grow(dst, 8*b.FaceLen(s))[:start+8*b.FaceLen(s)]
	face := out[start:]
	for q := range g.vRows {
		row := g.base + q*g.vStride
		if g.uStride == 1 {
			for _, v := range t[row : row+g.uLen] {
				binary.LittleEndian.PutUint64(face, math.Float64bits(v))
				face = face[8:]
			}
			continue
		}
		for p := range g.uLen {
			binary.LittleEndian.PutUint64(face, math.Float64bits(t[row+p*g.uStride]))
			face = face[8:]
		}
	}
	return out
}

// StoreFaceBytes is StoreFace for a face in the wire form of
// AppendFaceBytes: it decodes the points straight into the halo on side s.
// It reports an error if the face has the wrong number of bytes.
func StoreFaceBytes(b Block, t []float64, s Side, face []byte) error {
	checkLen(b, t)
	if len(face) != 8*b.FaceLen(s) {
		return fmt.Errorf("stencil3d: face %v of chunk %v has %d bytes, want %d (8 per point)", s, b, len(face), 8*b.FaceLen(s))
	}
	layer := 0
	if s.Step() > 0 {
		layer = b.extent(s.Axis()) + 1
	}
	g := layerOf(b, s, layer)
	for q := range g.vRows {
		row := g.base + q*g.vStride
		if g.uStride == 1 {
			dst := t[row : row+g.uLen]
			for i := range dst {
				dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(face[8*i:]))
			}
			face = face[8*g.uLen:]
			continue
		}
		for p := range g.uLen {
			t[row+p*g.uStride] = math.Float64frombits(binary.LittleEndian.Uint64(face))
			face = face[8:]
		}
	}
	return nil
}

// ChunkResult is what a chunk reports after its last iteration.
type ChunkResult struct {
	// Sum is the sum of the interior values, added in k, j, i order with i
	// fastest, starting from 0.
	Sum float64
	// FNV1a is the 64-bit FNV-1a hash of the 8 little-endian bytes of each
	// interior value, in the same order.
	FNV1a uint64
}

// FNV-1a 64-bit parameters.
const (
	fnvOffsetBasis = 0xcbf29ce484222325
	fnvPrime       = 0x100000001b3
)

// fnv1aAppend continues an FNV-1a 64 hash over the 8 little-endian bytes
// of word.
func fnv1aAppend(hash, word uint64) uint64 {
	for range 8 {
		hash ^= word & 0xff
		hash *= fnvPrime
		word >>= 8
	}
	return hash
}

// Summarize returns the sum and FNV-1a hash of the interior of t.
func Summarize(b Block, t []float64) ChunkResult {
	checkLen(b, t)
	r := ChunkResult{FNV1a: fnvOffsetBasis}
	for k := 1; k <= b.Z; k++ {
		for j := 1; j <= b.Y; j++ {
			row := b.At(1, j, k)
			for _, v := range t[row : row+b.X] {
				r.Sum += v
				r.FNV1a = fnv1aAppend(r.FNV1a, math.Float64bits(v))
			}
		}
	}
	return r
}

// JobDigest combines the chunk hashes, given in linear index order, into
// one FNV-1a 64 hash over their 8 little-endian bytes each.
func JobDigest(hashes []uint64) uint64 {
	d := uint64(fnvOffsetBasis)
	for _, h := range hashes {
		d = fnv1aAppend(d, h)
	}
	return d
}

func checkLen(b Block, t []float64) {
	if len(t) != b.Len() {
		panic(fmt.Sprintf("stencil3d: array of %d doubles for chunk %v, want %d", len(t), b, b.Len()))
	}
}
