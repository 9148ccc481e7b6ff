package actor

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

type withFloats struct {
	Step   uint64
	Values []float64
	Nil    []float64
	Empty  []float64
	Ints   []int
	Inner  inner
}

type floatTask struct {
	Iter   uint64
	Grid   []float64
	Counts map[string]int
	config *string `actor:"transient"`
}

func (*floatTask) ResumeFromSync(Context) {}

// A struct's own []float64 fields travel as one byte string of their
// little-endian bits: the bits come back exactly (NaN payload, -0,
// subnormal, infinities), nil stays nil and empty stays empty, the
// encoding is 8 bytes a float plus a few, the same value gives the same
// bytes, and this holds for a struct message, a pointer to one, and a
// plain task's state (whose transient field keeps the constructor's
// value).
func TestFloatFieldsTravelAsTheirBits(t *testing.T) {
	nan := math.Float64frombits(0x7ff8_0000_dead_beef)
	values := []float64{1.5, math.Copysign(0, -1), nan, math.Inf(-1), 1e-310, math.MaxFloat64}
	bits := func(f []float64) []uint64 {
		var out []uint64
		for _, x := range f {
			out = append(out, math.Float64bits(x))
		}
		return out
	}
	m := withFloats{Step: 3, Values: values, Empty: []float64{}, Ints: []int{1}, Inner: inner{"x", 2}}
	check := func(got withFloats) {
		t.Helper()
		require.Equal(t, bits(values), bits(got.Values))
		require.Nil(t, got.Nil)
		require.NotNil(t, got.Empty)
		require.Empty(t, got.Empty)
		require.Equal(t, m.Step, got.Step)
		require.Equal(t, m.Ints, got.Ints)
		require.Equal(t, m.Inner, got.Inner)
	}

	byValue, err := CodecOf[withFloats]()
	require.NoError(t, err)
	require.Contains(t, byValue.Layout, "float64 slices as little-endian bytes")
	data, err := byValue.Append(nil, m)
	require.NoError(t, err)
	var raw bytes.Buffer
	for _, x := range values {
		require.NoError(t, binary.Write(&raw, binary.LittleEndian, math.Float64bits(x)))
	}
	require.True(t, bytes.Contains(data, raw.Bytes()), "the floats' little-endian bits, in one piece")
	again, err := byValue.Append(nil, m)
	require.NoError(t, err)
	require.Equal(t, data, again)
	back, err := byValue.Decode(data)
	require.NoError(t, err)
	check(back.(withFloats))

	// Empty alone (no float to write): still empty, not nil.
	data, err = byValue.Append(nil, withFloats{Empty: []float64{}})
	require.NoError(t, err)
	back, err = byValue.Decode(data)
	require.NoError(t, err)
	require.NotNil(t, back.(withFloats).Empty)
	require.Nil(t, back.(withFloats).Values)

	big := withFloats{Values: make([]float64, 4096)}
	data, err = byValue.Append(nil, big)
	require.NoError(t, err)
	require.Less(t, len(data), 8*4096+100, "8 bytes a float, not 9")

	byPointer, err := CodecOf[*withFloats]()
	require.NoError(t, err)
	data, err = byPointer.Append(nil, &m)
	require.NoError(t, err)
	back, err = byPointer.Decode(data)
	require.NoError(t, err)
	check(*back.(*withFloats))
	data, err = byPointer.Append(nil, (*withFloats)(nil))
	require.NoError(t, err)
	back, err = byPointer.Decode(data)
	require.NoError(t, err)
	require.Nil(t, back.(*withFloats))

	cfg := "config"
	j := NewJob()
	c := NewCollection(j, "floats", Shape{1}, BlockMap, func(Index) *floatTask {
		return &floatTask{Counts: map[string]int{"constructor": 1}, config: &cfg}
	})
	require.NotContains(t, errString(j), "floats")
	task := &floatTask{Iter: 9, Grid: values, Counts: map[string]int{"a": 1}}
	data, err = c.Def().PackTask(task)
	require.NoError(t, err)
	fresh := c.Def().New(Idx(0)).(*floatTask)
	require.NoError(t, c.Def().UnpackTask(fresh, data))
	require.Equal(t, bits(values), bits(fresh.Grid))
	require.Equal(t, task.Counts, fresh.Counts, "the state replaces what the constructor put there")
	require.Same(t, &cfg, fresh.config)
	packed, err := c.Def().PackTask(fresh)
	require.NoError(t, err)
	require.Equal(t, data, packed)
}

// Bytes that are not whole floats, or not the type's encoding, are an
// error naming the type and the field, never a panic or a silently
// shorter slice.
func TestFloatFieldsRefuseBadBytes(t *testing.T) {
	codec, err := CodecOf[*withFloats]()
	require.NoError(t, err)
	data, err := codec.Append(nil, &withFloats{Values: []float64{1, 2}})
	require.NoError(t, err)
	// The byte string of Values is 16 bytes long: header 0x50; make it 15.
	at := bytes.Index(data, []byte{0x50, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
	require.GreaterOrEqual(t, at, 0, "%x", data)
	bad := append(append(append([]byte(nil), data[:at]...), 0x4f), data[at+1:at+16]...)
	bad = append(bad, data[at+17:]...)
	_, err = codec.Decode(bad)
	require.ErrorIs(t, err, ErrFloatBytes)
	require.ErrorContains(t, err, "withFloats: Values")
	_, err = codec.Decode(data[:len(data)-1])
	require.ErrorContains(t, err, "actor: decode *github.com/gochare/gochare/actor.withFloats")

	j := NewJob()
	c := NewCollection(j, "floats", Shape{1}, BlockMap, func(Index) *floatTask { return &floatTask{} })
	packed, err := c.Def().PackTask(&floatTask{Grid: []float64{1}})
	require.NoError(t, err)
	require.Error(t, c.Def().UnpackTask(&floatTask{}, packed[:len(packed)-1]))
}
