package kernel

import "math"

// Per-element geometry of a trilinear hexahedron. Corners are numbered
// 0-3 counter-clockwise on the bottom face and 4-7 above them. The
// arithmetic keeps the reference's operation order: results are meant to
// agree with it to the last bit wherever the algorithm allows.

// elementVolume is the volume of a hexahedron, as a sum of three triple
// products of edge and diagonal vectors.
func elementVolume(x, y, z *[8]float64) float64 {
	const twelfth = 1.0 / 12.0

	dx61, dy61, dz61 := x[6]-x[1], y[6]-y[1], z[6]-z[1]
	dx70, dy70, dz70 := x[7]-x[0], y[7]-y[0], z[7]-z[0]
	dx63, dy63, dz63 := x[6]-x[3], y[6]-y[3], z[6]-z[3]
	dx20, dy20, dz20 := x[2]-x[0], y[2]-y[0], z[2]-z[0]
	dx50, dy50, dz50 := x[5]-x[0], y[5]-y[0], z[5]-z[0]
	dx64, dy64, dz64 := x[6]-x[4], y[6]-y[4], z[6]-z[4]
	dx31, dy31, dz31 := x[3]-x[1], y[3]-y[1], z[3]-z[1]
	dx72, dy72, dz72 := x[7]-x[2], y[7]-y[2], z[7]-z[2]
	dx43, dy43, dz43 := x[4]-x[3], y[4]-y[3], z[4]-z[3]
	dx57, dy57, dz57 := x[5]-x[7], y[5]-y[7], z[5]-z[7]
	dx14, dy14, dz14 := x[1]-x[4], y[1]-y[4], z[1]-z[4]
	dx25, dy25, dz25 := x[2]-x[5], y[2]-y[5], z[2]-z[5]

	volume := tripleProduct(dx31+dx72, dx63, dx20, dy31+dy72, dy63, dy20, dz31+dz72, dz63, dz20) +
		tripleProduct(dx43+dx57, dx64, dx70, dy43+dy57, dy64, dy70, dz43+dz57, dz64, dz70) +
		tripleProduct(dx14+dx25, dx61, dx50, dy14+dy25, dy61, dy50, dz14+dz25, dz61, dz50)
	return volume * twelfth
}

// tripleProduct is x1·(y2·z3 − z2·y3) + x2·(z1·y3 − y1·z3) + x3·(y1·z2 − z1·y2).
func tripleProduct(x1, y1, z1, x2, y2, z2, x3, y3, z3 float64) float64 {
	return x1*(y2*z3-z2*y3) + x2*(z1*y3-y1*z3) + x3*(y1*z2-z1*y2)
}

// jacobianTerms are the mean edge vectors of a hexahedron along its three
// parametric directions (xi, eta, zeta) and their cofactors.
type jacobianTerms struct {
	fxXi, fxEta, fxZeta float64
	fyXi, fyEta, fyZeta float64
	fzXi, fzEta, fzZeta float64
	cxXi, cxEta, cxZeta float64
	cyXi, cyEta, cyZeta float64
	czXi, czEta, czZeta float64
}

func jacobian(x, y, z *[8]float64) (t jacobianTerms) {
	x60, x53, x71, x42 := x[6]-x[0], x[5]-x[3], x[7]-x[1], x[4]-x[2]
	y60, y53, y71, y42 := y[6]-y[0], y[5]-y[3], y[7]-y[1], y[4]-y[2]
	z60, z53, z71, z42 := z[6]-z[0], z[5]-z[3], z[7]-z[1], z[4]-z[2]

	t.fxXi = 0.125 * (x60 + x53 - x71 - x42)
	t.fxEta = 0.125 * (x60 - x53 + x71 - x42)
	t.fxZeta = 0.125 * (x60 + x53 + x71 + x42)
	t.fyXi = 0.125 * (y60 + y53 - y71 - y42)
	t.fyEta = 0.125 * (y60 - y53 + y71 - y42)
	t.fyZeta = 0.125 * (y60 + y53 + y71 + y42)
	t.fzXi = 0.125 * (z60 + z53 - z71 - z42)
	t.fzEta = 0.125 * (z60 - z53 + z71 - z42)
	t.fzZeta = 0.125 * (z60 + z53 + z71 + z42)

	t.cxXi = (t.fyEta * t.fzZeta) - (t.fzEta * t.fyZeta)
	t.cxEta = -(t.fyXi * t.fzZeta) + (t.fzXi * t.fyZeta)
	t.cxZeta = (t.fyXi * t.fzEta) - (t.fzXi * t.fyEta)
	t.cyXi = -(t.fxEta * t.fzZeta) + (t.fzEta * t.fxZeta)
	t.cyEta = (t.fxXi * t.fzZeta) - (t.fzXi * t.fxZeta)
	t.cyZeta = -(t.fxXi * t.fzEta) + (t.fzXi * t.fxEta)
	t.czXi = (t.fxEta * t.fyZeta) - (t.fyEta * t.fxZeta)
	t.czEta = -(t.fxXi * t.fyZeta) + (t.fyXi * t.fxZeta)
	t.czZeta = (t.fxXi * t.fyEta) - (t.fyXi * t.fxEta)
	return t
}

