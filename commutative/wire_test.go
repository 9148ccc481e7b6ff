package commutative

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPathBytesRoundTrip(t *testing.T) {
	inner := Child(MessageID{Sender: 7, SRN: 3}, 1)
	outer := Child(MessageID{Sender: 9, SRN: 12, CPI: inner}, 4)
	for _, p := range []Path{{}, inner, outer} {
		got, err := ParsePath(p.Bytes())
		require.NoError(t, err)
		require.Equal(t, p, got)
		require.Equal(t, p.String(), got.String())
	}
	for _, bad := range [][]byte{{0x80}, {1, 2, 9, 1}, append(outer.Bytes(), 0)} {
		_, err := ParsePath(bad)
		require.ErrorIs(t, err, ErrBadPath)
	}
}

func FuzzParsePath(f *testing.F) {
	f.Add(Child(MessageID{Sender: 9, SRN: 12, CPI: Child(MessageID{Sender: 1, SRN: 2}, 3)}, 4).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePath(b)
		if err != nil {
			return
		}
		_ = p.String()
		p.Trigger()
	})
}
