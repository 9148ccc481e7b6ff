package actor

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"google.golang.org/protobuf/proto"
)

// Messages and task states travel and are stored as bytes. Three forms:
//
//   - protobuf messages (M implements proto.Message) are encoded by
//     google.golang.org/protobuf, as they always were;
//   - types that implement encoding.BinaryMarshaler and
//     BinaryUnmarshaler encode themselves (the fast path for large
//     arrays: a []float64 written with one copy);
//   - any other plain Go value (structs with exported fields, slices,
//     maps, numbers, strings) is encoded as CBOR (RFC 8949) by
//     github.com/fxamacker/cbor/v2 in its core deterministic form, with
//     floats kept at their width and NaN payloads kept: the same value
//     gives the same bytes on every PE, which replay needs (a re-executed
//     task's sends are compared bit for bit with the logged ones), and
//     decoding gives back the same bits. A struct's own []float64 fields
//     travel as byte strings of the floats' bits (floats.go).

// ErrNotPlain reports a message or task type the plain codec cannot carry
// whole (an unexported field, a func, a channel, an interface).
var ErrNotPlain = errors.New("actor: type cannot be encoded field by field")

// plainEnc and plainDec are the CBOR modes of plain messages and states.
// They are immutable once built, so sharing them is safe.
var plainEnc, plainDec = func() (cbor.UserBufferEncMode, cbor.DecMode) {
	eo := cbor.CoreDetEncOptions()
	// Keep every float at its width and every NaN's bits: what is decoded
	// is exactly what was encoded.
	eo.ShortestFloat = cbor.ShortestFloatNone
	eo.NaNConvert = cbor.NaNConvertNone
	eo.InfConvert = cbor.InfConvertNone
	em, err := eo.UserBufferEncMode()
	if err != nil {
		panic(fmt.Sprintf("actor: CBOR encoding options: %v", err))
	}
	dm, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		MaxArrayElements:  2147483647,
		MaxMapPairs:       2147483647,
	}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("actor: CBOR decoding options: %v", err))
	}
	return em, dm
}()

// Codec encodes and decodes the messages of one handler.
type Codec struct {
	// Name names the message type: the protobuf full name, or the Go
	// type (package path and name) of a plain message.
	Name string
	// Layout describes a plain message's fields (empty for protobuf): two
	// binaries whose layouts differ cannot exchange the message.
	Layout string
	// Append appends the encoding of m to buf. m must be of the handler's
	// message type.
	Append func(buf []byte, m any) ([]byte, error)
	// Decode returns the message encoded in data.
	Decode func(data []byte) (any, error)
	// NewProto, for a protobuf message type only, returns a new empty
	// message: the scheduler decodes into it a payload whose memory it
	// owns alone, its large bytes fields pointing into the payload
	// instead of copies.
	NewProto func() proto.Message
}

// ProtoCodec returns the codec of protobuf messages of type M.
func ProtoCodec[M proto.Message]() Codec {
	if reflect.TypeFor[M]() == bytesValueType {
		return bytesValueCodec()
	}
	var zero M
	desc := zero.ProtoReflect().Descriptor()
	typ := zero.ProtoReflect().Type()
	return Codec{
		Name: string(desc.FullName()),
		Append: func(buf []byte, m any) ([]byte, error) {
			pm, ok := m.(M)
			if !ok {
				return buf, fmt.Errorf("actor: message %T for a handler of %s", m, desc.FullName())
			}
			return proto.MarshalOptions{}.MarshalAppend(buf, pm)
		},
		Decode: func(data []byte) (any, error) {
			m := typ.New().Interface()
			if err := proto.Unmarshal(data, m); err != nil {
				return nil, err
			}
			return m, nil
		},
		NewProto: func() proto.Message { return typ.New().Interface() },
	}
}

