package kernel

import (
	"fmt"
	"math"
)

// hourglassModes are the four hourglass base vectors of a hexahedron:
// the corner patterns of ±1 that a trilinear element cannot resist.
var hourglassModes = [4][8]float64{
	{1, 1, -1, -1, -1, -1, 1, 1},
	{1, -1, -1, 1, -1, 1, 1, -1},
	{1, -1, 1, -1, 1, -1, 1, -1},
	{-1, 1, -1, 1, 1, -1, 1, -1},
}

// NodalForcePhase computes the forces that this chunk's elements exert on
// their nodes: the integrated stress (pressure plus artificial viscosity)
// and the Flanagan-Belytschko hourglass control. It overwrites the force
// arrays.
//
// A distributed run then adds, for every node it shares with other chunks,
// their contributions (see SharedNodes and Forces), in a fixed order,
// before NodalMotionPhase.
func (d *Domain) NodalForcePhase() error {
	clear(d.fx)
	clear(d.fy)
	clear(d.fz)
	if err := d.integrateStress(); err != nil {
		return err
	}
	return d.addHourglassForces()
}

// integrateStress adds to each node the stress force of its elements,
// element by element in index order.
func (d *Domain) integrateStress() error {
	var xs, ys, zs, nx, ny, nz [8]float64
	x, y, z := d.x, d.y, d.z
	fx, fy, fz := d.fx, d.fy, d.fz
	p, q := d.p[:d.numElem], d.q[:d.numElem]
	tangled := -1
	for el := range p {
		nl := (*[8]int32)(d.nodelist[8*el:])
		for c, n := range nl {
			xs[c], ys[c], zs[c] = x[n], y[n], z[n]
		}
		jt := jacobian(&xs, &ys, &zs)
		if jt.volume() <= 0 && tangled < 0 {
			tangled = el
		}
		nodeNormals(&nx, &ny, &nz, &xs, &ys, &zs)
		sigma := -p[el] - q[el]
		for c, n := range nl {
			fx[n] += -(sigma * nx[c])
			fy[n] += -(sigma * ny[c])
			fz[n] += -(sigma * nz[c])
		}
	}
	if tangled >= 0 {
		return fmt.Errorf("%w: element %d in stress integration", ErrNegativeVolume, tangled)
	}
	return nil
}

// addHourglassForces adds the Flanagan-Belytschko anti-hourglass forces:
// each element resists the part of its nodal velocity field that lies
// along the hourglass modes, orthogonalised against the linear field.
func (d *Domain) addHourglassForces() error {
	var xs, ys, zs, xv, yv, zv [8]float64
	var dvdx, dvdy, dvdz [8]float64
	var gx, gy, gz [8]float64
	var hourgam [4][8]float64
	x, y, z := d.x, d.y, d.z
	xd, yd, zd := d.xd, d.yd, d.zd
	fx, fy, fz := d.fx, d.fy, d.fz
	v := d.v[:d.numElem]
	volo, ss, mass := d.volo[:len(v)], d.ss[:len(v)], d.elemMass[:len(v)]
	hourg := d.params.hourglassCoefficient
	tangled := -1
	for el := range v {
		if v[el] <= 0 && tangled < 0 {
			tangled = el
		}
		if hourg <= 0 {
			continue
		}
		nl := (*[8]int32)(d.nodelist[8*el:])
		for c, n := range nl {
			xs[c], ys[c], zs[c] = x[n], y[n], z[n]
			xv[c], yv[c], zv[c] = xd[n], yd[n], zd[n]
		}
		volumeDerivatives(&dvdx, &dvdy, &dvdz, &xs, &ys, &zs)
		determ := volo[el] * v[el]
		volinv := 1.0 / determ

		// The projections of the coordinates on the four modes. The
		// modes' entries are ±1, so these are the reference's sums of
		// products, term by term.
		var hx, hy, hz [4]float64
		hx[0] = xs[0] + xs[1] - xs[2] - xs[3] - xs[4] - xs[5] + xs[6] + xs[7]
		hx[1] = xs[0] - xs[1] - xs[2] + xs[3] - xs[4] + xs[5] + xs[6] - xs[7]
		hx[2] = xs[0] - xs[1] + xs[2] - xs[3] + xs[4] - xs[5] + xs[6] - xs[7]
		hx[3] = -xs[0] + xs[1] - xs[2] + xs[3] + xs[4] - xs[5] + xs[6] - xs[7]
		hy[0] = ys[0] + ys[1] - ys[2] - ys[3] - ys[4] - ys[5] + ys[6] + ys[7]
		hy[1] = ys[0] - ys[1] - ys[2] + ys[3] - ys[4] + ys[5] + ys[6] - ys[7]
		hy[2] = ys[0] - ys[1] + ys[2] - ys[3] + ys[4] - ys[5] + ys[6] - ys[7]
		hy[3] = -ys[0] + ys[1] - ys[2] + ys[3] + ys[4] - ys[5] + ys[6] - ys[7]
		hz[0] = zs[0] + zs[1] - zs[2] - zs[3] - zs[4] - zs[5] + zs[6] + zs[7]
		hz[1] = zs[0] - zs[1] - zs[2] + zs[3] - zs[4] + zs[5] + zs[6] - zs[7]
		hz[2] = zs[0] - zs[1] + zs[2] - zs[3] + zs[4] - zs[5] + zs[6] - zs[7]
		hz[3] = -zs[0] + zs[1] - zs[2] + zs[3] + zs[4] - zs[5] + zs[6] - zs[7]
		for mode := range 4 {
			g := &hourglassModes[mode]
			hg := &hourgam[mode]
			mx, my, mz := hx[mode], hy[mode], hz[mode]
			for c := range 8 {
				hg[c] = g[c] - volinv*(dvdx[c]*mx+dvdy[c]*my+dvdz[c]*mz)
			}
		}

		volume13 := math.Cbrt(determ)
		coefficient := -hourg * 0.01 * ss[el] * mass[el] / volume13
		hourglassResistance(&gx, &hourgam, &xv, coefficient)
		hourglassResistance(&gy, &hourgam, &yv, coefficient)
		hourglassResistance(&gz, &hourgam, &zv, coefficient)
		for c, n := range nl {
			fx[n] += gx[c]
			fy[n] += gy[c]
			fz[n] += gz[c]
		}
	}
	if tangled >= 0 {
		return fmt.Errorf("%w: element %d in hourglass control", ErrNegativeVolume, tangled)
	}
	return nil
}

