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
		if jacobianVolume(&xs, &ys, &zs) <= 0 && tangled < 0 {
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

		// The velocity field's components along the corrected modes,
		// then the resisting force at each corner.
		var hvx, hvy, hvz [4]float64
		for mode := range 4 {
			hg := &hourgam[mode]
			hvx[mode] = hg[0]*xv[0] + hg[1]*xv[1] + hg[2]*xv[2] + hg[3]*xv[3] +
				hg[4]*xv[4] + hg[5]*xv[5] + hg[6]*xv[6] + hg[7]*xv[7]
			hvy[mode] = hg[0]*yv[0] + hg[1]*yv[1] + hg[2]*yv[2] + hg[3]*yv[3] +
				hg[4]*yv[4] + hg[5]*yv[5] + hg[6]*yv[6] + hg[7]*yv[7]
			hvz[mode] = hg[0]*zv[0] + hg[1]*zv[1] + hg[2]*zv[2] + hg[3]*zv[3] +
				hg[4]*zv[4] + hg[5]*zv[5] + hg[6]*zv[6] + hg[7]*zv[7]
		}
		for c, n := range nl {
			g0, g1, g2, g3 := hourgam[0][c], hourgam[1][c], hourgam[2][c], hourgam[3][c]
			fx[n] += coefficient * (g0*hvx[0] + g1*hvx[1] + g2*hvx[2] + g3*hvx[3])
			fy[n] += coefficient * (g0*hvy[0] + g1*hvy[1] + g2*hvy[2] + g3*hvy[3])
			fz[n] += coefficient * (g0*hvz[0] + g1*hvz[1] + g2*hvz[2] + g3*hvz[3])
		}
	}
	if tangled >= 0 {
		return fmt.Errorf("%w: element %d in hourglass control", ErrNegativeVolume, tangled)
	}
	return nil
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
