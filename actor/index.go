package actor

import (
	"fmt"
	"strings"
)

// MaxDims is the largest number of dimensions of an index space.
const MaxDims = 6

// Index is a point of a collection's index space. Only the first
// len(Shape) coordinates are used; the rest are zero.
type Index [MaxDims]int32

// Idx builds an Index from its coordinates.
func Idx(coords ...int) Index {
	if len(coords) > MaxDims {
		panic(fmt.Sprintf("actor: index with %d coordinates, at most %d", len(coords), MaxDims))
	}
	var i Index
	for d, c := range coords {
		i[d] = int32(c)
	}
	return i
}

// String formats the index as "(x,y,z)" over its first n non-trailing dims.
func (i Index) String() string {
	n := MaxDims
	for n > 1 && i[n-1] == 0 {
		n--
	}
	var b strings.Builder
	b.WriteByte('(')
	for d := 0; d < n; d++ {
		if d > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i[d])
	}
	b.WriteByte(')')
	return b.String()
}

// Shape gives the extent of an index space in each of its 1 to 6 dimensions.
type Shape []int

// Dims returns the number of dimensions.
func (s Shape) Dims() int { return len(s) }

// Size returns the number of points of the index space.
func (s Shape) Size() int {
	n := 1
	for _, e := range s {
		n *= e
	}
	return n
}

// Validate reports whether the shape is usable.
func (s Shape) Validate() error {
	if len(s) < 1 || len(s) > MaxDims {
		return fmt.Errorf("actor: shape has %d dimensions, want 1 to %d", len(s), MaxDims)
	}
	for d, e := range s {
		if e < 1 {
			return fmt.Errorf("actor: shape extent %d in dimension %d, want at least 1", e, d)
		}
	}
	return nil
}

// Contains reports whether i lies in the index space.
func (s Shape) Contains(i Index) bool {
	for d := 0; d < MaxDims; d++ {
		if d < len(s) {
			if i[d] < 0 || int(i[d]) >= s[d] {
				return false
			}
		} else if i[d] != 0 {
			return false
		}
	}
	return true
}

// Linear returns the row-major position of i (the last dimension varies
// fastest). The caller ensures s.Contains(i).
func (s Shape) Linear(i Index) int {
	lin := 0
	for d, e := range s {
		lin = lin*e + int(i[d])
	}
	return lin
}

// At is the inverse of Linear.
func (s Shape) At(lin int) Index {
	var i Index
	for d := len(s) - 1; d >= 0; d-- {
		i[d] = int32(lin % s[d])
		lin /= s[d]
	}
	return i
}

// Wrap returns i with every coordinate reduced modulo the shape
// (periodic boundaries).
func (s Shape) Wrap(i Index) Index {
	for d, e := range s {
		c := int(i[d]) % e
		if c < 0 {
			c += e
		}
		i[d] = int32(c)
	}
	return i
}

// Map gives the PE on which the element at linear position lin of an index
// space of size n starts, for a job of numPEs PEs. It must be a pure
// function: every PE evaluates it and must get the same answer.
type Map func(lin, n, numPEs int) int

// BlockMap places contiguous blocks of linear positions on each PE.
func BlockMap(lin, n, numPEs int) int {
	return int(int64(lin) * int64(numPEs) / int64(n))
}

// RoundRobinMap places linear position lin on PE lin mod numPEs.
func RoundRobinMap(lin, n, numPEs int) int {
	return lin % numPEs
}
