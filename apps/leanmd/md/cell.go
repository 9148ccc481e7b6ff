package md

import (
	"encoding/binary"
	"fmt"
	"math"
)

// SumForces overwrites total with the sum of the force contributions of
// the computes that touch a cell, added in slot order (so the result does
// not depend on the order in which they arrived). Every contribution has
// the length of total.
func SumForces(total []float64, contributions [][]float64) {
	clear(total)
	for slot, c := range contributions {
		if len(c) != len(total) {
			panic(fmt.Sprintf("md: force contribution of slot %d has %d values, cell has %d", slot, len(c), len(total)))
		}
		for k := range total {
			total[k] += c[k]
		}
	}
}

// KineticEnergy returns Σ ½·m·|v|²·1e10 over the atoms, in atom order.
func KineticEnergy(vel []float64) float64 {
	halfMass := 0.5 * AtomMass
	energy := 0.0
	for i := 0; i+2 < len(vel); i += 3 {
		vx, vy, vz := vel[i], vel[i+1], vel[i+2]
		dot := float64(vx*vx) + float64(vy*vy) + float64(vz*vz)
		energy += float64(halfMass*dot) * 1e10
	}
	return energy
}

// Advance applies one time step to the atoms: a = F/m, v += a·1e-20,
// each component of v clamped to [−MaxVelocity, MaxVelocity], x += v.
func Advance(pos, vel, force []float64) {
	if len(pos) != len(vel) || len(pos) != len(force) {
		panic(fmt.Sprintf("md: advance of %d positions, %d velocities, %d forces", len(pos), len(vel), len(force)))
	}
	for k := range pos {
		acc := force[k] / AtomMass
		v := vel[k] + float64(acc*1e-20)
		if math.Abs(v) > MaxVelocity {
			v = math.Copysign(MaxVelocity, v)
		}
		vel[k] = v
		pos[k] += v
	}
}

// MigrantStride is the number of values per atom of a migration list:
// position x y z, then velocity x y z.
const MigrantStride = 6

// displacement returns by how many cells (−2 to 2) a coordinate has left
// the cell starting at base of size size, as in the original code.
func displacement(p, base, size float64) int {
	switch {
	case p < base-size:
		return -2
	case p < base:
		return -1
	case p > base+2*size:
		return 2
	case p > base+size:
		return 1
	}
	return 0
}

// Emigrate removes from cell c the atoms that have left it and appends each
// one, its position wrapped into the box, to outgoing[slot] for the
// neighbour slot it moves to (outgoing has one list per slot; lists are
// appended to, in atom order). The remaining atoms keep their order.
// It returns the new positions and velocities (the input slices,
// truncated) and the number of atoms that left.
func (g *Geometry) Emigrate(c Cell, pos, vel []float64, outgoing [][]float64) (keptPos, keptVel []float64, left int) {
	var base, size, box [3]float64
	for d := range 3 {
		size[d] = float64(g.CellSize[d])
		base[d] = float64(c[d] * g.CellSize[d])
		box[d] = float64(g.CellSize[d] * g.Cells[d])
	}
	kept := 0
	for i := 0; i+2 < len(pos); i += 3 {
		var off Offset
		for d := range 3 {
			off[d] = displacement(pos[i+d], base[d], size[d])
		}
		if off == (Offset{}) {
			copy(pos[kept:kept+3], pos[i:i+3])
			copy(vel[kept:kept+3], vel[i:i+3])
			kept += 3
			continue
		}
		var p [3]float64
		for d := range 3 {
			p[d] = pos[i+d]
			if p[d] < 0 {
				p[d] += box[d]
			}
			if p[d] > box[d] {
				p[d] -= box[d]
			}
		}
		slot := g.slotOf(off)
		outgoing[slot] = append(outgoing[slot], p[0], p[1], p[2], vel[i], vel[i+1], vel[i+2])
		left++
	}
	return pos[:kept], vel[:kept], left
}

// slotOf returns the neighbour slot of an offset within the shell.
func (g *Geometry) slotOf(off Offset) int {
	k := g.Neighbours[len(g.Neighbours)-1] // (KX, KY, KZ)
	return ((off[0]+k[0])*(2*k[1]+1)+off[1]+k[1])*(2*k[2]+1) + off[2] + k[2]
}

// Immigrate appends the atoms of migration lists (MigrantStride values per
// atom) to a cell's positions and velocities, list after list in the order
// given (slot order at the receiver).
func Immigrate(pos, vel []float64, lists [][]float64) ([]float64, []float64) {
	for slot, l := range lists {
		if len(l)%MigrantStride != 0 {
			panic(fmt.Sprintf("md: migration list of slot %d has %d values, not a multiple of %d", slot, len(l), MigrantStride))
		}
		for a := 0; a < len(l); a += MigrantStride {
			pos = append(pos, l[a], l[a+1], l[a+2])
			vel = append(vel, l[a+3], l[a+4], l[a+5])
		}
	}
	return pos, vel
}

// AppendState appends the digest bytes of a cell's atoms to dst: for each
// atom in order, position x y z then velocity x y z, each as the
// little-endian IEEE-754 bits of the float64.
func AppendState(dst []byte, pos, vel []float64) []byte {
	for i := 0; i+2 < len(pos); i += 3 {
		for _, v := range [6]float64{pos[i], pos[i+1], pos[i+2], vel[i], vel[i+1], vel[i+2]} {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		}
	}
	return dst
}
