package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"google.golang.org/protobuf/proto"
)

// Magic opens every record file.
const Magic = "gochare-record 1\n"

// maxFrame bounds one frame's body (a task state or a message).
const maxFrame = 1 << 30

// Errors of Read.
var (
	// ErrCorrupt: the file is not a record file, or a frame's checksum or
	// body is wrong.
	ErrCorrupt = errors.New("record: corrupt record file")
	// ErrTruncated: the file ends inside a frame (its PE was killed while
	// writing); the frames before it are good.
	ErrTruncated = errors.New("record: record file ends inside a frame")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Writer frames a record into a buffer, which Flush writes out in one
// call. It is not safe for concurrent use.
type Writer struct {
	out io.Writer
	buf []byte
	err error
}

// NewWriter starts a record on out: the magic line and the header, in
// the buffer until Flush.
func NewWriter(out io.Writer, h *Header) *Writer {
	w := &Writer{out: out, buf: []byte(Magic)}
	w.append(h)
	return w
}

// Append adds an entry to the buffer.
func (w *Writer) Append(e *Entry) { w.append(e) }

func (w *Writer) append(m proto.Message) {
	if w.err != nil {
		return
	}
	start := len(w.buf)
	w.buf = append(w.buf, make([]byte, 8)...)
	var err error
	w.buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(w.buf, m)
	if err != nil {
		w.err = fmt.Errorf("record: marshal %T: %w", m, err)
		w.buf = w.buf[:start]
		return
	}
	body := w.buf[start+8:]
	if len(body) > maxFrame {
		w.err = fmt.Errorf("record: frame of %d bytes, at most %d", len(body), maxFrame)
		w.buf = w.buf[:start]
		return
	}
	binary.LittleEndian.PutUint32(w.buf[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(w.buf[start+4:], crc32.Checksum(body, castagnoli))
}

// Buffered is the number of bytes Flush would write.
func (w *Writer) Buffered() int { return len(w.buf) }

// Flush writes the buffer out. An error (of Append or of the writer)
// sticks: every later call returns it.
func (w *Writer) Flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	if _, err := w.out.Write(w.buf); err != nil {
		w.err = fmt.Errorf("record: write: %w", err)
		return w.err
	}
	w.buf = w.buf[:0]
	return nil
}

// File is a record file read back.
type File struct {
	Path    string
	Header  *Header
	Entries []*Entry
}

// ReadFile reads the record file at path; keep, if not nil, selects the
// entries kept (the others are checked and dropped). See Read for errors.
func ReadFile(path string, keep func(*Entry) bool) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	f, err := Read(b, keep)
	if f != nil {
		f.Path = path
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return f, err
}

// Read decodes a record file's bytes. A corrupt file returns a nil File
// and an error wrapping ErrCorrupt; a file whose last frame is cut short
// returns what came before it with an error wrapping ErrTruncated (the
// caller decides whether that will do).
func Read(b []byte, keep func(*Entry) bool) (*File, error) {
	if !bytes.HasPrefix(b, []byte(Magic)) {
		if len(b) < len(Magic) && bytes.HasPrefix([]byte(Magic), b) {
			return nil, fmt.Errorf("%w: %d bytes, no header", ErrTruncated, len(b))
		}
		return nil, fmt.Errorf("%w: not a record file (no %q line)", ErrCorrupt, Magic[:len(Magic)-1])
	}
	f := &File{}
	off := len(Magic)
	for off < len(b) {
		if len(b)-off < 8 {
			return f.truncated(off, len(b))
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		sum := binary.LittleEndian.Uint32(b[off+4:])
		if n > maxFrame {
			return nil, fmt.Errorf("%w: frame at byte %d claims %d bytes", ErrCorrupt, off, n)
		}
		if len(b)-off-8 < n {
			return f.truncated(off, len(b))
		}
		body := b[off+8 : off+8+n]
		if crc32.Checksum(body, castagnoli) != sum {
			return nil, fmt.Errorf("%w: checksum of the frame at byte %d does not match", ErrCorrupt, off)
		}
		if f.Header == nil {
			h := &Header{}
			if err := proto.Unmarshal(body, h); err != nil {
				return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
			}
			if h.Size < 1 || h.Rank < 0 || h.Rank >= h.Size || h.App == "" {
				return nil, fmt.Errorf("%w: header names PE %d of %d of app %q", ErrCorrupt, h.Rank, h.Size, h.App)
			}
			f.Header = h
		} else {
			e := &Entry{}
			if err := proto.Unmarshal(body, e); err != nil {
				return nil, fmt.Errorf("%w: frame at byte %d: %v", ErrCorrupt, off, err)
			}
			if e.Kind == Kind_KIND_UNSPECIFIED || Kind_name[int32(e.Kind)] == "" {
				return nil, fmt.Errorf("%w: frame at byte %d: entry of kind %d", ErrCorrupt, off, e.Kind)
			}
			if keep == nil || keep(e) {
				f.Entries = append(f.Entries, e)
			}
		}
		off += 8 + n
	}
	if f.Header == nil {
		return nil, fmt.Errorf("%w: no header", ErrTruncated)
	}
	return f, nil
}

func (f *File) truncated(off, size int) (*File, error) {
	err := fmt.Errorf("%w: the frame at byte %d is cut short at byte %d (its PE killed while writing?)", ErrTruncated, off, size)
	if f.Header == nil {
		return nil, err
	}
	return f, err
}

// ReadHeader reads the header of the record file at path, and nothing
// more.
func ReadHeader(path string) (*Header, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer fd.Close()
	head := make([]byte, len(Magic)+8)
	if _, err := io.ReadFull(fd, head); err != nil {
		return nil, fmt.Errorf("record: %s: %w: no header (%v)", path, ErrTruncated, err)
	}
	if !bytes.HasPrefix(head, []byte(Magic)) {
		return nil, fmt.Errorf("record: %s: %w: not a record file", path, ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(head[len(Magic):])
	if n > maxFrame {
		return nil, fmt.Errorf("record: %s: %w: header of %d bytes", path, ErrCorrupt, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(fd, body); err != nil {
		return nil, fmt.Errorf("record: %s: %w: header cut short", path, ErrTruncated)
	}
	f, err := Read(append(head, body...), func(*Entry) bool { return false })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Header, nil
}
