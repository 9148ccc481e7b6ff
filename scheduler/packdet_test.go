package scheduler

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// Determinants packed and unpacked come back as they were, whatever
// their values (differences of every sign and size, paths, stamps), and
// the packed length is what sizePackedDeterminants says.
func TestPackedDeterminantsRoundTrip(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 17))
		var ds []logging.Determinant
		for range r.IntN(20) {
			creator, seq := randomStamp(r)
			ds = append(ds, logging.Determinant{Message: randomID(r, 0),
				Receiver: logging.TaskID(r.Uint64() >> r.IntN(64)), RSN: r.Uint64() >> r.IntN(64), Creator: creator, Seq: seq})
		}
		b := appendPackedDeterminants(nil, ds)
		require.Len(t, b, sizePackedDeterminants(ds), "seed %d", seed)
		raw, err := unpackDeterminants(nil, b)
		require.NoError(t, err, "seed %d", seed)
		require.Len(t, raw, len(ds))
		for i := range raw {
			d, err := determinantFromRaw(&raw[i])
			require.NoError(t, err)
			require.Equal(t, ds[i], d, "seed %d, determinant %d", seed, i)
		}
		for cut := range len(b) {
			// A truncated field is an error or fewer determinants, never
			// a panic.
			_, _ = unpackDeterminants(nil, b[:cut])
		}
	}
}
