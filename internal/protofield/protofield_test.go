package protofield

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The fields are the bytes proto.Marshal writes for the same values, and
// the sizes their lengths; zero values are left out.
func TestFieldsAreProtobufs(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 1 << 40, ^uint64(0)} {
		want, err := proto.Marshal(wrapperspb.UInt64(v))
		require.NoError(t, err)
		got := AppendVarint([]byte("head"), 1, v)
		require.Equal(t, append([]byte("head"), want...), got, "varint %d", v)
		require.Equal(t, len(want), VarintSize(1, v))
	}
	// Field numbers and values on both sides of the one-byte forms.
	for _, num := range []protowire.Number{1, 2, 15, 16, 17, 2047, 2048, protowire.MaxValidNumber} {
		for _, v := range []uint64{0, 1, 2, 126, 127, 128, 129, 16383, 16384, ^uint64(0)} {
			var want []byte
			if v != 0 {
				want = protowire.AppendVarint(protowire.AppendTag([]byte("head"), num, protowire.VarintType), v)
			} else {
				want = []byte("head")
			}
			require.Equal(t, want, AppendVarint([]byte("head"), num, v), "field %d, varint %d", num, v)
			require.Equal(t, len(want)-4, VarintSize(num, v), "field %d, varint %d", num, v)
		}
	}
	for _, v := range [][]byte{nil, {}, []byte("x"), make([]byte, 300)} {
		want, err := proto.Marshal(wrapperspb.Bytes(v))
		require.NoError(t, err)
		got := AppendBytes([]byte("head"), 1, v)
		require.Equal(t, append([]byte("head"), want...), got, "bytes of %d", len(v))
		require.Equal(t, len(want), BytesSize(1, len(v)))
	}
}
