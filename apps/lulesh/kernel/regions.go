package kernel

import "fmt"

// buildRegions assigns elements to material regions the way the
// reference does: runs of consecutive elements, of random lengths, given
// to randomly chosen regions (weighted by (region+1)^Balance), never the
// same region twice in a row. It uses the same pseudo-random sequence as
// the reference's C library so that a serial domain has the reference's
// exact regions, and so the same EOS workload.
func (d *Domain) buildRegions(opts RegionOptions) error {
	if opts.Count == 0 {
		opts = RegionOptions{Count: 1}
	}
	if opts.Count < 1 || opts.Balance < 0 || opts.Cost < 0 {
		return fmt.Errorf("kernel: invalid region options %+v", opts)
	}
	count := opts.Count
	regionOf := make([]int, d.numElem)
	if count > 1 {
		rng := newCRand(opts.Seed)
		binEnd := make([]int, count)
		total := 0
		for r := range count {
			total += intPow(r+1, opts.Balance)
			binEnd[r] = total
		}
		pick := func() int {
			draw := int(rng.next()) % total
			r := 0
			for draw >= binEnd[r] {
				r++
			}
			return (r + int(opts.Seed)) % count
		}
		last := -1
		for next := 0; next < d.numElem; {
			region := pick()
			for region == last {
				region = pick()
			}
			run := runLength(rng)
			for end := next + run; next < end && next < d.numElem; next++ {
				regionOf[next] = region
			}
			last = region
		}
	}
	d.regions = make([][]int32, count)
	for el, r := range regionOf {
		d.regions[r] = append(d.regions[r], int32(el))
	}
	d.regionReps = make([]int, count)
	for r := range count {
		switch {
		case r < count/2:
			d.regionReps[r] = 1
		case r < count-(count+15)/20:
			d.regionReps[r] = 1 + opts.Cost
		default:
			d.regionReps[r] = 10 * (1 + opts.Cost)
		}
	}
	return nil
}

// runLength draws the length of a run of elements of one region.
func runLength(rng *cRand) int {
	bin := int(rng.next()) % 1000
	switch {
	case bin < 773:
		return int(rng.next())%15 + 1
	case bin < 937:
		return int(rng.next())%16 + 16
	case bin < 970:
		return int(rng.next())%32 + 32
	case bin < 974:
		return int(rng.next())%64 + 64
	case bin < 978:
		return int(rng.next())%128 + 128
	case bin < 981:
		return int(rng.next())%256 + 256
	default:
		return int(rng.next())%1537 + 512
	}
}

func intPow(base, exp int) int {
	result := 1
	for range exp {
		result *= base
	}
	return result
}

// cRand reproduces the GNU C library's rand() (the additive feedback
// generator behind random(), degree 31), which the reference uses to lay
// out its regions.
type cRand struct {
	state       [31]uint32
	front, rear int
}

func newCRand(seed uint32) *cRand {
	if seed == 0 {
		seed = 1
	}
	g := &cRand{front: 3, rear: 0}
	g.state[0] = seed
	word := int64(int32(seed))
	for i := 1; i < len(g.state); i++ {
		// 16807 · word mod (2³¹ − 1), by Schrage's method as glibc does.
		hi, lo := word/127773, word%127773
		word = 16807*lo - 2836*hi
		if word < 0 {
			word += 2147483647
		}
		g.state[i] = uint32(word)
	}
	for range 10 * len(g.state) {
		g.next()
	}
	return g
}

// next returns the next value in [0, 2³¹).
func (g *cRand) next() uint32 {
	g.state[g.front] += g.state[g.rear]
	out := g.state[g.front] >> 1
	g.front++
	if g.front == len(g.state) {
		g.front = 0
	}
	g.rear++
	if g.rear == len(g.state) {
		g.rear = 0
	}
	return out
}
