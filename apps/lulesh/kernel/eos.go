package kernel

import "math"

// eosScratch receives the results of the EOS repetitions that only
// reproduce the reference's per-region workload.
type eosScratch struct {
	p, e, q, ss []float64
}

func newEOSScratch(n int) eosScratch {
	return eosScratch{
		p: make([]float64, n), e: make([]float64, n),
		q: make([]float64, n), ss: make([]float64, n),
	}
}

// eosState is the result of the equation of state for one element.
type eosState struct {
	p, e, q, soundSpeed float64
}

// evaluateEOS runs the equation of state on the region's elements reps
// times (the reference's way of making some regions more expensive; each
// repetition computes the same values) and stores the last result.
func (d *Domain) evaluateEOS(region []int32, reps int) {
	ne := d.numElem
	e, p, q := d.e[:ne], d.p[:ne], d.q[:ne]
	ql, qq, delv := d.ql[:ne], d.qq[:ne], d.delv[:ne]
	vnewc, ss := d.vnewClamped[:ne], d.ss[:ne]
	par := &d.params
	for rep := 1; rep < reps; rep++ {
		out := &d.eos
		for i, el := range region {
			s := par.energyUpdate(e[el], p[el], q[el], ql[el], qq[el], delv[el], vnewc[el])
			out.p[i], out.e[i], out.q[i], out.ss[i] = s.p, s.e, s.q, s.soundSpeed
		}
	}
	for _, el := range region {
		s := par.energyUpdate(e[el], p[el], q[el], ql[el], qq[el], delv[el], vnewc[el])
		p[el], e[el], q[el], ss[el] = s.p, s.e, s.q, s.soundSpeed
	}
}

// energyUpdate integrates the energy equation over the step for one
// element with a predictor-corrector on pressure and viscosity, using an
// ideal-gas-like EOS p = (2/3)(1+compression)·e, and returns the new
// pressure, energy, viscosity and sound speed.
func (par *parameters) energyUpdate(eOld, pOld, qOld, qlOld, qqOld, delv, vnewc float64) eosState {
	const sixth = 1.0 / 6.0
	compression := 1.0/vnewc - 1.0
	vchalf := vnewc - delv*0.5
	compHalfStep := 1.0/vchalf - 1.0
	if par.eosVMin != 0 && vnewc <= par.eosVMin {
		compHalfStep = compression
	}
	if par.eosVMax != 0 && vnewc >= par.eosVMax {
		pOld, compression, compHalfStep = 0, 0, 0
	}
	const work = 0.0

	eNew := eOld - 0.5*delv*(pOld+qOld) + 0.5*work
	if eNew < par.eMin {
		eNew = par.eMin
	}

	pHalf, bvc, pbvc := par.pressure(eNew, compHalfStep, vnewc)
	vhalf := 1.0 / (1.0 + compHalfStep)
	var qNew float64
	if delv <= 0 {
		ssc := par.soundSpeed(par.perDensity(pbvc*eNew + vhalf*vhalf*bvc*pHalf))
		qNew = ssc*qlOld + qqOld
	}
	eNew = eNew + 0.5*delv*(3.0*(pOld+qOld)-4.0*(pHalf+qNew))
	eNew += 0.5 * work
	eNew = par.cutEnergy(eNew)

	pNew, bvc, pbvc := par.pressure(eNew, compression, vnewc)
	var qTilde float64
	if delv <= 0 {
		ssc := par.soundSpeed(par.perDensity(pbvc*eNew + vnewc*vnewc*bvc*pNew))
		qTilde = ssc*qlOld + qqOld
	}
	eNew = eNew - (7.0*(pOld+qOld)-8.0*(pHalf+qNew)+(pNew+qTilde))*delv*sixth
	eNew = par.cutEnergy(eNew)

	pNew, bvc, pbvc = par.pressure(eNew, compression, vnewc)
	if delv <= 0 {
		ssc := par.soundSpeed(par.perDensity(pbvc*eNew + vnewc*vnewc*bvc*pNew))
		qNew = ssc*qlOld + qqOld
		if math.Abs(qNew) < par.qCut {
			qNew = 0
		}
	}
	ss := par.soundSpeed(par.perDensity(pbvc*eNew + vnewc*vnewc*bvc*pNew))
	return eosState{p: pNew, e: eNew, q: qNew, soundSpeed: ss}
}

// pressure is the EOS: p = bvc·e with bvc = (2/3)(compression+1); it
// also returns bvc and pbvc (the pressure's derivative terms).
func (par *parameters) pressure(e, compression, vnewc float64) (p, bvc, pbvc float64) {
	const c1s = 2.0 / 3.0
	bvc = c1s * (compression + 1.0)
	pbvc = c1s
	p = bvc * e
	if math.Abs(p) < par.pCut {
		p = 0
	}
	if vnewc >= par.eosVMax {
		p = 0
	}
	if p < par.pMin {
		p = par.pMin
	}
	return p, bvc, pbvc
}

func (par *parameters) cutEnergy(e float64) float64 {
	if math.Abs(e) < par.eCut {
		e = 0
	}
	if e < par.eMin {
		e = par.eMin
	}
	return e
}

// perDensity divides by the reference density; x/1 is x exactly, so the
// division is skipped for the unit density of the problem.
func (par *parameters) perDensity(x float64) float64 {
	if par.refDensity == 1 {
		return x
	}
	return x / par.refDensity
}

// soundSpeed is the square root of a squared sound speed, floored.
func (par *parameters) soundSpeed(squared float64) float64 {
	if squared <= 0.1111111e-36 {
		return 0.3333333e-18
	}
	return math.Sqrt(squared)
}
