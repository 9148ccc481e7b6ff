package actor_test

import (
	"fmt"
	"testing"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/stencil3d"
)

// plainFace is stencil3d's Face written as a plain Go struct.
type plainFace struct {
	Iteration uint64
	Halo      int32
	Values    []byte
}

// plainFloats is a face whose values are floats, not their bytes.
type plainFloats struct {
	Iteration uint64
	Values    []float64
}

// The cost of one message through a handler's codec: encoding into a
// reused buffer (as the runtime does under a logging protocol) and
// decoding, for stencil3d's face (16x16 and 64x64 points, 8 bytes each)
// as protobuf and as a plain struct; and for the same points as a
// []float64 (protobuf packed doubles, against CBOR's one header per
// float).
func BenchmarkCodecFace(b *testing.B) {
	for _, side := range []int{16, 64} {
		n := side * side
		bytes := make([]byte, 8*n)
		floats := make([]float64, n)
		for i := range bytes {
			bytes[i] = byte(i * 7)
		}
		for i := range floats {
			floats[i] = float64(i) * 1.25
		}
		cases := []struct {
			name  string
			codec actor.Codec
			m     any
		}{
			{"proto-bytes", actor.ProtoCodec[*stencil3d.Face](), &stencil3d.Face{Iteration: 9, Halo: stencil3d.Halo_HALO_X_LOW, Values: bytes}},
			{"plain-bytes", must(actor.CodecOf[*plainFace]()), &plainFace{Iteration: 9, Halo: 1, Values: bytes}},
			{"proto-floats", actor.ProtoCodec[*actor.ReductionResult](), &actor.ReductionResult{Number: 9, Floats: floats}},
			{"plain-floats", must(actor.CodecOf[*plainFloats]()), &plainFloats{Iteration: 9, Values: floats}},
		}
		for _, c := range cases {
			data, err := c.codec.Append(nil, c.m)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%dx%d/%s/encode", side, side, c.name), func(b *testing.B) {
				buf := make([]byte, 0, 2*len(data))
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					if buf, err = c.codec.Append(buf[:0], c.m); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(buf)), "wire-bytes")
			})
			b.Run(fmt.Sprintf("%dx%d/%s/decode", side, side, c.name), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					if _, err := c.codec.Decode(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func must(c actor.Codec, err error) actor.Codec {
	if err != nil {
		panic(err)
	}
	return c
}