// jacobianVolume is jacobian(x, y, z).volume() without the terms the
// volume does not need.
func jacobianVolume(x, y, z *[8]float64) float64 {
	x60, x53, x71, x42 := x[6]-x[0], x[5]-x[3], x[7]-x[1], x[4]-x[2]
	y60, y53, y71, y42 := y[6]-y[0], y[5]-y[3], y[7]-y[1], y[4]-y[2]
	z60, z53, z71, z42 := z[6]-z[0], z[5]-z[3], z[7]-z[1], z[4]-z[2]
	fxXi := 0.125 * (x60 + x53 - x71 - x42)
	fxEta := 0.125 * (x60 - x53 + x71 - x42)
	fxZeta := 0.125 * (x60 + x53 + x71 + x42)
	fyXi := 0.125 * (y60 + y53 - y71 - y42)
	fyEta := 0.125 * (y60 - y53 + y71 - y42)
	fyZeta := 0.125 * (y60 + y53 + y71 + y42)
	fzXi := 0.125 * (z60 + z53 - z71 - z42)
	fzEta := 0.125 * (z60 - z53 + z71 - z42)
	fzZeta := 0.125 * (z60 + z53 + z71 + z42)
	cxEta := -(fyXi * fzZeta) + (fzXi * fyZeta)
	cyEta := (fxXi * fzZeta) - (fzXi * fxZeta)
	czEta := -(fxXi * fyZeta) + (fyXi * fxZeta)
	return 8.0 * (fxEta*cxEta + fyEta*cyEta + fzEta*czEta)
}

// volume is the Jacobian determinant times 8: the element's volume.
func (t *jacobianTerms) volume() float64 {
	return 8.0 * (t.fxEta*t.cxEta + t.fyEta*t.cyEta + t.fzEta*t.czEta)
}

// shapeDerivatives returns the derivatives of the shape functions of
// corners 0-3 (those of 4-7 are their negatives: 6,7,4,5 = -(0,1,2,3)).
func (t *jacobianTerms) shapeDerivatives() (bx, by, bz [4]float64) {
	bx[0] = -t.cxXi - t.cxEta - t.cxZeta
	bx[1] = t.cxXi - t.cxEta - t.cxZeta
	bx[2] = t.cxXi + t.cxEta - t.cxZeta
	bx[3] = -t.cxXi + t.cxEta - t.cxZeta
	by[0] = -t.cyXi - t.cyEta - t.cyZeta
	by[1] = t.cyXi - t.cyEta - t.cyZeta
	by[2] = t.cyXi + t.cyEta - t.cyZeta
	by[3] = -t.cyXi + t.cyEta - t.cyZeta
	bz[0] = -t.czXi - t.czEta - t.czZeta
	bz[1] = t.czXi - t.czEta - t.czZeta
	bz[2] = t.czXi + t.czEta - t.czZeta
	bz[3] = -t.czXi + t.czEta - t.czZeta
	return bx, by, bz
}

// nodeNormalFaces lists the six faces of a hexahedron, each as its four
// corners in the order their area vector is evaluated and summed.
var nodeNormalFaces = [6][4]int{
	{0, 1, 2, 3},
	{0, 4, 5, 1},
	{1, 5, 6, 2},
	{2, 6, 7, 3},
	{3, 7, 4, 0},
	{4, 7, 6, 5},
}

