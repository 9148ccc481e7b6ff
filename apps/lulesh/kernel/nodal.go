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
	var hourgam [8][4]float64
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
		for mode := range 4 {
			g := &hourglassModes[mode]
			hx := xs[0]*g[0] + xs[1]*g[1] + xs[2]*g[2] + xs[3]*g[3] +
				xs[4]*g[4] + xs[5]*g[5] + xs[6]*g[6] + xs[7]*g[7]
			hy := ys[0]*g[0] + ys[1]*g[1] + ys[2]*g[2] + ys[3]*g[3] +
				ys[4]*g[4] + ys[5]*g[5] + ys[6]*g[6] + ys[7]*g[7]
			hz := zs[0]*g[0] + zs[1]*g[1] + zs[2]*g[2] + zs[3]*g[3] +
				zs[4]*g[4] + zs[5]*g[5] + zs[6]*g[6] + zs[7]*g[7]
			for c := range 8 {
				hourgam[c][mode] = g[c] - volinv*(dvdx[c]*hx+dvdy[c]*hy+dvdz[c]*hz)
			}
		}
		volume13 := math.Cbrt(determ)
		coefficient := -hourg * 0.01 * ss[el] * mass[el] / volume13
		hourglassForce(&hourgam, &xv, coefficient, fx, nl)
		hourglassForce(&hourgam, &yv, coefficient, fy, nl)
		hourglassForce(&hourgam, &zv, coefficient, fz, nl)
	}
	if tangled >= 0 {
		return fmt.Errorf("%w: element %d in hourglass control", ErrNegativeVolume, tangled)
	}
	return nil
}

// hourglassForce adds to force the hourglass resistance of one velocity
// component.
func hourglassForce(hourgam *[8][4]float64, vel *[8]float64, coefficient float64, force []float64, nl *[8]int32) {
	var h [4]float64
	for mode := range 4 {
		h[mode] = hourgam[0][mode]*vel[0] + hourgam[1][mode]*vel[1] +
			hourgam[2][mode]*vel[2] + hourgam[3][mode]*vel[3] +
			hourgam[4][mode]*vel[4] + hourgam[5][mode]*vel[5] +
			hourgam[6][mode]*vel[6] + hourgam[7][mode]*vel[7]
	}
	for c, n := range nl {
		force[n] += coefficient *
			(hourgam[c][0]*h[0] + hourgam[c][1]*h[1] + hourgam[c][2]*h[2] + hourgam[c][3]*h[3])
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
