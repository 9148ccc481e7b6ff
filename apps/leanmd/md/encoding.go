package md

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The encoding of float64 arrays in messages: each value as the 8
// little-endian bytes of its IEEE-754 bits, in order. Decoding gives back
// the same bits.
//
// The loops advance their slices by what each step takes, a form in which
// the compiler proves every index in range: no bounds check per value
// (go build -gcflags=-d=ssa/check_bce).

// AppendFloats appends the encoding of v to dst.
func AppendFloats(dst []byte, v []float64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, 8*len(v))...)
	out := dst[start:]
	for len(v) > 0 && len(out) >= 8 {
		binary.LittleEndian.PutUint64(out, math.Float64bits(v[0]))
		out, v = out[8:], v[1:]
	}
	return dst
}

// DecodeFloats overwrites dst[:len(src)/8] with the values encoded in src
// and returns that slice (dst grown if too short). The length of src must
// be a multiple of 8.
func DecodeFloats(dst []float64, src []byte) ([]float64, error) {
	if len(src)%8 != 0 {
		return nil, fmt.Errorf("md: %d bytes of float64 values, not a multiple of 8", len(src))
	}
	n := len(src) / 8
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	for d := dst; len(d) > 0 && len(src) >= 8; d, src = d[1:], src[8:] {
		d[0] = math.Float64frombits(binary.LittleEndian.Uint64(src))
	}
	return dst, nil
}

// SumEncodedForces is SumForces over contributions encoded by
// AppendFloats: the same additions in the same order, so the same bits.
// Every contribution holds the encoding of len(total) values.
func SumEncodedForces(total []float64, contributions [][]byte) {
	clear(total)
	for slot, c := range contributions {
		if len(c) != 8*len(total) {
			panic(fmt.Sprintf("md: force contribution of slot %d has %d bytes, cell has %d values", slot, len(c), len(total)))
		}
		for t := total; len(t) > 0 && len(c) >= 8; t, c = t[1:], c[8:] {
			t[0] += math.Float64frombits(binary.LittleEndian.Uint64(c))
		}
	}
}