// hourglassResistance is the hourglass force of one velocity component
// at the 8 corners.
func hourglassResistance(force *[8]float64, hourgam *[4][8]float64, vel *[8]float64, coefficient float64) {
	var h [4]float64
	for mode := range 4 {
		hg := &hourgam[mode]
		h[mode] = hg[0]*vel[0] + hg[1]*vel[1] + hg[2]*vel[2] + hg[3]*vel[3] +
			hg[4]*vel[4] + hg[5]*vel[5] + hg[6]*vel[6] + hg[7]*vel[7]
	}
	for c := range 8 {
		force[c] = coefficient *
			(hourgam[0][c]*h[0] + hourgam[1][c]*h[1] + hourgam[2][c]*h[2] + hourgam[3][c]*h[3])
	}
}

// NodalMotionPhase moves the nodes: acceleration from the (summed) forces,
// zero normal acceleration on symmetry planes, velocity (small values cut
// to zero) and position.
func (d *Domain) NodalMotionPhase() {
	n := d.numNode
	fx, fy, fz := d.fx[:n], d.fy[:n], d.fz[:n]
	mass := d.nodalMass[:n]
	xdd, ydd, zdd := d.xdd[:n], d.ydd[:n], d.zdd[:n]
	for i := range mass {
		xdd[i] = fx[i] / mass[i]
		ydd[i] = fy[i] / mass[i]
		zdd[i] = fz[i] / mass[i]
	}
	for _, i := range d.symmetryX {
		xdd[i] = 0
	}
	for _, i := range d.symmetryY {
		ydd[i] = 0
	}
	for _, i := range d.symmetryZ {
		zdd[i] = 0
	}
	dt, cut := d.deltaTime, d.params.uCut
	advanceComponent(d.x[:n], d.xd[:n], xdd, dt, cut)
	advanceComponent(d.y[:n], d.yd[:n], ydd, dt, cut)
	advanceComponent(d.z[:n], d.zd[:n], zdd, dt, cut)
}

func advanceComponent(pos, vel, acc []float64, dt, cut float64) {
	vel = vel[:len(pos)]
	acc = acc[:len(pos)]
	for i := range pos {
		v := vel[i] + acc[i]*dt
		if math.Abs(v) < cut {
			v = 0
		}
		vel[i] = v
		pos[i] += v * dt
	}
}
