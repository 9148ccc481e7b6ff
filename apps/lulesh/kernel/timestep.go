package kernel

import "math"

// computeTimeConstraints finds the chunk's Courant limit (sound crossing
// time of the characteristic length, with the viscosity's contribution
// in compression) and hydro limit (the time for a relative volume change
// of dvovMax). Elements with zero strain rate impose neither.
func (d *Domain) computeTimeConstraints() {
	qqc2 := 64.0 * d.params.qqc * d.params.qqc
	dvovMax := d.params.dvovMax
	courant, hydro := noConstraint, noConstraint
	for _, region := range d.regions {
		for _, el := range region {
			rate := d.vdov[el]
			if rate == 0 {
				continue
			}
			ss, length := d.ss[el], d.arealg[el]
			dtf := ss * ss
			if rate < 0 {
				dtf = dtf + qqc2*length*length*rate*rate
			}
			dtf = math.Sqrt(dtf)
			dtf = length / dtf
			if dtf < courant {
				courant = dtf
			}
			dtdvov := dvovMax / (math.Abs(rate) + 1.0e-20)
			if hydro > dtdvov {
				hydro = dtdvov
			}
		}
	}
	d.dtCourant, d.dtHydro = courant, hydro
}

// TimeConstraints returns the chunk's Courant and hydro time limits from
// the last ElementMaterialPhase (1e20 each before the first cycle, or
// where no element limits the step). A distributed run reduces each with
// min over all chunks and passes the results to TimeIncrement; reducing
// the two separately makes the time step independent of the chunking.
func (d *Domain) TimeConstraints() (courant, hydro float64) {
	return d.dtCourant, d.dtHydro
}

// TimeIncrement chooses the next time step from the global Courant and
// hydro limits (the minimum of TimeConstraints over all chunks), bounded
// in growth and by the maximum step, shortened so as to land on the stop
// time, then advances time and the cycle count. The first cycle keeps the
// initial analytic step and ignores its arguments.
func (d *Domain) TimeIncrement(globalCourant, globalHydro float64) {
	par := &d.params
	target := par.stopTime - d.time
	if d.cycle != 0 {
		old := d.deltaTime
		next := noConstraint
		if globalCourant < next {
			next = globalCourant / 2.0
		}
		if globalHydro < next {
			next = globalHydro * 2.0 / 3.0
		}
		ratio := next / old
		if ratio >= 1.0 {
			if ratio < par.dtMultLower {
				next = old
			} else if ratio > par.dtMultUpper {
				next = old * par.dtMultUpper
			}
		}
		if next > par.dtMax {
			next = par.dtMax
		}
		d.deltaTime = next
	}
	// Avoid a tiny last step: split the remainder if it is a little
	// larger than one step.
	if target > d.deltaTime && target < 4.0*d.deltaTime/3.0 {
		target = 2.0 * d.deltaTime / 3.0
	}
	if target < d.deltaTime {
		d.deltaTime = target
	}
	d.time += d.deltaTime
	d.cycle++
}

// Finished says whether the run has reached its stop time or maxCycles
// cycles (maxCycles <= 0 means no cycle limit).
func (d *Domain) Finished(maxCycles int) bool {
	return d.time >= d.params.stopTime || (maxCycles > 0 && d.cycle >= maxCycles)
}

// Cycle is the number of completed time increments.
func (d *Domain) Cycle() int { return d.cycle }

// Time is the simulated time reached.
func (d *Domain) Time() float64 { return d.time }

// DeltaTime is the current time step.
func (d *Domain) DeltaTime() float64 { return d.deltaTime }

// Step advances a domain that covers the whole mesh by one cycle; the
// serial driver. A distributed run calls the phases itself, with its
// exchanges between them.
func (d *Domain) Step() error {
	if !d.coversWholeMesh() {
		return ErrNotWholeMesh
	}
	d.TimeIncrement(d.TimeConstraints())
	if err := d.NodalForcePhase(); err != nil {
		return err
	}
	d.NodalMotionPhase()
	if err := d.ElementGradientPhase(); err != nil {
		return err
	}
	return d.ElementMaterialPhase()
}
