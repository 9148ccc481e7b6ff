package lulesh

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"
	"unsafe"

	"github.com/gochare/gochare/apps/lulesh/kernel"
)

// kernel.Domain has no serialisation of its own, and its state is in
// unexported fields. Its evolving state is, however, made only of float64
// and int fields and []float64 slices (possibly inside nested structs);
// everything else (node lists, neighbour tables, regions) is rebuilt
// identically by kernel.NewDomain from the chunk. So a chunk is packed as
// the values of those fields, found by reflection, and unpacked into a
// domain freshly built for the same chunk, copying every slice in place
// (the kernel carves several node fields out of one allocation; copying
// keeps that layout).
//
// The packed form starts with a fingerprint of the field layout (names
// and kinds, in declaration order): a state packed by a kernel whose
// Domain has different fields is refused rather than misread.

// errDomainLayout reports a packed domain from a different kernel layout
// or chunk.
var errDomainLayout = errors.New("lulesh: packed domain does not fit this kernel's Domain")

// domainField is one packed field: its path and where it is.
type domainField struct {
	path  string
	kind  reflect.Kind // Float64, Int or Slice (of float64)
	index []int        // reflect field index path from Domain
}

// domainFields lists the packed fields of kernel.Domain, in declaration
// order (depth first).
var domainFields, domainLayout = func() ([]domainField, uint64) {
	var fields []domainField
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			path := prefix + f.Name
			at := append(append([]int(nil), index...), i)
			switch {
			case f.Type.Kind() == reflect.Float64 || f.Type.Kind() == reflect.Int:
				fields = append(fields, domainField{path: path, kind: f.Type.Kind(), index: at})
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Float64:
				fields = append(fields, domainField{path: path, kind: reflect.Slice, index: at})
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, path+".", at)
			}
		}
	}
	walk(reflect.TypeFor[kernel.Domain](), "", nil)
	h := fnv.New64a()
	for _, f := range fields {
		fmt.Fprintf(h, "%s:%v;", f.path, f.kind)
	}
	return fields, h.Sum64()
}()

// fieldPointer returns a pointer to field f of the domain d points to
// (unexported fields can be read but not written through reflect alone).
func fieldPointer(d *kernel.Domain, f domainField) unsafe.Pointer {
	v := reflect.ValueOf(d).Elem().FieldByIndex(f.index)
	return unsafe.Pointer(v.UnsafeAddr())
}

// appendDomain appends the packed state of d.
func appendDomain(out []byte, d *kernel.Domain) []byte {
	out = binary.LittleEndian.AppendUint64(out, domainLayout)
	for _, f := range domainFields {
		p := fieldPointer(d, f)
		switch f.kind {
		case reflect.Float64:
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(*(*float64)(p)))
		case reflect.Int:
			out = binary.LittleEndian.AppendUint64(out, uint64(*(*int)(p)))
		case reflect.Slice:
			values := *(*[]float64)(p)
			out = binary.LittleEndian.AppendUint64(out, uint64(len(values)))
			for _, v := range values {
				out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
			}
		}
	}
	return out
}

// readDomain restores into d, built by kernel.NewDomain for the same
// chunk, a state packed by appendDomain, and returns the rest of data.
func readDomain(data []byte, d *kernel.Domain) ([]byte, error) {
	next := func() (uint64, bool) {
		if len(data) < 8 {
			return 0, false
		}
		v := binary.LittleEndian.Uint64(data)
		data = data[8:]
		return v, true
	}
	layout, ok := next()
	if !ok || layout != domainLayout {
		return nil, fmt.Errorf("%w: layout %016x, this kernel's is %016x", errDomainLayout, layout, domainLayout)
	}
	for _, f := range domainFields {
		p := fieldPointer(d, f)
		v, ok := next()
		if !ok {
			return nil, fmt.Errorf("%w: truncated at field %s", errDomainLayout, f.path)
		}
		switch f.kind {
		case reflect.Float64:
			*(*float64)(p) = math.Float64frombits(v)
		case reflect.Int:
			*(*int)(p) = int(int64(v))
		case reflect.Slice:
			n := int(v)
			if n < 0 || n > len(data)/8 {
				return nil, fmt.Errorf("%w: field %s has %d values, %d bytes left", errDomainLayout, f.path, v, len(data))
			}
			values := (*[]float64)(p)
			if len(*values) != n {
				if *values != nil {
					return nil, fmt.Errorf("%w: field %s has %d values, this chunk's has %d", errDomainLayout, f.path, n, len(*values))
				}
				// Scratch space the kernel allocates on first use.
				*values = make([]float64, n)
			}
			for i := range *values {
				(*values)[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
			}
			data = data[8*n:]
		}
	}
	return data, nil
}
