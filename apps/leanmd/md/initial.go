package md

// Rand48 is the 48-bit linear congruential generator of POSIX drand48, so
// that initial velocities match the original code bit for bit.
type Rand48 struct{ state uint64 }

const rand48Mask = 1<<48 - 1

// NewRand48 returns the generator seeded as srand48(seed): the high 32 bits
// of the state are the low 32 bits of the seed, the low 16 bits are 0x330E.
func NewRand48(seed int64) *Rand48 {
	return &Rand48{state: uint64(uint32(seed))<<16 | 0x330E}
}

// Float64 returns the next value in [0, 1), as drand48().
func (r *Rand48) Float64() float64 {
	r.state = (0x5DEECE66D*r.state + 0xB) & rand48Mask
	return float64(r.state) / (1 << 48)
}

// InitialAtoms returns the positions and velocities (3 per atom, x y z) of
// the atoms of cell c at the start: positions on a lattice computed in
// float32 as in the original code, velocities drawn from drand48 seeded
// with the cell id.
func InitialAtoms(cfg Config, g *Geometry, c Cell) (pos, vel []float64) {
	n := cfg.AtomsPerCell
	pos = make([]float64, 3*n)
	vel = make([]float64, 3*n)
	ky, kz := cfg.KAway[1], cfg.KAway[2]
	for i := range n {
		px := float32(1.5) + float32(c[0]*g.CellSize[0]) + float32(((i*ky*kz)/100)*3)
		py := float32(1.5) + float32(c[1]*g.CellSize[1]) + float32((((i*kz)/10)%(10/ky))*3)
		pz := float32(1.5) + float32(c[2]*g.CellSize[2]) + float32((i%(10/kz))*3)
		pos[3*i], pos[3*i+1], pos[3*i+2] = float64(px), float64(py), float64(pz)
	}
	rng := NewRand48(int64(g.CellID(c)))
	for i := range 3 * n {
		vel[i] = (rng.Float64() - 0.5) * 0.02
	}
	return pos, vel
}
