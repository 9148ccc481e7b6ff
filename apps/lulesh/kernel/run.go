package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"
)

// ErrNotWholeMesh reports a serial operation on a domain that covers only
// a chunk of the mesh.
var ErrNotWholeMesh = errors.New("kernel: domain is a chunk, not the whole mesh")

// Result is what a run reports, as the reference prints it.
type Result struct {
	Size              int     // mesh edge N (N³ elements)
	Iterations        int     // cycles run
	FinalOriginEnergy float64 // e of element 0
	Symmetry          Symmetry
	Elapsed           time.Duration
	// FOM is the reference's figure of merit:
	// 1000 / (microseconds per zone per iteration), from Elapsed.
	FOM float64
	// Digest is FNV-1a 64 over the little-endian bytes of the final
	// element energies in element order.
	Digest uint64
}

// Symmetry measures how far the final energies are from the problem's
// symmetry: on the plane z = 0, element (x=k, y=j) against (x=j, y=k).
type Symmetry struct {
	MaxAbsDiff   float64
	TotalAbsDiff float64
	MaxRelDiff   float64
}

// Run runs the serial Sedov problem on an n³ mesh, with the reference's
// default regions, to the stop time or maxIterations cycles (<= 0: no
// limit), and reports as the reference does.
func Run(n, maxIterations int) (Result, error) {
	d, err := NewSerialDomain(n)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	for !d.Finished(maxIterations) {
		if err := d.Step(); err != nil {
			return Result{}, fmt.Errorf("cycle %d: %w", d.cycle, err)
		}
	}
	elapsed := time.Since(start)
	return d.Result(elapsed)
}

// Result summarises the final state of a domain that covers the whole
// mesh, given the time the run took.
func (d *Domain) Result(elapsed time.Duration) (Result, error) {
	if !d.coversWholeMesh() {
		return Result{}, ErrNotWholeMesh
	}
	return Summarise(d.chunk.MeshSize, d.cycle, d.e[:d.numElem], elapsed), nil
}

// Summarise reports a finished run of an n³ mesh from its final element
// energies in global element order (x fastest, then y, then z).
func Summarise(n, iterations int, energies []float64, elapsed time.Duration) Result {
	r := Result{
		Size:              n,
		Iterations:        iterations,
		FinalOriginEnergy: energies[0],
		Symmetry:          symmetry(n, energies),
		Elapsed:           elapsed,
		Digest:            EnergyDigest(energies),
	}
	if iterations > 0 && elapsed > 0 {
		microsPerZoneCycle := elapsed.Seconds() * 1e6 / float64(iterations) / float64(n*n*n)
		r.FOM = 1000.0 / microsPerZoneCycle
	}
	return r
}

func (d *Domain) coversWholeMesh() bool {
	n := d.chunk.MeshSize
	return d.chunk.Offset == [3]int{} && d.chunk.Size == [3]int{n, n, n}
}

// symmetry compares e(x=k, y=j, z=0) with e(x=j, y=k, z=0) for j < k.
func symmetry(n int, e []float64) Symmetry {
	var s Symmetry
	for j := range n {
		for k := j + 1; k < n; k++ {
			diff := math.Abs(e[j*n+k] - e[k*n+j])
			s.TotalAbsDiff += diff
			if s.MaxAbsDiff < diff {
				s.MaxAbsDiff = diff
			}
			rel := diff / e[k*n+j]
			if s.MaxRelDiff < rel {
				s.MaxRelDiff = rel
			}
		}
	}
	return s
}

// EnergyDigest is FNV-1a 64 over the little-endian IEEE-754 bytes of the
// energies, in order.
func EnergyDigest(energies []float64) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, e := range energies {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(e))
		h.Write(buf[:])
	}
	return h.Sum64()
}
