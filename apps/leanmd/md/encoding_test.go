package md

import (
	"math"
	"slices"
	"testing"
)

// TestFloatEncodingRoundTrip checks that decoding gives back every bit,
// special values included, and that a length not a multiple of 8 is an
// error.
func TestFloatEncodingRoundTrip(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.Float64frombits(0x7ff8000000000001), 3.8503015426600461e-15}
	enc := AppendFloats([]byte{0xaa}, values)
	if len(enc) != 1+8*len(values) || enc[0] != 0xaa {
		t.Fatalf("encoding of %d values is %d bytes after the prefix", len(values), len(enc)-1)
	}
	back, err := DecodeFloats(make([]float64, 2), enc[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(back, values) {
		t.Errorf("decoded %v, want %v", back, values)
	}
	if _, err := DecodeFloats(nil, enc); err == nil {
		t.Error("decoded 81 bytes without error")
	}
}

// TestSumEncodedForcesMatchesSumForces checks the encoded sum against
// SumForces bit for bit, and that a contribution of the wrong length
// panics.
func TestSumEncodedForcesMatchesSumForces(t *testing.T) {
	rng := NewRand48(3)
	contributions := make([][]float64, 5)
	encoded := make([][]byte, 5)
	for s := range contributions {
		for range 12 {
			contributions[s] = append(contributions[s], (rng.Float64()-0.5)*math.Pow(10, float64(s*4-20)))
		}
		encoded[s] = AppendFloats(nil, contributions[s])
	}
	want, got := make([]float64, 12), make([]float64, 12)
	SumForces(want, contributions)
	SumEncodedForces(got, encoded)
	if !bitsEqual(got, want) {
		t.Errorf("encoded sum %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("contribution of the wrong length summed without a panic")
		}
	}()
	SumEncodedForces(got, [][]byte{slices.Clone(encoded[0][:8])})
}
