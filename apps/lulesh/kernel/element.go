package kernel

import (
	"fmt"
	"math"
)

// ElementGradientPhase computes, for each element of the chunk, the
// kinematics at the new positions (new relative volume, volume change,
// characteristic length, volumetric strain rate at the half step) and
// the monotonic-Q position and velocity gradients along its three
// parametric directions.
//
// A distributed run then fills the ghost gradient slots of each face it
// shares with a neighbour chunk (see GhostGradients and PackFaceGradients)
// before ElementMaterialPhase.
func (d *Domain) ElementGradientPhase() error {
	const ptiny = 1.0e-36
	var xs, ys, zs, xv, yv, zv [8]float64
	x, y, z := d.x, d.y, d.z
	xd, yd, zd := d.xd, d.yd, d.zd
	ne := d.numElem
	volo, v := d.volo[:ne], d.v[:ne]
	vnew, delv, arealg, vdov := d.vnew[:ne], d.delv[:ne], d.arealg[:ne], d.vdov[:ne]
	delvXi, delvEta, delvZeta := d.delvXi[:ne], d.delvEta[:ne], d.delvZeta[:ne]
	delxXi, delxEta, delxZeta := d.delxXi[:ne], d.delxEta[:ne], d.delxZeta[:ne]
	halfStep := 0.5 * d.deltaTime
	tangled := -1
	for el := range volo {
		nl := (*[8]int32)(d.nodelist[8*el:])
		for c, n := range nl {
			xs[c], ys[c], zs[c] = x[n], y[n], z[n]
			xv[c], yv[c], zv[c] = xd[n], yd[n], zd[n]
		}

		// Kinematics.
		volume := elementVolume(&xs, &ys, &zs)
		relative := volume / volo[el]
		vnew[el] = relative
		delv[el] = relative - v[el]
		arealg[el] = characteristicLength(&xs, &ys, &zs, volume)
		if relative <= 0 && tangled < 0 {
			tangled = el
		}
		vdov[el] = halfStepStrainRate(&xs, &ys, &zs, &xv, &yv, &zv, halfStep)

		// Monotonic Q gradients, at the new positions.
		vol := volo[el] * relative
		norm := 1.0 / (vol + ptiny)
		dxj := -0.25 * ((xs[0] + xs[1] + xs[5] + xs[4]) - (xs[3] + xs[2] + xs[6] + xs[7]))
		dyj := -0.25 * ((ys[0] + ys[1] + ys[5] + ys[4]) - (ys[3] + ys[2] + ys[6] + ys[7]))
		dzj := -0.25 * ((zs[0] + zs[1] + zs[5] + zs[4]) - (zs[3] + zs[2] + zs[6] + zs[7]))
		dxi := 0.25 * ((xs[1] + xs[2] + xs[6] + xs[5]) - (xs[0] + xs[3] + xs[7] + xs[4]))
		dyi := 0.25 * ((ys[1] + ys[2] + ys[6] + ys[5]) - (ys[0] + ys[3] + ys[7] + ys[4]))
		dzi := 0.25 * ((zs[1] + zs[2] + zs[6] + zs[5]) - (zs[0] + zs[3] + zs[7] + zs[4]))
		dxk := 0.25 * ((xs[4] + xs[5] + xs[6] + xs[7]) - (xs[0] + xs[1] + xs[2] + xs[3]))
		dyk := 0.25 * ((ys[4] + ys[5] + ys[6] + ys[7]) - (ys[0] + ys[1] + ys[2] + ys[3]))
		dzk := 0.25 * ((zs[4] + zs[5] + zs[6] + zs[7]) - (zs[0] + zs[1] + zs[2] + zs[3]))

		// zeta: i cross j.
		ax := dyi*dzj - dzi*dyj
		ay := dzi*dxj - dxi*dzj
		az := dxi*dyj - dyi*dxj
		delxZeta[el] = vol / math.Sqrt(ax*ax+ay*ay+az*az+ptiny)
		ax *= norm
		ay *= norm
		az *= norm
		dxv := 0.25 * ((xv[4] + xv[5] + xv[6] + xv[7]) - (xv[0] + xv[1] + xv[2] + xv[3]))
		dyv := 0.25 * ((yv[4] + yv[5] + yv[6] + yv[7]) - (yv[0] + yv[1] + yv[2] + yv[3]))
		dzv := 0.25 * ((zv[4] + zv[5] + zv[6] + zv[7]) - (zv[0] + zv[1] + zv[2] + zv[3]))
		delvZeta[el] = ax*dxv + ay*dyv + az*dzv

		// xi: j cross k.
		ax = dyj*dzk - dzj*dyk
		ay = dzj*dxk - dxj*dzk
		az = dxj*dyk - dyj*dxk
		delxXi[el] = vol / math.Sqrt(ax*ax+ay*ay+az*az+ptiny)
		ax *= norm
		ay *= norm
		az *= norm
		dxv = 0.25 * ((xv[1] + xv[2] + xv[6] + xv[5]) - (xv[0] + xv[3] + xv[7] + xv[4]))
		dyv = 0.25 * ((yv[1] + yv[2] + yv[6] + yv[5]) - (yv[0] + yv[3] + yv[7] + yv[4]))
		dzv = 0.25 * ((zv[1] + zv[2] + zv[6] + zv[5]) - (zv[0] + zv[3] + zv[7] + zv[4]))
		delvXi[el] = ax*dxv + ay*dyv + az*dzv

		// eta: k cross i.
		ax = dyk*dzi - dzk*dyi
		ay = dzk*dxi - dxk*dzi
		az = dxk*dyi - dyk*dxi
		delxEta[el] = vol / math.Sqrt(ax*ax+ay*ay+az*az+ptiny)
		ax *= norm
		ay *= norm
		az *= norm
		dxv = -0.25 * ((xv[0] + xv[1] + xv[5] + xv[4]) - (xv[3] + xv[2] + xv[6] + xv[7]))
		dyv = -0.25 * ((yv[0] + yv[1] + yv[5] + yv[4]) - (yv[3] + yv[2] + yv[6] + yv[7]))
		dzv = -0.25 * ((zv[0] + zv[1] + zv[5] + zv[4]) - (zv[3] + zv[2] + zv[6] + zv[7]))
		delvEta[el] = ax*dxv + ay*dyv + az*dzv
	}
	if tangled >= 0 {
		return fmt.Errorf("%w: element %d in kinematics", ErrNegativeVolume, tangled)
	}
	return nil
}

