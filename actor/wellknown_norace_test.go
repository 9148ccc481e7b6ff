//go:build !race

package actor

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/internal/protofield"
)

// Encoding a BytesValue into nothing allocates its buffer once, as
// proto.Marshal does (the race detector's instrumentation allocates
// more, hence not under -race).
func TestBytesValueAppendAllocatesOnce(t *testing.T) {
	v := wrapperspb.Bytes(make([]byte, 64))
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = protofield.AppendBytesValue(nil, v) }))
}
