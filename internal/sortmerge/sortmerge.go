// Package sortmerge keeps a list sorted that grows by appends: the new
// items are sorted and merged in when the list is read, so n appends and
// reads cost O(n log n) in all where sorted insertions would cost O(n²).
package sortmerge

import (
	"cmp"
	"slices"
)

// Into sorts ts, whose first sorted items are sorted and distinct from the
// rest, sorting the rest and merging them in (through buf, returned for
// reuse): O(len(ts) + r log r) for r new ones, and O(r log r) when the
// new ones all follow the old.
func Into[T cmp.Ordered](ts []T, sorted int, buf []T) ([]T, []T) {
	if sorted >= len(ts) {
		return ts, buf
	}
	tail := ts[sorted:]
	slices.Sort(tail)
	if sorted == 0 || ts[sorted-1] < tail[0] {
		return ts, buf
	}
	buf = buf[:0]
	i, j := 0, sorted
	for i < sorted && j < len(ts) {
		if ts[i] < ts[j] {
			buf = append(buf, ts[i])
			i++
		} else {
			buf = append(buf, ts[j])
			j++
		}
	}
	buf = append(buf, ts[i:sorted]...)
	buf = append(buf, ts[j:]...)
	copy(ts, buf)
	return ts, buf
}
