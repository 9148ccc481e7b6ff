package actor

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/internal/protofield"
)

// The hand-written codec of BytesValue gives the bytes proto.Marshal
// gives and decodes what proto.Unmarshal decodes, nil and empty values
// alike; input it does not take (other fields, malformed bytes) it leaves
// to the protobuf runtime, which the codec's Decode then uses.
func TestBytesValueCodecMatchesProto(t *testing.T) {
	codec, err := CodecOf[*wrapperspb.BytesValue]()
	require.NoError(t, err)
	require.Equal(t, "google.protobuf.BytesValue", codec.Name)
	require.Equal(t, codec.Name, ProtoCodec[*wrapperspb.BytesValue]().Name)
	rng := rand.New(rand.NewPCG(1, 2))
	values := []*wrapperspb.BytesValue{{}, {Value: []byte{}}, wrapperspb.Bytes([]byte{0}), wrapperspb.Bytes(make([]byte, 300))}
	for range 200 {
		b := make([]byte, rng.IntN(70000))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		values = append(values, wrapperspb.Bytes(b))
	}
	withUnknown := wrapperspb.Bytes([]byte("abc"))
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 9))
	values = append(values, withUnknown)
	for _, v := range values {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
		require.NoError(t, err)
		got, err := codec.Append([]byte("prefix"), v)
		require.NoError(t, err)
		require.Equal(t, want, got[len("prefix"):])
		require.Equal(t, len(want), protofield.SizeBytesValue(v))

		back, err := codec.Decode(want)
		require.NoError(t, err)
		require.True(t, proto.Equal(v, back.(*wrapperspb.BytesValue)))
	}

	// Wire forms beyond Marshal's: the field repeated (the last wins),
	// present and empty, absent (both nil), other fields, malformed.
	inputs := [][]byte{
		nil,
		{0x0a, 0},
		{0x0a, 2, 'a', 'b', 0x0a, 1, 'c'},
		{0x0a, 1, 'a', 0x0a, 0},
		{0x10, 1, 0x0a, 1, 'a'},
		{0x8a, 0x00, 0},
		{0x0a, 5, 'a'},
		{0x0a},
		{0x0b},
	}
	for _, in := range inputs {
		want := new(wrapperspb.BytesValue)
		wantErr := proto.Unmarshal(in, want)
		for _, aliasFrom := range []int{0, 1} {
			got := wrapperspb.Bytes([]byte("old value, reused"))
			if !protofield.DecodeBytesValue(in, got, aliasFrom) {
				got = new(wrapperspb.BytesValue)
				require.Equal(t, wantErr, proto.Unmarshal(in, got), "%x", in)
			}
			if wantErr == nil {
				require.True(t, proto.Equal(want, got), "%x", in)
				require.Equal(t, want.Value == nil, got.Value == nil, "%x: nil or not", in)
			}
		}
		dec, err := codec.Decode(in)
		if wantErr != nil {
			require.Error(t, err, "%x", in)
			continue
		}
		require.NoError(t, err)
		require.True(t, proto.Equal(want, dec.(*wrapperspb.BytesValue)), "%x", in)
	}
}

// BenchmarkBytesValueCodec encodes and decodes a 64-byte BytesValue with
// the hand-written codec (codec=hand) and with the protobuf runtime
// (codec=proto), as a PE sends and receives the pingpong example's ball.
func BenchmarkBytesValueCodec(b *testing.B) {
	v := wrapperspb.Bytes(make([]byte, 64))
	hand, err := CodecOf[*wrapperspb.BytesValue]()
	require.NoError(b, err)
	run := func(b *testing.B, appendTo func([]byte) []byte, decode func([]byte)) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = appendTo(buf[:0])
			decode(buf)
		}
		b.ReportMetric(float64(len(buf)), "B/msg")
	}
	b.Run("codec=hand", func(b *testing.B) {
		into := new(wrapperspb.BytesValue)
		run(b, func(buf []byte) []byte {
			buf, _ = hand.Append(buf, v)
			return buf
		}, func(data []byte) { protofield.DecodeBytesValue(data, into, 0) })
	})
	b.Run("codec=proto", func(b *testing.B) {
		into := new(wrapperspb.BytesValue)
		run(b, func(buf []byte) []byte {
			buf, _ = proto.MarshalOptions{}.MarshalAppend(buf, v)
			return buf
		}, func(data []byte) { _ = proto.Unmarshal(data, into) })
	})
}
