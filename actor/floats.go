package actor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
)

// The float fast path. CBOR writes each float of a []float64 with its own
// header, and decodes it element by element through reflection: several
// times slower than protobuf's packed doubles. So a plain struct (a
// message, or the struct a plain task points to) whose own exported
// fields include []float64 ones is encoded through a shadow struct: the
// same fields under the same names, each []float64 replaced by a []byte
// that holds the floats' little-endian IEEE 754 bits (8 bytes a float,
// one CBOR byte string). The bits are those of the floats, NaN payloads
// and -0 included, so decoding gives back exactly what was encoded; nil
// stays nil and an empty slice stays empty; the same value gives the same
// bytes. Only the struct's own fields take this path: a []float64 deeper
// down (in a nested struct, a map, a slice of structs) is encoded as a
// CBOR array of floats, as exact but slower. A struct with an embedded
// field keeps the plain encoding throughout.

// ErrFloatBytes reports a float field whose bytes are not whole floats.
var ErrFloatBytes = errors.New("actor: float field of a length not a multiple of 8 bytes")

// floatFields is the shadow of a struct type that has []float64 fields.
type floatFields struct {
	shadow reflect.Type
	fields []int  // the struct's exported fields, in order, by index
	floats []bool // per field of the shadow: a []float64 carried as bytes
}

var (
	float64Slice = reflect.TypeFor[[]float64]()
	byteSlice    = reflect.TypeFor[[]byte]()
)

// floatFieldsOf returns the float fast path of struct type t, or nil if t
// has no exported []float64 field (or has an embedded field).
func floatFieldsOf(t reflect.Type) *floatFields {
	if t.Kind() != reflect.Struct {
		return nil
	}
	ff := &floatFields{}
	var shadow []reflect.StructField
	some := false
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue // refused, or transient: not encoded either way
		}
		isFloats := f.Type == float64Slice
		some = some || isFloats
		typ := f.Type
		if isFloats {
			typ = byteSlice
		}
		shadow = append(shadow, reflect.StructField{Name: f.Name, Type: typ})
		ff.fields = append(ff.fields, i)
		ff.floats = append(ff.floats, isFloats)
	}
	if !some {
		return nil
	}
	ff.shadow = reflect.StructOf(shadow)
	return ff
}

// layout marks a layout as having the float fast path: two binaries of
// which only one has it cannot exchange the type.
func (ff *floatFields) layout(l string) string {
	if ff == nil {
		return l
	}
	return l + "(float64 slices as little-endian bytes)"
}

// floatScratch holds the buffers the float fields of a value are written
// into while it is encoded (the encoder copies them to its output).
var floatScratch = sync.Pool{New: func() any { return new([]byte) }}

// encode encodes v, a struct of ff's type, into w through its shadow.
func (ff *floatFields) encode(v reflect.Value, w *bytes.Buffer) error {
	scratch := floatScratch.Get().(*[]byte)
	defer floatScratch.Put(scratch)
	need := 0
	for k, i := range ff.fields {
		if ff.floats[k] {
			need += 8 * v.Field(i).Len()
		}
	}
	if cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	buf := (*scratch)[:need]
	s := reflect.New(ff.shadow)
	e := s.Elem()
	for k, i := range ff.fields {
		if !ff.floats[k] {
			e.Field(k).Set(v.Field(i))
			continue
		}
		f := v.Field(i).Interface().([]float64)
		switch {
		case f == nil:
			continue // nil stays nil (CBOR null)
		case len(f) == 0:
			e.Field(k).SetBytes([]byte{}) // empty stays empty
			continue
		}
		b := buf[: 8*len(f) : 8*len(f)]
		buf = buf[8*len(f):]
		for j, x := range f {
			binary.LittleEndian.PutUint64(b[8*j:], math.Float64bits(x))
		}
		e.Field(k).SetBytes(b)
	}
	return plainEnc.MarshalToBuffer(s.Interface(), w)
}

// fromShadow sets the exported fields of v, a settable struct of ff's
// type, from s, a shadow struct.
func (ff *floatFields) fromShadow(s, v reflect.Value) error {
	for k, i := range ff.fields {
		if !ff.floats[k] {
			v.Field(i).Set(s.Field(k))
			continue
		}
		f, err := bytesToFloats(s.Field(k).Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w", ff.shadow.Field(k).Name, err)
		}
		v.Field(i).Set(reflect.ValueOf(f))
	}
	return nil
}

// bytesToFloats returns the floats whose little-endian bits b holds: nil
// for nil, empty for empty.
func bytesToFloats(b []byte) ([]float64, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%w (%d bytes)", ErrFloatBytes, len(b))
	}
	f := make([]float64, len(b)/8)
	for i := range f {
		f[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return f, nil
}
