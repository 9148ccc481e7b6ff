package scheduler

import (
	"bytes"
	"errors"
	"math/bits"
	"slices"

	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/logging"
)

// The determinants an envelope piggybacks (or hands over in a recovery
// envelope) travel in one bytes field, wire.Envelope's
// packed_determinants, rather than as one nested Determinant message
// each. Each determinant is, in order:
//
//	flags                   varint: packedPath (a commutative path follows), packedStamp (an event logger's stamp follows)
//	receiver                zigzag varint of the difference with the previous determinant's
//	rsn                     zigzag varint, likewise
//	message sender          zigzag varint, likewise
//	message srn             zigzag varint, likewise
//	[path length, path]     if packedPath
//	[creator, seq]          if packedStamp: zigzag varint, varint
//
// The first determinant's differences are from zero. A PE's determinants
// ride in creation or arrival order, mostly receptions of the tasks of
// one PE and messages of a few senders, so the differences take a byte
// or two where the nested message spent a tag and eight bytes on each
// task identity; and the encoder and decoder run one loop with no nested
// sizes. Under FullDet every determinant rides about ten times between
// four PEs (docs/benchmarks.md, "fd2 (2026-11-28)").
const (
	packedPath  = 1 << 0
	packedStamp = 1 << 1
)

// errPacked reports a malformed packed_determinants field.
var errPacked = errors.New("malformed packed determinants")

func zigzag(d uint64) uint64 { return d<<1 ^ uint64(int64(d)>>63) }

func unzigzag(v uint64) uint64 { return v>>1 ^ -(v & 1) }

func varintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendPackedDeterminants appends ds packed.
func appendPackedDeterminants(b []byte, ds []logging.Determinant) []byte {
	// The previous determinant's fields, which the differences are from.
	var receiver, rsn, sender, srn uint64
	for i := range ds {
		d := &ds[i]
		v0 := zigzag(uint64(d.Receiver) - receiver)
		v1 := zigzag(d.RSN - rsn)
		v2 := zigzag(uint64(d.Message.Sender) - sender)
		v3 := zigzag(d.Message.SRN - srn)
		receiver, rsn, sender, srn = uint64(d.Receiver), d.RSN, uint64(d.Message.Sender), d.Message.SRN
		l := d.Message.CPI.Len()
		stamped := d.Creator != 0 || d.Seq != 0
		if l == 0 && !stamped && (v0|v1|v2|v3) < 0x80 {
			// No flag, four differences of one byte each.
			b = append(b, 0, byte(v0), byte(v1), byte(v2), byte(v3))
			continue
		}
		var flags byte
		if l > 0 {
			flags |= packedPath
		}
		if stamped {
			flags |= packedStamp
		}
		b = append(b, flags)
		b = appendUvarint(b, v0)
		b = appendUvarint(b, v1)
		b = appendUvarint(b, v2)
		b = appendUvarint(b, v3)
		if l > 0 {
			b = appendUvarint(b, uint64(l))
			b = d.Message.CPI.AppendEncoded(b)
		}
		if stamped {
			b = appendUvarint(b, zigzag(uint64(int64(d.Creator))))
			b = appendUvarint(b, d.Seq)
		}
	}
	return b
}

// unpackDeterminants appends the determinants packed in b to out, as
// read (paths alias b); on an error out is returned as it was.
func unpackDeterminants(out []rawDeterminant, b []byte) ([]rawDeterminant, error) {
	start := len(out)
	var prev rawDeterminant
	for len(b) > 0 {
		var det rawDeterminant
		var v [4]uint64
		flags, n, err := varint(b)
		if err != nil || flags&^(packedPath|packedStamp) != 0 {
			return out[:start], errPacked
		}
		b = b[n:]
		for j := range v {
			if v[j], n, err = varint(b); err != nil {
				return out[:start], errPacked
			}
			b = b[n:]
		}
		det.receiver = prev.receiver + unzigzag(v[0])
		det.rsn = prev.rsn + unzigzag(v[1])
		det.message = rawID{sender: prev.message.sender + unzigzag(v[2]), srn: prev.message.srn + unzigzag(v[3]), set: true}
		if flags&packedPath != 0 {
			l, n, err := varint(b)
			if err != nil || l == 0 || l > uint64(len(b)-n) {
				return out[:start], errPacked
			}
			det.message.cpi = b[n : n+int(l) : n+int(l)]
			b = b[n+int(l):]
		}
		if flags&packedStamp != 0 {
			c, n, err := varint(b)
			if err != nil {
				return out[:start], errPacked
			}
			b = b[n:]
			if det.seq, n, err = varint(b); err != nil {
				return out[:start], errPacked
			}
			b = b[n:]
			det.creator = unzigzag(c)
		}
		out = append(out, det)
		prev = det
	}
	return out, nil
}

