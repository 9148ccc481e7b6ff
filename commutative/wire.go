package commutative

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadPath reports a commutative path that does not decode.
var ErrBadPath = errors.New("commutative: malformed path")

// maxPathDepth bounds the nesting of a path received from the network.
const maxPathDepth = 64

// Bytes returns the path's encoding, to put on the wire.
func (p Path) Bytes() []byte { return []byte(p.encoded) }

// ParsePath decodes a path taken from the wire, checking its whole
// structure, so that Trigger and String never fail on it.
func ParsePath(b []byte) (Path, error) {
	if err := checkPath(b, 0); err != nil {
		return Path{}, err
	}
	return Path{encoded: string(b)}, nil
}

func checkPath(b []byte, depth int) error {
	if len(b) == 0 {
		return nil
	}
	if depth >= maxPathDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrBadPath, maxPathDepth)
	}
	rest := b
	for _, field := range []string{"sender", "srn"} {
		_, n := binary.Uvarint(rest)
		if n <= 0 {
			return fmt.Errorf("%w: bad %s", ErrBadPath, field)
		}
		rest = rest[n:]
	}
	parentLen, n := binary.Uvarint(rest)
	if n <= 0 || parentLen > uint64(len(rest)-n) {
		return fmt.Errorf("%w: bad parent length", ErrBadPath)
	}
	rest = rest[n:]
	if err := checkPath(rest[:parentLen], depth+1); err != nil {
		return err
	}
	rest = rest[parentLen:]
	index, n := binary.Uvarint(rest)
	if n <= 0 || index > 1<<32-1 {
		return fmt.Errorf("%w: bad send index", ErrBadPath)
	}
	if n != len(rest) {
		return fmt.Errorf("%w: %d trailing bytes", ErrBadPath, len(rest)-n)
	}
	return nil
}

// AppendEncoded appends the path's wire form (Bytes) to b.
func (p Path) AppendEncoded(b []byte) []byte { return append(b, p.encoded...) }
