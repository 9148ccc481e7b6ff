// Package protofield writes single protobuf fields by hand, for the
// encoders that write the same bytes as proto.Marshal without building
// a message (the scheduler's batches, migrate's checkpoints). Like
// proto3, it leaves zero values out.
package protofield

import "google.golang.org/protobuf/encoding/protowire"

// AppendVarint appends field num with value v, unless v is zero. Most
// fields of the scheduler's batches are a field number below 16 with a
// value below 128: one byte of tag and one of value, written at once.
func AppendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v-1 < 0x7f && num < 16 {
		return append(b, byte(num<<3), byte(v)) // VarintType is 0
	}
	return appendVarint(b, num, v)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// VarintSize is the size AppendVarint adds (inlined where it is called).
func VarintSize(num protowire.Number, v uint64) int {
	if v < 0x80 && num < 16 {
		return int((v + 0x7f) >> 7 << 1) // 0 or 2
	}
	return varintSize(num, v)
}

func varintSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// AppendBytes appends field num with bytes v, unless v is empty.
func AppendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// BytesSize is the size AppendBytes adds for n bytes.
func BytesSize(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}