// CodecOf returns the codec of messages of type M: protobuf if M is a
// protobuf message, else its own MarshalBinary and UnmarshalBinary if it
// has them (on M, with UnmarshalBinary on *M or M a pointer), else the
// plain CBOR codec. It refuses types the plain codec would not carry whole.
func CodecOf[M any]() (Codec, error) {
	t := reflect.TypeFor[M]()
	if t.Implements(reflect.TypeFor[proto.Message]()) {
		return protoCodecOf(t), nil
	}
	name := typeName(t)
	if t.Implements(binaryMarshaler) && reflect.PointerTo(t).Implements(binaryUnmarshaler) {
		return Codec{
			Name:   name,
			Layout: "binary",
			Append: func(buf []byte, m any) ([]byte, error) {
				v, ok := m.(M)
				if !ok {
					return buf, fmt.Errorf("actor: message %T for a handler of %s", m, name)
				}
				b, err := any(v).(encoding.BinaryMarshaler).MarshalBinary()
				return append(buf, b...), err
			},
			Decode: func(data []byte) (any, error) {
				var m M
				if t.Kind() == reflect.Pointer {
					m = reflect.New(t.Elem()).Interface().(M)
					return m, any(m).(encoding.BinaryUnmarshaler).UnmarshalBinary(data)
				}
				return m, any(&m).(encoding.BinaryUnmarshaler).UnmarshalBinary(data)
			},
		}, nil
	}
	layout, err := plainLayout(t, false)
	if err != nil {
		return Codec{}, err
	}
	if c, ok := floatCodec[M](t, name, layout); ok {
		return c, nil
	}
	return Codec{
		Name:   name,
		Layout: layout,
		Append: func(buf []byte, m any) ([]byte, error) {
			v, ok := m.(M)
			if !ok {
				return buf, fmt.Errorf("actor: message %T for a handler of %s", m, name)
			}
			w := bytes.NewBuffer(buf)
			err := plainEnc.MarshalToBuffer(v, w)
			return w.Bytes(), err
		},
		Decode: func(data []byte) (any, error) {
			var m M
			if err := plainDec.Unmarshal(data, &m); err != nil {
				return nil, fmt.Errorf("actor: decode %s: %w", name, err)
			}
			return m, nil
		},
	}, nil
}

// floatCodec returns the plain codec of M with the float fast path (see
// floatFieldsOf), if M (or the struct it points to) has []float64 fields.
func floatCodec[M any](t reflect.Type, name, layout string) (Codec, bool) {
	ptr := t.Kind() == reflect.Pointer
	st := t
	if ptr {
		st = t.Elem()
	}
	ff := floatFieldsOf(st)
	if ff == nil {
		return Codec{}, false
	}
	return Codec{
		Name:   name,
		Layout: ff.layout(layout),
		Append: func(buf []byte, m any) ([]byte, error) {
			v, ok := m.(M)
			if !ok {
				return buf, fmt.Errorf("actor: message %T for a handler of %s", m, name)
			}
			rv := reflect.ValueOf(v)
			w := bytes.NewBuffer(buf)
			if ptr && rv.IsNil() {
				err := plainEnc.MarshalToBuffer(v, w) // null, as without the fast path
				return w.Bytes(), err
			}
			if ptr {
				rv = rv.Elem()
			}
			err := ff.encode(rv, w)
			return w.Bytes(), err
		},
		Decode: func(data []byte) (any, error) {
			var m M
			if len(data) == 1 && data[0] == 0xf6 { // null: a nil pointer, or the zero value
				return m, nil
			}
			shadow := reflect.New(ff.shadow)
			if err := plainDec.Unmarshal(data, shadow.Interface()); err != nil {
				return nil, fmt.Errorf("actor: decode %s: %w", name, err)
			}
			out := reflect.New(st)
			if err := ff.fromShadow(shadow.Elem(), out.Elem()); err != nil {
				return nil, fmt.Errorf("actor: decode %s: %w", name, err)
			}
			if ptr {
				return out.Interface().(M), nil
			}
			return out.Elem().Interface().(M), nil
		},
	}, true
}