// nodeNormals sums, at each corner, the area vectors of the three faces
// that meet there: the corner's share of the element's surface, through
// which the element's stress pushes on the node.
func nodeNormals(nx, ny, nz *[8]float64, x, y, z *[8]float64) {
	*nx, *ny, *nz = [8]float64{}, [8]float64{}, [8]float64{}
	for f := range nodeNormalFaces {
		face := &nodeNormalFaces[f]
		c0, c1, c2, c3 := face[0]&7, face[1]&7, face[2]&7, face[3]&7
		bx0 := 0.5 * (x[c3] + x[c2] - x[c1] - x[c0])
		by0 := 0.5 * (y[c3] + y[c2] - y[c1] - y[c0])
		bz0 := 0.5 * (z[c3] + z[c2] - z[c1] - z[c0])
		bx1 := 0.5 * (x[c2] + x[c1] - x[c3] - x[c0])
		by1 := 0.5 * (y[c2] + y[c1] - y[c3] - y[c0])
		bz1 := 0.5 * (z[c2] + z[c1] - z[c3] - z[c0])
		ax := 0.25 * (by0*bz1 - bz0*by1)
		ay := 0.25 * (bz0*bx1 - bx0*bz1)
		az := 0.25 * (bx0*by1 - by0*bx1)
		nx[c0] += ax
		nx[c1] += ax
		nx[c2] += ax
		nx[c3] += ax
		ny[c0] += ay
		ny[c1] += ay
		ny[c2] += ay
		ny[c3] += ay
		nz[c0] += az
		nz[c1] += az
		nz[c2] += az
		nz[c3] += az
	}
}

// volumeDerivatives is the derivative of the element volume with respect
// to the position of each corner. Corner c's derivative depends on the
// six corners of the three faces that meet at c, in a fixed order (see
// naiveVolumeDerivatives in the tests). The corners' coordinates are
// read once and each sum of two coordinates is formed once (addition
// commutes exactly), then shared by the corners that need it.
func volumeDerivatives(dvdx, dvdy, dvdz *[8]float64, x, y, z *[8]float64) {
	const twelfth = 1.0 / 12.0
	x0, x1, x2, x3, x4, x5, x6, x7 := x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
	y0, y1, y2, y3, y4, y5, y6, y7 := y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]
	z0, z1, z2, z3, z4, z5, z6, z7 := z[0], z[1], z[2], z[3], z[4], z[5], z[6], z[7]
	x01 := x0 + x1
	x03 := x0 + x3
	x04 := x0 + x4
	x12 := x1 + x2
	x15 := x1 + x5
	x23 := x2 + x3
	x26 := x2 + x6
	x37 := x3 + x7
	x45 := x4 + x5
	x47 := x4 + x7
	x56 := x5 + x6
	x67 := x6 + x7
	y01 := y0 + y1
	y03 := y0 + y3
	y04 := y0 + y4
	y12 := y1 + y2
	y15 := y1 + y5
	y23 := y2 + y3
	y26 := y2 + y6
	y37 := y3 + y7
	y45 := y4 + y5
	y47 := y4 + y7
	y56 := y5 + y6
	y67 := y6 + y7
	z01 := z0 + z1
	z03 := z0 + z3
	z04 := z0 + z4
	z12 := z1 + z2
	z15 := z1 + z5
	z23 := z2 + z3
	z26 := z2 + z6
	z37 := z3 + z7
	z45 := z4 + z5
	z47 := z4 + z7
	z56 := z5 + z6
	z67 := z6 + z7
	dx0 := (y23*z12 - y12*z23 +
		y15*z45 - y45*z15 -
		y37*z47 + y47*z37) * twelfth
	dy0 := (-x23*z12 + x12*z23 -
		x15*z45 + x45*z15 +
		x37*z47 - x47*z37) * twelfth
	dz0 := (-y23*x12 + y12*x23 -
		y15*x45 + y45*x15 +
		y37*x47 - y47*x37) * twelfth
	dx1 := (y03*z23 - y23*z03 +
		y26*z56 - y56*z26 -
		y04*z45 + y45*z04) * twelfth
	dy1 := (-x03*z23 + x23*z03 -
		x26*z56 + x56*z26 +
		x04*z45 - x45*z04) * twelfth
	dz1 := (-y03*x23 + y23*x03 -
		y26*x56 + y56*x26 +
		y04*x45 - y45*x04) * twelfth
	dx2 := (y01*z03 - y03*z01 +
		y37*z67 - y67*z37 -
		y15*z56 + y56*z15) * twelfth
	dy2 := (-x01*z03 + x03*z01 -
		x37*z67 + x67*z37 +
		x15*z56 - x56*z15) * twelfth
	dz2 := (-y01*x03 + y03*x01 -
		y37*x67 + y67*x37 +
		y15*x56 - y56*x15) * twelfth
	dx3 := (y12*z01 - y01*z12 +
		y04*z47 - y47*z04 -
		y26*z67 + y67*z26) * twelfth
	dy3 := (-x12*z01 + x01*z12 -
		x04*z47 + x47*z04 +
		x26*z67 - x67*z26) * twelfth
	dz3 := (-y12*x01 + y01*x12 -
		y04*x47 + y47*x04 +
		y26*x67 - y67*x26) * twelfth
	dx4 := (y56*z67 - y67*z56 +
		y37*z03 - y03*z37 -
		y15*z01 + y01*z15) * twelfth
	dy4 := (-x56*z67 + x67*z56 -
		x37*z03 + x03*z37 +
		x15*z01 - x01*z15) * twelfth
	dz4 := (-y56*x67 + y67*x56 -
		y37*x03 + y03*x37 +
		y15*x01 - y01*x15) * twelfth
	dx5 := (y67*z47 - y47*z67 +
		y04*z01 - y01*z04 -
		y26*z12 + y12*z26) * twelfth
	dy5 := (-x67*z47 + x47*z67 -
		x04*z01 + x01*z04 +
		x26*z12 - x12*z26) * twelfth
	dz5 := (-y67*x47 + y47*x67 -
		y04*x01 + y01*x04 +
		y26*x12 - y12*x26) * twelfth
	dx6 := (y47*z45 - y45*z47 +
		y15*z12 - y12*z15 -
		y37*z23 + y23*z37) * twelfth
	dy6 := (-x47*z45 + x45*z47 -
		x15*z12 + x12*z15 +
		x37*z23 - x23*z37) * twelfth
	dz6 := (-y47*x45 + y45*x47 -
		y15*x12 + y12*x15 +
		y37*x23 - y23*x37) * twelfth
	dx7 := (y45*z56 - y56*z45 +
		y26*z23 - y23*z26 -
		y04*z03 + y03*z04) * twelfth
	dy7 := (-x45*z56 + x56*z45 -
		x26*z23 + x23*z26 +
		x04*z03 - x03*z04) * twelfth
	dz7 := (-y45*x56 + y56*x45 -
		y26*x23 + y23*x26 +
		y04*x03 - y03*x04) * twelfth
	*dvdx = [8]float64{dx0, dx1, dx2, dx3, dx4, dx5, dx6, dx7}
	*dvdy = [8]float64{dy0, dy1, dy2, dy3, dy4, dy5, dy6, dy7}
	*dvdz = [8]float64{dz0, dz1, dz2, dz3, dz4, dz5, dz6, dz7}
}

