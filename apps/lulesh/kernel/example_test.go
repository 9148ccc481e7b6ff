package kernel_test

import (
	"fmt"

	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// The serial driver: the Sedov problem on a 10³ mesh to the stop time.
func ExampleRun() {
	res, err := kernel.Run(10, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("iterations %d, final origin energy %.6e\n", res.Iterations, res.FinalOriginEnergy)
	// Output: iterations 231, final origin energy 2.720531e+04
}

// One cycle driven phase by phase, as a distributed chunk task does it
// (here one chunk is the whole mesh, so there is nothing to exchange).
func ExampleDomain_phases() {
	d, err := kernel.NewSerialDomain(6)
	if err != nil {
		fmt.Println(err)
		return
	}
	for !d.Finished(5) {
		courant, hydro := d.TimeConstraints() // min-reduced over chunks
		d.TimeIncrement(courant, hydro)
		if err := d.NodalForcePhase(); err != nil {
			fmt.Println(err)
			return
		}
		// exchange: SumSharedNodes on each force component
		d.NodalMotionPhase()
		if err := d.ElementGradientPhase(); err != nil {
			fmt.Println(err)
			return
		}
		// exchange: PackFaceGradients into the neighbours' GhostGradients
		if err := d.ElementMaterialPhase(); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("cycles", d.Cycle(), "neighbours", len(d.Neighbours()))
	// Output: cycles 5 neighbours 0
}
