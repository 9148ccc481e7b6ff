package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// ErrBadState reports a packed domain state that UnmarshalBinary cannot
// restore: not a domain state, another format version, another chunk,
// truncated, followed by other bytes, or corrupted.
var ErrBadState = errors.New("kernel: bad domain state")

// The packed state of a Domain (MarshalBinary), little-endian:
//
//	magic "LULD", version (uint32)
//	chunk: mesh size, offset x, y, z, size x, y, z (uint32 each)
//	time, deltaTime (float64), cycle (uint64), dtCourant, dtHydro (float64)
//	the arrays of stateArrays, in that order, each as many float64 as
//	   the chunk's geometry gives it (no per-array counts)
//	CRC-32C of every byte before it (uint32)
//
// Only the state a run carries from one phase to another is packed; a
// state is restored into a domain that NewDomain built for the same chunk,
// which rebuilds everything else identically: the mesh connectivity,
// symmetry planes, neighbour tables, regions, reference volumes, element
// masses and parameters. The scratch arrays that a phase fully writes
// before it reads them (accelerations, ql and qq, clamped volumes, the EOS
// repetitions' results, the shared-node sum buffer) are not packed.
const (
	stateMagic   = "LULD"
	stateVersion = 1
	// stateHeaderBytes is magic, version and the 7 geometry words.
	stateHeaderBytes = len(stateMagic) + 4 + 7*4
	// stateScalarBytes is time, deltaTime, cycle, dtCourant, dtHydro.
	stateScalarBytes = 5 * 8
	stateCRCBytes    = 4
)

var stateCRCTable = crc32.MakeTable(crc32.Castagnoli)

// stateArrays lists the packed arrays in their packed order. The node
// fields have numNode values, the element fields numElem, and the
// gradient fields their ghost and zero slots as well.
func (d *Domain) stateArrays() [][]float64 {
	return [][]float64{
		d.x, d.y, d.z, d.xd, d.yd, d.zd, d.fx, d.fy, d.fz, d.nodalMass,
		d.e, d.p, d.q, d.v, d.vnew, d.delv, d.vdov, d.arealg, d.ss,
		d.delxXi, d.delxEta, d.delxZeta,
		d.delvXi, d.delvEta, d.delvZeta,
	}
}

// stateValues is the number of float64 in the packed arrays.
func (d *Domain) stateValues() int {
	n := 0
	for _, a := range d.stateArrays() {
		n += len(a)
	}
	return n
}

// StateSize is the length in bytes of the domain's packed state, which
// depends only on its chunk.
func (d *Domain) StateSize() int {
	return stateHeaderBytes + stateScalarBytes + 8*d.stateValues() + stateCRCBytes
}

// geometryWords are the chunk's mesh size, offset and size, as packed.
func (c Chunk) geometryWords() [7]int {
	return [7]int{c.MeshSize, c.Offset[0], c.Offset[1], c.Offset[2], c.Size[0], c.Size[1], c.Size[2]}
}

// AppendBinary appends the domain's packed state to b (see MarshalBinary).
func (d *Domain) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, stateMagic...)
	b = binary.LittleEndian.AppendUint32(b, stateVersion)
	for _, w := range d.chunk.geometryWords() {
		if w < 0 || w > math.MaxUint32 {
			return nil, fmt.Errorf("kernel: chunk %+v does not fit the state format", d.chunk)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(w))
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.time))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.deltaTime))
	b = binary.LittleEndian.AppendUint64(b, uint64(d.cycle))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.dtCourant))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.dtHydro))
	for _, a := range d.stateArrays() {
		for _, v := range a {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], stateCRCTable)), nil
}

// MarshalBinary packs the state that a run of the domain needs to go on
// from where it is, between two phases: the time-step state and the
// evolving node and element fields. UnmarshalBinary restores it into a
// domain built by NewDomain for the same chunk, which then computes the
// same bits as this one would.
func (d *Domain) MarshalBinary() ([]byte, error) {
	return d.AppendBinary(make([]byte, 0, d.StateSize()))
}

// UnmarshalBinary restores a state packed by MarshalBinary from a domain
// of the same chunk. It refuses, with an error wrapping ErrBadState and
// without changing d, data that is not such a state: wrong magic or
// version, another chunk, truncated, followed by other bytes, or failing
// its checksum.
func (d *Domain) UnmarshalBinary(data []byte) error {
	if len(data) < len(stateMagic)+4 {
		return fmt.Errorf("%w: %d bytes, shorter than the header", ErrBadState, len(data))
	}
	if string(data[:len(stateMagic)]) != stateMagic {
		return fmt.Errorf("%w: magic %q, want %q", ErrBadState, data[:len(stateMagic)], stateMagic)
	}
	if v := binary.LittleEndian.Uint32(data[len(stateMagic):]); v != stateVersion {
		return fmt.Errorf("%w: format version %d, this kernel reads version %d", ErrBadState, v, stateVersion)
	}
	if len(data) < stateHeaderBytes {
		return fmt.Errorf("%w: truncated in the header (%d bytes)", ErrBadState, len(data))
	}
	var packed [7]int
	for i := range packed {
		packed[i] = int(binary.LittleEndian.Uint32(data[len(stateMagic)+4+4*i:]))
	}
	if own := d.chunk.geometryWords(); packed != own {
		return fmt.Errorf("%w: state of chunk (mesh %d, offset %v, size %v) for a domain of chunk (mesh %d, offset %v, size %v)",
			ErrBadState, packed[0], packed[1:4], packed[4:7], own[0], own[1:4], own[4:7])
	}
	want := d.StateSize()
	switch {
	case len(data) < want:
		return fmt.Errorf("%w: truncated: %d bytes, this chunk's state has %d", ErrBadState, len(data), want)
	case len(data) > want:
		return fmt.Errorf("%w: %d trailing bytes after the state", ErrBadState, len(data)-want)
	}
	body := data[:want-stateCRCBytes]
	if sum, got := crc32.Checksum(body, stateCRCTable), binary.LittleEndian.Uint32(data[want-stateCRCBytes:]); sum != got {
		return fmt.Errorf("%w: checksum %08x, the state's bytes sum to %08x", ErrBadState, got, sum)
	}
	rest := body[stateHeaderBytes:]
	next := func() uint64 {
		v := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		return v
	}
	tm, dt := math.Float64frombits(next()), math.Float64frombits(next())
	cycle := next()
	if cycle > math.MaxInt32 {
		return fmt.Errorf("%w: cycle %d", ErrBadState, cycle)
	}
	courant, hydro := math.Float64frombits(next()), math.Float64frombits(next())
	// Everything is checked: from here on the state is written in place
	// (the node fields share one allocation; copying keeps that layout).
	d.time, d.deltaTime, d.cycle, d.dtCourant, d.dtHydro = tm, dt, int(cycle), courant, hydro
	for _, a := range d.stateArrays() {
		for i := range a {
			a[i] = math.Float64frombits(next())
		}
	}
	return nil
}