// determinantFromRaw converts a determinant as read.
func determinantFromRaw(raw *rawDeterminant) (logging.Determinant, error) {
	id, err := idFromRaw(&raw.message)
	if err != nil {
		return logging.Determinant{}, err
	}
	return logging.Determinant{Message: id, Receiver: commutative.TaskID(raw.receiver), RSN: raw.rsn,
		Creator: logging.PEID(int32(raw.creator)), Seq: raw.seq}, nil
}

// unpackInto appends the determinants packed in b to out, converted (a
// message's path parsed and copied), in one pass: the decoder's path for
// an envelope whose determinants are all packed, as a piggyback's are.
// A path equal to the last one parsed is that one's (a run of
// receptions of one region's messages), not parsed and copied again. On
// an error out is returned as it was. The error is unpackDeterminants's,
// or else the first path's that determinantFromRaw refuses, as the two
// steps of the envelope's decoding report it.
func unpackInto(out []logging.Determinant, b []byte) ([]logging.Determinant, error) {
	start := len(out)
	var pathErr error // the first malformed path
	// The previous determinant's fields, which the differences are from.
	var receiver, rsn, sender, srn uint64
	var lastPath []byte // the last path parsed, lastCPI
	var lastCPI commutative.Path
	for len(b) > 0 {
		var flags, v0, v1, v2, v3 uint64
		if len(b) >= 5 && (b[0]|b[1]|b[2]|b[3]|b[4])&0x80 == 0 {
			// Flags and four differences of one byte each: two of three
			// determinants of a LeanMD piggyback.
			flags, v0, v1, v2, v3 = uint64(b[0]), uint64(b[1]), uint64(b[2]), uint64(b[3]), uint64(b[4])
			b = b[5:]
		} else {
			var err error
			if flags, v0, v1, v2, v3, b, err = unpackHead(b); err != nil {
				return out[:start], err
			}
		}
		if flags&^(packedPath|packedStamp) != 0 {
			return out[:start], errPacked
		}
		receiver += unzigzag(v0)
		rsn += unzigzag(v1)
		sender += unzigzag(v2)
		srn += unzigzag(v3)
		if len(out) == cap(out) {
			out = slices.Grow(out, 1)
		}
		out = out[:len(out)+1]
		d := &out[len(out)-1]
		*d = logging.Determinant{
			Receiver: commutative.TaskID(receiver),
			RSN:      rsn,
			Message:  logging.MessageID{Sender: commutative.TaskID(sender), SRN: srn},
		}
		if flags&packedPath != 0 {
			l, n, err := varint(b)
			if err != nil || l == 0 || l > uint64(len(b)-n) {
				return out[:start], errPacked
			}
			cpi := b[n : n+int(l)]
			b = b[n+int(l):]
			if lastPath == nil || !bytes.Equal(cpi, lastPath) {
				path, err := commutative.ParsePath(cpi)
				if err != nil && pathErr == nil {
					pathErr = err
				}
				lastPath, lastCPI = cpi, path
			}
			d.Message.CPI = lastCPI
		}
		if flags&packedStamp != 0 {
			c, n, err := varint(b)
			if err != nil {
				return out[:start], errPacked
			}
			b = b[n:]
			seq, n, err := varint(b)
			if err != nil {
				return out[:start], errPacked
			}
			b = b[n:]
			d.Creator, d.Seq = logging.PEID(int32(unzigzag(c))), seq
		}
	}
	if pathErr != nil {
		return out[:start], pathErr
	}
	return out, nil
}

// unpackHead reads a packed determinant's flags and four differences,
// of any length, and returns the rest of b.
func unpackHead(b []byte) (flags, v0, v1, v2, v3 uint64, rest []byte, err error) {
	var v [5]uint64
	for j := range v {
		if len(b) > 0 && b[0] < 0x80 {
			v[j], b = uint64(b[0]), b[1:]
			continue
		}
		x, n, err := varint(b)
		if err != nil {
			return 0, 0, 0, 0, 0, b, errPacked
		}
		v[j], b = x, b[n:]
	}
	return v[0], v[1], v[2], v[3], v[4], b, nil
}
