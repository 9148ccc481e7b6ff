package protofield

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// google.protobuf.BytesValue (one bytes field, the usual carrier of raw
// bytes) by hand: the same bytes as proto.Marshal, decoded as
// proto.Unmarshal does, without the protobuf runtime's reflection (its
// size pass, its marshal and unmarshal tables), which costs a short
// message more than the rest of its way through a PE.
// actor.TestBytesValueCodecMatchesProto checks them against the protobuf
// runtime.

// AppendBytesValue appends proto.Marshal(v) to buf: field 1 unless
// empty, then v's unknown fields. A nil v encodes as an empty message.
func AppendBytesValue(buf []byte, v *wrapperspb.BytesValue) []byte {
	if v == nil {
		return buf
	}
	buf = slices.Grow(buf, SizeBytesValue(v)) // one allocation at most
	if len(v.Value) > 0 {
		buf = append(buf, 1<<3|byte(protowire.BytesType))
		buf = protowire.AppendVarint(buf, uint64(len(v.Value)))
		buf = append(buf, v.Value...)
	}
	return append(buf, v.ProtoReflect().GetUnknown()...)
}

// SizeBytesValue is proto.Size(v).
func SizeBytesValue(v *wrapperspb.BytesValue) int {
	if v == nil {
		return 0
	}
	n := len(v.ProtoReflect().GetUnknown())
	if len(v.Value) > 0 {
		n += 1 + protowire.SizeBytes(len(v.Value))
	}
	return n
}

// DecodeBytesValue decodes data into v as proto.Unmarshal would (an
// empty value is nil), if data holds field 1 alone (none, once or more:
// the last one wins) and v has no unknown fields; it reports false, leaving v as it was, for anything
// else (other fields, malformed input), which is the protobuf runtime's
// to decode. v's value is copied into the memory v.Value held, when it
// has room (what v held is garbage: the caller decodes into a new or
// spare message), or, if it has aliasFrom bytes or more and aliasFrom is
// not 0, is a slice of data (the caller owns data and never writes it
// again).
func DecodeBytesValue(data []byte, v *wrapperspb.BytesValue, aliasFrom int) bool {
	if len(v.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	var value []byte
	for in := data; len(in) > 0; {
		if in[0] != 1<<3|byte(protowire.BytesType) {
			return false
		}
		b, n := protowire.ConsumeBytes(in[1:])
		if n < 0 {
			return false
		}
		value, in = b, in[1+n:]
	}
	switch {
	case len(value) == 0:
		v.Value = nil
	case aliasFrom > 0 && len(value) >= aliasFrom:
		v.Value = value[:len(value):len(value)]
	default:
		buf := v.Value[:0]
		if cap(buf) < len(value) {
			buf = make([]byte, 0, len(value))
		}
		v.Value = append(buf, value...)
	}
	return true
}