// faceAreaSquared is the squared area measure of a face used for the
// characteristic length (|f|²|g|² − (f·g)² of the face diagonals' sum
// and difference).
func faceAreaSquared(x0, x1, x2, x3, y0, y1, y2, y3, z0, z1, z2, z3 float64) float64 {
	fx := (x2 - x0) - (x3 - x1)
	fy := (y2 - y0) - (y3 - y1)
	fz := (z2 - z0) - (z3 - z1)
	gx := (x2 - x0) + (x3 - x1)
	gy := (y2 - y0) + (y3 - y1)
	gz := (z2 - z0) + (z3 - z1)
	fg := fx*gx + fy*gy + fz*gz
	return (fx*fx+fy*fy+fz*fz)*(gx*gx+gy*gy+gz*gz) - fg*fg
}

// characteristicLength is 4·volume / sqrt(largest face measure).
func characteristicLength(x, y, z *[8]float64, volume float64) float64 {
	largest := 0.0
	consider := func(a, b, c, e int) {
		area := faceAreaSquared(x[a], x[b], x[c], x[e], y[a], y[b], y[c], y[e], z[a], z[b], z[c], z[e])
		largest = max(area, largest)
	}
	consider(0, 1, 2, 3)
	consider(4, 5, 6, 7)
	consider(0, 1, 5, 4)
	consider(1, 2, 6, 5)
	consider(2, 3, 7, 6)
	consider(3, 0, 4, 7)
	return 4.0 * volume / math.Sqrt(largest)
}