// halfStepStrainRate is the trace of the velocity gradient (the relative
// volume rate) evaluated on the element as it was half a step ago. It
// takes the current positions and moves them back along the velocities.
func halfStepStrainRate(xs, ys, zs, xv, yv, zv *[8]float64, halfStep float64) float64 {
	var xh, yh, zh [8]float64
	for c := range 8 {
		xh[c] = xs[c] - halfStep*xv[c]
		yh[c] = ys[c] - halfStep*yv[c]
		zh[c] = zs[c] - halfStep*zv[c]
	}
	jt := jacobian(&xh, &yh, &zh)
	detJ := jt.volume()
	bx, by, bz := jt.shapeDerivatives()
	inv := 1.0 / detJ
	dxx := inv * (bx[0]*(xv[0]-xv[6]) + bx[1]*(xv[1]-xv[7]) + bx[2]*(xv[2]-xv[4]) + bx[3]*(xv[3]-xv[5]))
	dyy := inv * (by[0]*(yv[0]-yv[6]) + by[1]*(yv[1]-yv[7]) + by[2]*(yv[2]-yv[4]) + by[3]*(yv[3]-yv[5]))
	dzz := inv * (bz[0]*(zv[0]-zv[6]) + bz[1]*(zv[1]-zv[7]) + bz[2]*(zv[2]-zv[4]) + bz[3]*(zv[3]-zv[5]))
	return dxx + dyy + dzz
}

// ElementMaterialPhase finishes the element update once the ghost
// gradients are in place: the limited monotonic artificial viscosity,
// the equation of state (pressure, energy, viscosity and sound speed at
// the new volume), the volume update, and this chunk's time constraints.
func (d *Domain) ElementMaterialPhase() error {
	for _, region := range d.regions {
		d.monotonicQ(region)
	}
	for el, q := range d.q[:d.numElem] {
		if q > d.params.qStop {
			return fmt.Errorf("%w: element %d", ErrExcessiveQ, el)
		}
	}
	if err := d.clampVolumes(); err != nil {
		return err
	}
	for r, region := range d.regions {
		d.evaluateEOS(region, d.regionReps[r])
	}
	d.updateVolumes()
	d.computeTimeConstraints()
	return nil
}

