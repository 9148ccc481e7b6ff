package scheduler

import (
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/internal/protofield"
)

// Handler messages without a copy of their large bytes fields.
//
// proto.Unmarshal copies every bytes field out of its input (it has no
// option to alias it). For a large message received from another PE, that
// is a copy of the whole payload into fresh memory, although the payload
// is a slice of a buffer the transport gave this PE for good. So a
// message whose payload the PE owns alone (ownPayload) is decoded by
// unmarshalAliasing: its large bytes fields are slices of the payload.
//
// A payload is owned alone when it came from another PE in a batch
// decoded here (its memory is the transport's receive buffer, which
// nothing writes again) and no other envelope of the batch shares it (a
// multicast's payload_from), or, under None, when it was marshalled on
// this PE for one of its own tasks into memory of its own (marshalLocal,
// marshal.go). Under a logging protocol a payload sent on this PE to its
// own tasks is the sender log's copy, which the log keeps (and reuses
// after a checkpoint): it is never owned, and its handler message gets a
// copy. Once delivered, a
// message's payload is read by nothing else (the protocol keeps no
// delivered message), so its handler may keep and write its message as
// it likes.

// aliasMin is the smallest bytes field a handler message aliases.
const aliasMin = 4 << 10

// maxOwnedBytes bounds the payload bytes ownPayload keeps track of: a
// payload recorded and never delivered (dropped as a duplicate by the
// protocol, forwarded, discarded by a rollback) stays in owned, and keeps
// its buffer alive, until delivered or forgotten; above the bound the
// record is forgotten whole, which only costs those messages a copy.
const maxOwnedBytes = 256 << 20

// ownPayload records that the PE owns payload p alone (see above).
func (pe *PE) ownPayload(p []byte) {
	if len(p) < aliasMin {
		return
	}
	if pe.ownedBytes+len(p) > maxOwnedBytes {
		clear(pe.owned)
		pe.ownedBytes = 0
	}
	if pe.owned == nil {
		pe.owned = map[*byte]int{}
	}
	k := &p[0]
	if _, dup := pe.owned[k]; dup {
		return
	}
	pe.owned[k] = len(p)
	pe.ownedBytes += len(p)
}

// takeOwned reports whether p is a payload recorded by ownPayload, and
// forgets it: it is delivered once.
func (pe *PE) takeOwned(p []byte) bool {
	if len(p) < aliasMin {
		return false
	}
	n, ok := pe.owned[&p[0]]
	if !ok {
		return false
	}
	delete(pe.owned, &p[0])
	pe.ownedBytes -= n
	return n == len(p)
}

// aliasable reports whether unmarshalAliasing may set field fd to a
// slice of its input: a singular bytes field without presence (proto3's
// `bytes x = N;`) outside any oneof, whose value is the last one on the
// wire, whatever the others.
func aliasable(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.BytesKind && fd.Cardinality() != protoreflect.Repeated &&
		!fd.HasPresence() && fd.ContainingOneof() == nil && !fd.IsExtension()
}

// aliasField is an aliasable field found on the wire and its last value.
type aliasField struct {
	fd  protoreflect.FieldDescriptor
	v   []byte
	old []byte // the field's memory before decoding
}

// unmarshalAliasing is proto.Unmarshal(b, m), except that m's aliasable
// top-level fields of aliasMin bytes or more are slices of b: the caller
// must own b and never write it again (decodeInto).
func unmarshalAliasing(b []byte, m proto.Message, scratch *[]byte) error {
	return decodeInto(b, m, true, scratch, nil)
}