// protoCodecOf is ProtoCodec for a type known by reflection.
func protoCodecOf(t reflect.Type) Codec {
	if t == bytesValueType {
		return bytesValueCodec()
	}
	zero := reflect.Zero(t).Interface().(proto.Message)
	desc := zero.ProtoReflect().Descriptor()
	typ := zero.ProtoReflect().Type()
	return Codec{
		Name: string(desc.FullName()),
		Append: func(buf []byte, m any) ([]byte, error) {
			pm, ok := m.(proto.Message)
			if !ok || reflect.TypeOf(m) != t {
				return buf, fmt.Errorf("actor: message %T for a handler of %s", m, desc.FullName())
			}
			return proto.MarshalOptions{}.MarshalAppend(buf, pm)
		},
		Decode: func(data []byte) (any, error) {
			m := typ.New().Interface()
			if err := proto.Unmarshal(data, m); err != nil {
				return nil, err
			}
			return m, nil
		},
		NewProto: func() proto.Message { return typ.New().Interface() },
	}
}

var (
	binaryMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binaryUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

// typeName names a Go type with its package path ("*example.com/ring.Token").
func typeName(t reflect.Type) string {
	prefix := ""
	for t.Kind() == reflect.Pointer && t.Name() == "" {
		prefix += "*"
		t = t.Elem()
	}
	if t.PkgPath() != "" {
		return prefix + t.PkgPath() + "." + t.Name()
	}
	return prefix + t.String()
}

// transientTag marks an unexported field of a plain task that is not part
// of its state (see NewCollection).
const transientTag = "transient"

// plainLayout checks that the plain codec carries every part of a value of
// type t, and describes its layout (field names and types, recursively),
// so that two binaries can compare the layouts they exchange. With
// transient, the fields of the struct t points to may be tagged
// actor:"transient" (a task's, see NewCollection).
func plainLayout(t reflect.Type, transient bool) (string, error) {
	var b strings.Builder
	d := describer{b: &b, seen: map[reflect.Type]bool{}}
	if transient && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		d.transient = t.Elem()
	}
	err := d.describe(t, typeName(t))
	return b.String(), err
}

type describer struct {
	b         *strings.Builder
	seen      map[reflect.Type]bool
	transient reflect.Type // the struct whose fields may be transient
}

func (d describer) describe(t reflect.Type, path string) error {
	b := d.b
	if t.Implements(binaryMarshaler) && reflect.PointerTo(t).Implements(binaryUnmarshaler) {
		fmt.Fprintf(b, "%s(binary)", typeName(t))
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		b.WriteString(t.Kind().String())
		return nil
	case reflect.Pointer:
		b.WriteByte('*')
		return d.describe(t.Elem(), path)
	case reflect.Slice:
		b.WriteString("[]")
		return d.describe(t.Elem(), path+"[]")
	case reflect.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		return d.describe(t.Elem(), path+"[]")
	case reflect.Map:
		b.WriteString("map[")
		if err := d.describe(t.Key(), path+"{key}"); err != nil {
			return err
		}
		b.WriteByte(']')
		return d.describe(t.Elem(), path+"{}")
	case reflect.Struct:
		if d.seen[t] {
			b.WriteString(typeName(t))
			return nil
		}
		d.seen[t] = true
		b.WriteByte('{')
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				if t == d.transient && f.Tag.Get("actor") == transientTag {
					continue
				}
				hint := ""
				if t == d.transient {
					hint = `, or tag it actor:"transient" if the constructor sets it and it is no part of the task's state`
				}
				return fmt.Errorf("%w: %s.%s is unexported, so it would be lost (export it%s)",
					ErrNotPlain, path, f.Name, hint)
			}
			if f.Tag.Get("cbor") != "" || f.Tag.Get("json") != "" {
				return fmt.Errorf("%w: %s.%s has a cbor or json tag; plain fields are encoded whole, by name, untagged",
					ErrNotPlain, path, f.Name)
			}
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(f.Name)
			b.WriteByte(' ')
			if err := d.describe(f.Type, path+"."+f.Name); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	return fmt.Errorf("%w: %s is of kind %v (give the type MarshalBinary and UnmarshalBinary, or use a protobuf message)",
		ErrNotPlain, path, t.Kind())
}
