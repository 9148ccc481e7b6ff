package logging

import (
	"errors"
	"testing"
)

// A logger reads what a PE dumps (CountDumped over a plain dump, and
// ExpandPlaced over a placed one, from the ring and the PE's shared log
// memory): whatever the bytes, it returns an error or a dump whose
// framing holds, and never panics or reads outside what it was given.

// CountDumped (the logger's framing check) accepts whatever DecodeDumped
// (the PE's full read of what it fetches back) accepts, with as many
// entries, and refuses with ErrBadDump; it may accept more (it checks
// the framing only, not the paths and requirements inside).
func FuzzCountDumped(f *testing.F) {
	f.Add(dumpedSample(f, 3))
	f.Add(dumpedSample(f, 1)[:5])
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := CountDumped(b)
		if err != nil && !errors.Is(err, ErrBadDump) {
			t.Fatalf("CountDumped's error is not ErrBadDump: %v", err)
		}
		entries, derr := DecodeDumped(b)
		if derr == nil && (err != nil || n != len(entries)) {
			t.Fatalf("DecodeDumped reads %d entries, CountDumped %d (%v)", len(entries), n, err)
		}
	})
}

// ExpandPlaced refuses a malformed placed dump with ErrBadDump; what it
// accepts expands to the size the dump announces and is a well framed
// plain dump of as many entries.
func FuzzExpandPlaced(f *testing.F) {
	shared := make([]byte, 4096)
	for i := range shared {
		shared[i] = byte(i * 7)
	}
	entry, expanded, at := placedEntry, placedExpanded, placedAt
	f.Add(placedOf(expanded(100), entry(placeTagShared, 100, at(3900))))
	f.Add(placedOf(expanded(100)+expanded(3), entry(placeTagShared, 100, at(0)), entry(placeTagInline, 3, []byte{1, 2, 3})))
	f.Add(placedOf(expanded(100), entry(placeTagShared, 100, at(4000))))
	f.Fuzz(func(t *testing.T, placed []byte) {
		out, n, err := ExpandPlaced(nil, placed, shared)
		if err != nil {
			if !errors.Is(err, ErrBadDump) {
				t.Fatalf("ExpandPlaced's error is not ErrBadDump: %v", err)
			}
			return
		}
		want, err := PlacedSize(placed)
		if err != nil || want != len(out) {
			t.Fatalf("expanded to %d bytes, announced %d (%v)", len(out), want, err)
		}
		count, err := CountDumped(out)
		if err != nil || count != n {
			t.Fatalf("expanded %d entries, the plain dump frames %d (%v)", n, count, err)
		}
	})
}

// dumpedSample is a plain dump of n entries, as a log dumps them.
func dumpedSample(tb testing.TB, n int) []byte {
	tb.Helper()
	var b []byte
	for i := range n {
		b = appendDumpedFields(b, [11]uint64{uint64(i), uint64(i + 1), 3, 4, 5, 0, 0, 1, 0, 0, 4 << 1})
		b = append(b, 1, 2, 3, 4)
	}
	if _, err := DecodeDumped(b); err != nil {
		tb.Fatalf("the sample does not decode: %v", err)
	}
	return b
}
