package actor

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/internal/protofield"
)

// The codec of google.protobuf.BytesValue (one bytes field, the usual
// carrier of raw bytes: the pingpong example's ball) is written by hand
// (internal/protofield): the same bytes as the protobuf runtime's, without
// its reflection (its size pass, its marshal and unmarshal tables,
// reflect.New), which cost a short message more than the rest of its way
// through a PE. TestBytesValueCodecMatchesProto checks it against the
// protobuf runtime.

var bytesValueType = reflect.TypeFor[*wrapperspb.BytesValue]()

// bytesValueCodec returns the hand-written codec of *wrapperspb.BytesValue.
func bytesValueCodec() Codec {
	const name = "google.protobuf.BytesValue"
	return Codec{
		Name: name,
		Append: func(buf []byte, m any) ([]byte, error) {
			v, ok := m.(*wrapperspb.BytesValue)
			if !ok {
				return buf, fmt.Errorf("actor: message %T for a handler of %s", m, name)
			}
			return protofield.AppendBytesValue(buf, v), nil
		},
		Decode: func(data []byte) (any, error) {
			v := new(wrapperspb.BytesValue)
			if !protofield.DecodeBytesValue(data, v, 0) {
				if err := proto.Unmarshal(data, v); err != nil {
					return nil, err
				}
			}
			return v, nil
		},
		NewProto: func() proto.Message { return new(wrapperspb.BytesValue) },
	}
}
