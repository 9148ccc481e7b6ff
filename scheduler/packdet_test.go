package scheduler

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gochare/gochare/logging"
)

// Determinants packed and unpacked come back as they were, whatever
// their values (differences of every sign and size, paths, stamps), and
// as the packed_determinants field of an envelope they make the field
// protobuf reads, whatever the room appendPackedField's guess left for
// its length.
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
		field := appendPackedField(nil, ds)
		num, typ, n := protowire.ConsumeTag(field)
		require.Equal(t, protowire.Number(envPacked), num)
		require.Equal(t, protowire.BytesType, typ)
		value, m := protowire.ConsumeBytes(field[n:])
		require.Equal(t, len(field), n+m, "seed %d", seed)
		require.True(t, bytes.Equal(b, value), "seed %d", seed)
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

// unpackInto, the decoder's one-pass conversion, gives what
// unpackDeterminants and determinantFromRaw give, on runs of one path
// (which it parses once) and on paths that come back after others, and
// fails where they fail.
func TestUnpackIntoAgreesWithRaw(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 23))
		var ds []logging.Determinant
		var paths []logging.MessageID
		for range r.IntN(30) {
			id := randomID(r, 0)
			if len(paths) > 0 && r.IntN(2) == 0 {
				// Another message of a region already seen.
				id.CPI = paths[r.IntN(len(paths))].CPI
			}
			paths = append(paths, id)
			creator, seq := randomStamp(r)
			ds = append(ds, logging.Determinant{Message: id,
				Receiver: logging.TaskID(r.Uint64() >> r.IntN(64)), RSN: r.Uint64() >> r.IntN(64), Creator: creator, Seq: seq})
		}
		b := appendPackedDeterminants(nil, ds)
		prefix := []logging.Determinant{{RSN: 7}}
		got, err := unpackInto(prefix, b)
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, append(prefix[:1:1], ds...), got, "seed %d", seed)
		for cut := range len(b) {
			// A truncated or altered field fails as the raw reading does
			// (or reads the same determinants), never panics, and leaves
			// out as it was on an error.
			bad := slices.Clone(b[:cut])
			if cut > 0 && r.IntN(2) == 0 {
				bad[r.IntN(cut)] ^= byte(1 + r.IntN(255))
			}
			raw, rawErr := unpackDeterminants(nil, bad)
			var want []logging.Determinant
			for i := range raw {
				d, err := determinantFromRaw(&raw[i])
				if err != nil {
					rawErr = err
					break
				}
				want = append(want, d)
			}
			got, err := unpackInto(prefix[:1:1], bad)
			if rawErr != nil {
				require.Error(t, err, "seed %d, cut %d", seed, cut)
				require.Equal(t, prefix[:1], got)
				continue
			}
			require.NoError(t, err, "seed %d, cut %d", seed, cut)
			require.Equal(t, append(prefix[:1:1], want...), got, "seed %d, cut %d", seed, cut)
		}
	}
}

// BenchmarkUnpackInto decodes a piggyback as LeanMD's look at 4 PEs: the
// receptions of a few hundred tasks, mostly a few apart, from senders
// mostly near the previous one; two of three determinants take a byte
// for each difference.
func BenchmarkUnpackInto(b *testing.B) {
	ds := leanMDLikePiggyback()
	packed := appendPackedDeterminants(nil, ds)
	out := make([]logging.Determinant, 0, len(ds))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var err error
		if out, err = unpackInto(out[:0], packed); err != nil || len(out) != len(ds) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ds)), "ns/determinant")
	b.ReportMetric(float64(len(packed))/float64(len(ds)), "bytes/determinant")
}

// BenchmarkAppendPackedDeterminants packs BenchmarkUnpackInto's
// piggyback.
func BenchmarkAppendPackedDeterminants(b *testing.B) {
	ds := leanMDLikePiggyback()
	buf := appendPackedDeterminants(nil, ds)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf = appendPackedDeterminants(buf[:0], ds)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ds)), "ns/determinant")
}

// leanMDLikePiggyback is the piggyback BenchmarkUnpackInto describes.
func leanMDLikePiggyback() []logging.Determinant {
	r := rand.New(rand.NewPCG(1, 2))
	var ds []logging.Determinant
	rsn := map[logging.TaskID]uint64{}
	task, sender, srn := 0, 0, uint64(100)
	for range 2000 {
		task = (task + r.IntN(4)) % 400
		if r.IntN(8) == 0 {
			task = r.IntN(400)
		}
		sender = (sender + r.IntN(30)) % 400
		if r.IntN(5) == 0 {
			sender = r.IntN(400)
		}
		srn += uint64(r.IntN(20))
		receiver := logging.TaskID(1<<48 | task)
		rsn[receiver]++
		ds = append(ds, logging.Determinant{Receiver: receiver, RSN: rsn[receiver],
			Message: logging.MessageID{Sender: logging.TaskID(2<<48 | sender), SRN: srn - uint64(r.IntN(40))}})
	}
	return ds
}
