package appkit

import (
	"slices"
	"strconv"

	"github.com/gochare/gochare/actor"
)

// ConcatBytes combines two reduction values by concatenating their bytes,
// a's first. Declared as a custom reducer (actor.Job.CustomReducer), it
// gathers one record per task; since the runtime combines over a fixed
// tree of linear indices, the records come in linear index order, and a
// reader that places each record by an index it carries does not depend
// on that order at all.
func ConcatBytes(a, b actor.Value) actor.Value {
	return actor.Value{Bytes: slices.Concat(a.Bytes, b.Bytes)}
}

// FormatExact writes v with 17 significant digits ('g' format), enough to
// read the same float64 back: the form of the values the apps compare with
// their reference tables.
func FormatExact(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }
