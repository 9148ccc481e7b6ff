package actor

import (
	"fmt"
	"math"
)

// Value is a reduction contribution or result: a vector of floats, a vector
// of integers, or bytes for a custom reducer.
type Value struct {
	Floats []float64
	Ints   []int64
	Bytes  []byte
}

// Reducer combines two values. Built-in reducers work element-wise on
// Floats and Ints; custom ones are declared with Job.CustomReducer.
type Reducer struct {
	name    string
	combine func(a, b Value) Value
}

// Name returns the reducer's name, as carried on the wire.
func (r Reducer) Name() string { return r.name }

// Combine returns the combination of a (lower indices) and b (higher).
func (r Reducer) Combine(a, b Value) Value { return r.combine(a, b) }

// The built-in reducers.
var (
	Sum = Reducer{name: "sum", combine: elementwise(func(x, y float64) float64 { return x + y }, func(x, y int64) int64 { return x + y })}
	Min = Reducer{name: "min", combine: elementwise(math.Min, func(x, y int64) int64 { return min(x, y) })}
	Max = Reducer{name: "max", combine: elementwise(math.Max, func(x, y int64) int64 { return max(x, y) })}
)

func elementwise(f func(x, y float64) float64, i func(x, y int64) int64) func(a, b Value) Value {
	return func(a, b Value) Value {
		if len(a.Floats) != len(b.Floats) || len(a.Ints) != len(b.Ints) {
			panic(fmt.Sprintf("actor: reduction of values of different lengths (%d/%d floats, %d/%d ints)",
				len(a.Floats), len(b.Floats), len(a.Ints), len(b.Ints)))
		}
		out := Value{Floats: make([]float64, len(a.Floats)), Ints: make([]int64, len(a.Ints))}
		for k := range a.Floats {
			out.Floats[k] = f(a.Floats[k], b.Floats[k])
		}
		for k := range a.Ints {
			out.Ints[k] = i(a.Ints[k], b.Ints[k])
		}
		return out
	}
}