// monotonicQ computes the linear and quadratic artificial viscosity terms
// of the region's elements, with slope limiters built from the velocity
// gradients of the face neighbours.
func (d *Domain) monotonicQ(region []int32) {
	const ptiny = 1.0e-36
	par := &d.params
	limiterMult, maxSlope := par.monoqLimiterMult, par.monoqMaxSlope
	qlc, qqc := par.qlcMonoq, par.qqcMonoq
	delvXi, delvEta, delvZeta := d.delvXi, d.delvEta, d.delvZeta
	ne := d.numElem
	xiM, xiP := d.xiMinus[:ne], d.xiPlus[:ne]
	etaM, etaP := d.etaMinus[:ne], d.etaPlus[:ne]
	zetaM, zetaP := d.zetaMinus[:ne], d.zetaPlus[:ne]
	vdov, delxXi, delxEta, delxZeta := d.vdov[:ne], d.delxXi[:ne], d.delxEta[:ne], d.delxZeta[:ne]
	mass, volo, vnew := d.elemMass[:ne], d.volo[:ne], d.vnew[:ne]
	ql, qq := d.ql[:ne], d.qq[:ne]

	limiter := func(own, minus, plus float64) float64 {
		norm := 1.0 / (own + ptiny)
		delvm := minus * norm
		delvp := plus * norm
		phi := 0.5 * (delvm + delvp)
		delvm *= limiterMult
		delvp *= limiterMult
		if delvm < phi {
			phi = delvm
		}
		if delvp < phi {
			phi = delvp
		}
		if phi < 0 {
			phi = 0
		}
		if phi > maxSlope {
			phi = maxSlope
		}
		return phi
	}

	for _, el := range region {
		phiXi := limiter(delvXi[el], delvXi[xiM[el]], delvXi[xiP[el]])
		phiEta := limiter(delvEta[el], delvEta[etaM[el]], delvEta[etaP[el]])
		phiZeta := limiter(delvZeta[el], delvZeta[zetaM[el]], delvZeta[zetaP[el]])

		var qlin, qquad float64
		if vdov[el] <= 0 {
			dXi := min(delvXi[el]*delxXi[el], 0)
			dEta := min(delvEta[el]*delxEta[el], 0)
			dZeta := min(delvZeta[el]*delxZeta[el], 0)
			rho := mass[el] / (volo[el] * vnew[el])
			qlin = -qlc * rho * (dXi*(1.0-phiXi) + dEta*(1.0-phiEta) + dZeta*(1.0-phiZeta))
			qquad = qqc * rho * (dXi*dXi*(1.0-phiXi*phiXi) +
				dEta*dEta*(1.0-phiEta*phiEta) +
				dZeta*dZeta*(1.0-phiZeta*phiZeta))
		}
		qq[el] = qquad
		ql[el] = qlin
	}
}

// clampVolumes bounds the new relative volumes to [eosVMin, eosVMax] for
// the equation of state, and checks that the old ones are positive.
func (d *Domain) clampVolumes() error {
	vmin, vmax := d.params.eosVMin, d.params.eosVMax
	ne := d.numElem
	clamped, vnew, v := d.vnewClamped[:ne], d.vnew[:ne], d.v[:ne]
	for el, vn := range vnew {
		if vmin != 0 && vn < vmin {
			vn = vmin
		}
		if vmax != 0 && vn > vmax {
			vn = vmax
		}
		clamped[el] = vn
	}
	for el, vc := range v {
		if vmin != 0 && vc < vmin {
			vc = vmin
		}
		if vmax != 0 && vc > vmax {
			vc = vmax
		}
		if vc <= 0 {
			return fmt.Errorf("%w: element %d before EOS", ErrNegativeVolume, el)
		}
	}
	return nil
}

// updateVolumes makes the new relative volumes current, snapping values
// within vCut of 1 to exactly 1.
func (d *Domain) updateVolumes() {
	cut := d.params.vCut
	v := d.v[:d.numElem]
	for el, vn := range d.vnew[:len(v)] {
		if math.Abs(vn-1.0) < cut {
			vn = 1.0
		}
		v[el] = vn
	}
}
