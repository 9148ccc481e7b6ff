package protofield

import (
	"testing"

	"github.com/stretchr/testify/require"
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
	for _, v := range [][]byte{nil, {}, []byte("x"), make([]byte, 300)} {
		want, err := proto.Marshal(wrapperspb.Bytes(v))
		require.NoError(t, err)
		got := AppendBytes([]byte("head"), 1, v)
		require.Equal(t, append([]byte("head"), want...), got, "bytes of %d", len(v))
		require.Equal(t, len(want), BytesSize(1, len(v)))
	}
}
