package transport

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// makePayload returns a payload of size bytes that names its sender and
// index, so the receiver can check content and order (as the suite in
// transporttest does).
func makePayload(from, index, size int) []byte {
	p := make([]byte, size)
	var head [16]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(from))
	binary.LittleEndian.PutUint64(head[8:], uint64(index))
	for i := range p {
		if i < 16 {
			p[i] = head[i]
		} else {
			p[i] = byte(i*7 + from + index)
		}
	}
	return p
}

// checkPayload verifies a payload made by makePayload(from, index, size).
func checkPayload(from, index, size int, p []byte) error {
	if len(p) != size {
		return fmt.Errorf("payload %d from %d: %d bytes, want %d", index, from, len(p), size)
	}
	if !bytes.Equal(p, makePayload(from, index, size)) {
		return fmt.Errorf("payload %d from %d: content differs", index, from)
	}
	return nil
}