// decodeInto is proto.Unmarshal(b, m) for a message m that is new or the
// runtime's to reuse (a given message, spares.go), except for m's
// aliasable top-level fields: with alias, those of aliasMin bytes or more
// are slices of b (the caller must own b and never write it again); the
// others are copied into the memory the field held before, when it has
// room (m's old value is garbage: nothing else refers to it), or else
// into fresh memory. The other fields go through proto.Unmarshal, in a
// copy of b without the aliasable ones made in *scratch; input
// proto.Unmarshal rejects goes to it whole, for its error. fields, when
// not nil, sets bytes fields of generated messages without the
// allocation of protoreflect's Set.
func decodeInto(b []byte, m proto.Message, alias bool, scratch *[]byte, fields *bytesFields) error {
	if alias && len(b) < aliasMin {
		alias = false
	}
	if v, ok := m.(*wrapperspb.BytesValue); ok {
		aliasFrom := 0
		if alias {
			aliasFrom = aliasMin
		}
		if protofield.DecodeBytesValue(b, v, aliasFrom) {
			return nil // by hand, without the protobuf runtime
		}
	}
	desc := m.ProtoReflect().Descriptor().Fields()
	var found [2]aliasField
	aliased := found[:0]
	rest := (*scratch)[:0]
	for in := b; len(in) > 0; {
		num, typ, n := protowire.ConsumeTag(in)
		if n < 0 {
			return proto.Unmarshal(b, m)
		}
		l := protowire.ConsumeFieldValue(num, typ, in[n:])
		if l < 0 {
			return proto.Unmarshal(b, m)
		}
		if typ == protowire.BytesType {
			if fd := desc.ByNumber(num); fd != nil && aliasable(fd) {
				v, _ := protowire.ConsumeBytes(in[n:])
				i := 0
				for i < len(aliased) && aliased[i].fd != fd {
					i++
				}
				if i == len(aliased) {
					aliased = append(aliased, aliasField{fd: fd})
				}
				aliased[i].v = v
				in = in[n+l:]
				continue
			}
		}
		rest = append(rest, in[:n+l]...)
		in = in[n+l:]
	}
	*scratch = rest
	if len(aliased) == 0 {
		return proto.Unmarshal(b, m)
	}
	// The fields' memory before proto.Unmarshal resets m.
	for i := range aliased {
		aliased[i].old = fields.get(m, aliased[i].fd)
	}
	if err := proto.Unmarshal(rest, m); err != nil {
		return proto.Unmarshal(b, m)
	}
	for _, a := range aliased {
		switch {
		case alias && len(a.v) >= aliasMin:
			fields.set(m, a.fd, a.v[:len(a.v):len(a.v)])
		case len(a.v) > 0:
			buf := a.old[:0]
			if cap(buf) < len(a.v) {
				buf = nil
			}
			fields.set(m, a.fd, append(buf, a.v...))
		}
	}
	return nil
}

// bytesFields finds the Go struct fields of generated messages' bytes
// fields (by their protobuf tag, as the protobuf runtime does), so that
// decodeInto reads and sets them without protoreflect's allocation per
// Set. It is used from the PE's goroutine only; a nil *bytesFields, or a
// message that is not a generated struct, goes through protoreflect.
type bytesFields struct {
	byType map[reflect.Type]map[protowire.Number]int
}

// field returns m's Go field holding bytes field fd, if it finds one.
func (f *bytesFields) field(m proto.Message, fd protoreflect.FieldDescriptor) (reflect.Value, bool) {
	if f == nil {
		return reflect.Value{}, false
	}
	t := reflect.TypeOf(m)
	nums, ok := f.byType[t]
	if !ok {
		nums = bytesFieldsOf(t)
		if f.byType == nil {
			f.byType = map[reflect.Type]map[protowire.Number]int{}
		}
		f.byType[t] = nums
	}
	i, ok := nums[fd.Number()]
	if !ok {
		return reflect.Value{}, false
	}
	v := reflect.ValueOf(m)
	if v.IsNil() {
		return reflect.Value{}, false
	}
	return v.Elem().Field(i), true
}

// bytesFieldsOf maps the field numbers of the exported []byte fields of
// generated message type t (a pointer to a struct with protobuf tags) to
// their index in the struct.
func bytesFieldsOf(t reflect.Type) map[protowire.Number]int {
	nums := map[protowire.Number]int{}
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nums
	}
	st := t.Elem()
	for i := range st.NumField() {
		sf := st.Field(i)
		tag, ok := sf.Tag.Lookup("protobuf")
		if !ok || !sf.IsExported() || sf.Type != reflect.TypeFor[[]byte]() {
			continue
		}
		parts := strings.Split(tag, ",")
		if len(parts) < 2 || parts[0] != "bytes" {
			continue
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			continue
		}
		nums[protowire.Number(n)] = i
	}
	return nums
}

// get returns the bytes of m's field fd.
func (f *bytesFields) get(m proto.Message, fd protoreflect.FieldDescriptor) []byte {
	if v, ok := f.field(m, fd); ok {
		return v.Bytes()
	}
	return m.ProtoReflect().Get(fd).Bytes()
}

// set sets m's field fd to b.
func (f *bytesFields) set(m proto.Message, fd protoreflect.FieldDescriptor, b []byte) {
	if v, ok := f.field(m, fd); ok {
		v.SetBytes(b)
		return
	}
	if bv, ok := m.(*wrapperspb.BytesValue); ok {
		bv.Value = b // without reflection's allocation
		return
	}
	m.ProtoReflect().Set(fd, protoreflect.ValueOfBytes(b))
}
