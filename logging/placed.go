package logging

import (
	"encoding/binary"
	"fmt"
)

// Placed dumps. A log under a quota whose chunks are in memory it shares
// with a logger on its host (Config.LogShared) dumps to that logger
// without copying the payloads: the dump names where each lies in the
// shared memory, and the logger, which maps it, copies the bytes out
// into its store, building the dump as DecodeDumped reads it
// (ExpandPlaced). The payloads must stay as they are until the logger
// has read the dump: the log writes a chunk again only once the shared
// memory hands it out again (SharedLogMemory).
//
// The placed form: the size of the dump it expands to (u32, little
// endian), then per entry a tag byte and the entry as a dump encodes it
// (its fields, path and requires), followed, for tag placeTagInline, by
// its payload's bytes (none when its payload is the entry before's), and
// for placeTagShared by the offset of the payload in the shared memory
// (u64, little endian) instead.
const (
	placeTagInline = 0
	placeTagShared = 1
	// placeMin is the smallest payload a placed dump names by its
	// place rather than carries (a place costs 8 bytes and a read of
	// the shared memory elsewhere).
	placeMin = 64
)

// appendPlaced encodes dump d in the placed form into the buffer buffer
// gives; false (nothing taken from buffer) when no payload of it lies
// in shared or buffer has no room.
func (l *senderLog) appendPlaced(shared SharedLogMemory, d Dump, buffer func(logger, size int) []byte) (DumpBatch, bool) {
	// The chunk being looked at and where it lies in shared (ok false:
	// a chunk of the log's own).
	at, base, ok := int32(-1), uint64(0), false
	size, places := 4, 0
	for i := d.From; i < d.To; i++ {
		en := l.entry(i)
		size += 1 + 11*binary.MaxVarintLen64 + int(en.pathLen) + int(en.requiresLen)
		if i > d.From && l.sharesPrevious(i) {
			continue
		}
		if en.chunk != at {
			at = en.chunk
			base, ok = shared.Offset(l.chunks[at][:1])
		}
		if ok && en.payloadLen >= placeMin {
			size += 8
			places++
		} else {
			size += int(en.payloadLen)
		}
	}
	if places == 0 || size > 1<<31 {
		return DumpBatch{}, false
	}
	b := buffer(d.Logger, size)
	if cap(b) < size {
		return DumpBatch{}, false
	}
	b = b[:4]
	expanded := 0
	at = -1
	for i := d.From; i < d.To; i++ {
		en := l.entry(i)
		same := i > d.From && l.sharesPrevious(i)
		if en.chunk != at {
			at = en.chunk
			base, ok = shared.Offset(l.chunks[at][:1])
		}
		place := !same && ok && en.payloadLen >= placeMin
		tag := byte(placeTagInline)
		if place {
			tag = placeTagShared
		}
		b = append(b, tag)
		start := len(b)
		b = l.appendDumpedHead(b, i, same)
		expanded += len(b) - start
		switch {
		case same:
		case place:
			b = binary.LittleEndian.AppendUint64(b, base+uint64(en.payloadOff))
			expanded += int(en.payloadLen)
		default:
			b = append(b, l.payload(en)...)
			expanded += int(en.payloadLen)
		}
	}
	binary.LittleEndian.PutUint32(b, uint32(expanded))
	return DumpBatch{Logger: d.Logger, Epoch: d.Epoch, From: d.From, To: d.To, Payload: b, Placed: true}, true
}

// PlacedSize returns the size of the dump placed (in the placed form)
// expands to.
func PlacedSize(placed []byte) (int, error) {
	if len(placed) < 4 {
		return 0, fmt.Errorf("%w: a placed dump of %d bytes", ErrBadDump, len(placed))
	}
	n := binary.LittleEndian.Uint32(placed)
	if n > 1<<31 {
		return 0, fmt.Errorf("%w: a placed dump of %d bytes expanded", ErrBadDump, n)
	}
	return int(n), nil
}

// ExpandPlaced appends to dst the dump placed (in the placed form)
// expands to, its payloads copied out of shared, the memory its offsets
// are in, and returns it and the number of its entries: what
// DecodeDumped reads, its framing checked as CountDumped checks it. It
// fails on a malformed placed dump (an offset outside shared among
// them), or one that does not expand to the size it announces.
func ExpandPlaced(dst, placed, shared []byte) ([]byte, int, error) {
	want, err := PlacedSize(placed)
	if err != nil {
		return dst, 0, err
	}
	start := len(dst)
	src := placed[4:]
	n := 0
	for ; len(src) > 0; n++ {
		tag := src[0]
		src = src[1:]
		var f dumpedEntry
		// The fields before the lengths are copied, not read (as a
		// logger's walk over a dump, dumpedSize).
		if f.fieldsLen = skipDumpedFields(src, 8); f.fieldsLen == 0 {
			return dst, n, fmt.Errorf("%w: bad field (placed entry %d)", ErrBadDump, n)
		}
		if err := f.readFields(src, 8); err != nil {
			return dst, n, fmt.Errorf("%w (placed entry %d)", err, n)
		}
		f.same = f.fields[10]&sameFlag != 0
		if f.same && n == 0 {
			return dst, n, fmt.Errorf("%w: the first entry shares the payload of none", ErrBadDump)
		}
		pathLen, requiresLen, payloadLen := f.fields[8], f.fields[9], f.fields[10]>>1
		if pathLen > 1<<31 || requiresLen > 1<<31 || payloadLen > 1<<31 {
			return dst, n, fmt.Errorf("%w: placed entry %d: lengths %d, %d, %d", ErrBadDump, n, pathLen, requiresLen, payloadLen)
		}
		head := f.fieldsLen + int(pathLen+requiresLen)
		if head > len(src) {
			return dst, n, fmt.Errorf("%w: placed entry %d: %d bytes, %d left", ErrBadDump, n, head, len(src))
		}
		dst = append(dst, src[:head]...)
		src = src[head:]
		switch {
		case f.same:
		case tag == placeTagShared:
			if len(src) < 8 {
				return dst, n, fmt.Errorf("%w: placed entry %d: no place", ErrBadDump, n)
			}
			off := binary.LittleEndian.Uint64(src)
			src = src[8:]
			if off > uint64(len(shared)) || payloadLen > uint64(len(shared))-off {
				return dst, n, fmt.Errorf("%w: placed entry %d: %d bytes at %d of %d shared", ErrBadDump, n, payloadLen, off, len(shared))
			}
			dst = append(dst, shared[off:off+payloadLen]...)
		case tag == placeTagInline:
			if payloadLen > uint64(len(src)) {
				return dst, n, fmt.Errorf("%w: placed entry %d: a payload of %d bytes, %d left", ErrBadDump, n, payloadLen, len(src))
			}
			dst = append(dst, src[:payloadLen]...)
			src = src[payloadLen:]
		default:
			return dst, n, fmt.Errorf("%w: placed entry %d: tag %d", ErrBadDump, n, tag)
		}
	}
	if len(dst)-start != want {
		return dst, n, fmt.Errorf("%w: a placed dump expanded to %d bytes, announced %d", ErrBadDump, len(dst)-start, want)
	}
	return dst, n, nil
}
