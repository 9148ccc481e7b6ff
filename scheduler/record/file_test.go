package record

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

func sampleHeader() *Header {
	return &Header{App: "leanmd", Args: []string{"--steps", "3"}, Rank: 1, Size: 3, JobId: 42, CheckpointEvery: 5, Protocol: "PartialDet", Pid: 7}
}

// sample is a record of task 9: a period from epoch 1 with two runs (the
// first sending twice and offering a sync point), checkpointed at epoch 2,
// then a period from epoch 2 cut by a rollback, and one from epoch 2 again
// that the file leaves open; task 8's entries are interleaved.
func sample() []*Entry {
	return []*Entry{
		{Kind: Kind_STATE, Task: 9, Epoch: 1, Record: []byte("state1")},
		{Kind: Kind_STATE, Task: 8, Epoch: 1, Record: []byte("other")},
		{Kind: Kind_DELIVER, Task: 9, Handler: 3, Key: 1, Sender: 8, Payload: []byte("m1")},
		{Kind: Kind_SEND, Task: 9, To: 8, Handler: 4, Payload: []byte("s1")},
		{Kind: Kind_DELIVER, Task: 8, Handler: 3, Payload: []byte("x")},
		{Kind: Kind_SEND, Task: 9, To: 7, Handler: 4, Payload: []byte("s2")},
		{Kind: Kind_AT_SYNC, Task: 9, Step: 4, Taken: true},
		{Kind: Kind_RESUME, Task: 9},
		{Kind: Kind_STATE, Task: 9, Epoch: 2, Record: []byte("state2")},
		{Kind: Kind_COMPLETE, Task: 9, Handler: 5, Key: 2},
		{Kind: Kind_ROLLBACK, Generation: 1},
		{Kind: Kind_STATE, Task: 9, Epoch: 2, Generation: 1, Record: []byte("state2")},
		{Kind: Kind_DELIVER, Task: 9, Handler: 3, Key: 2, Payload: []byte("m2")},
	}
}

func encode(t *testing.T, h *Header, entries []*Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, h)
	for _, e := range entries {
		w.Append(e)
	}
	require.NoError(t, w.Flush())
	return buf.Bytes()
}

func TestRecordRoundTrip(t *testing.T) {
	b := encode(t, sampleHeader(), sample())
	f, err := Read(b, nil)
	require.NoError(t, err)
	require.True(t, proto.Equal(sampleHeader(), f.Header))
	require.Len(t, f.Entries, len(sample()))
	for i, e := range sample() {
		require.True(t, proto.Equal(e, f.Entries[i]), "entry %d", i)
	}
	// keep selects entries; the others are still checked.
	f, err = Read(b, func(e *Entry) bool { return e.Task == 8 })
	require.NoError(t, err)
	require.Len(t, f.Entries, 2)
}

func TestRecordSegments(t *testing.T) {
	f, err := Read(encode(t, sampleHeader(), sample()), nil)
	require.NoError(t, err)
	segs := Segments(f, 9)
	require.Len(t, segs, 3)

	first := segs[0]
	require.Equal(t, uint64(1), first.Epoch)
	require.Equal(t, []byte("state1"), first.State)
	require.Equal(t, Checkpointed, first.End)
	require.Equal(t, uint64(2), first.Next.Epoch)
	require.Len(t, first.Steps, 2)
	require.Equal(t, Kind_DELIVER, first.Steps[0].Delivery.Kind)
	require.Len(t, first.Steps[0].Effects, 3)
	sends := first.Steps[0].Sends()
	require.Len(t, sends, 2)
	require.Equal(t, []byte("s2"), sends[1].Payload)
	require.Equal(t, Kind_RESUME, first.Steps[1].Delivery.Kind)
	require.Empty(t, first.Steps[1].Effects)

	require.Equal(t, Cut, segs[1].End)
	require.Len(t, segs[1].Steps, 1)
	require.Equal(t, Open, segs[2].End)
	require.Equal(t, uint64(1), segs[2].Generation)

	// Of the two recordings of epoch 2, neither checkpointed, the longer
	// (then the later) is replayed; a checkpointed one goes first.
	require.Same(t, segs[2], Choose(segs[1:]))
	segs[1].End = Checkpointed
	require.Same(t, segs[1], Choose(segs[1:]))
	require.Nil(t, Choose(nil))
}

func TestRecordLeaveAndMovedIn(t *testing.T) {
	f, err := Read(encode(t, sampleHeader(), []*Entry{
		{Kind: Kind_STATE, Task: 9, Epoch: 3},
		{Kind: Kind_DELIVER, Task: 9, Handler: 1},
		{Kind: Kind_LEAVE, Task: 9},
		{Kind: Kind_STATE, Task: 9, Epoch: 3, MovedIn: true},
		{Kind: Kind_DELIVER, Task: 9, Handler: 1},
		{Kind: Kind_SEND, Task: 9, Handler: 1},
	}), nil)
	require.NoError(t, err)
	segs := Segments(f, 9)
	require.Len(t, segs, 1, "no period starts where a move brought the task")
	require.Equal(t, Left, segs[0].End)
	require.Len(t, segs[0].Steps, 1)
}

func TestTruncatedRecordKeepsTheFramesBeforeTheCut(t *testing.T) {
	b := encode(t, sampleHeader(), sample())
	whole, err := Read(b, nil)
	require.NoError(t, err)
	truncated := 0
	for cut := len(Magic); cut < len(b); cut++ {
		f, err := Read(b[:cut], nil)
		if err == nil {
			// A cut between two frames: a shorter record, which no
			// reader can tell from one whose PE wrote no more.
			require.Less(t, len(f.Entries), len(whole.Entries))
			continue
		}
		require.ErrorIs(t, err, ErrTruncated, "cut at %d", cut)
		require.False(t, errors.Is(err, ErrCorrupt))
		truncated++
		if f == nil {
			require.Less(t, cut, len(Magic)+8+proto.Size(sampleHeader()), "only a cut header loses the file")
			continue
		}
		require.Contains(t, err.Error(), "cut short")
		require.Less(t, len(f.Entries), len(whole.Entries))
		for i, e := range f.Entries {
			require.True(t, proto.Equal(whole.Entries[i], e))
		}
	}
	require.Greater(t, truncated, len(b)/2)
	_, err = Read(nil, nil)
	require.ErrorIs(t, err, ErrTruncated)
	_, err = Read([]byte(Magic[:5]), nil)
	require.ErrorIs(t, err, ErrTruncated)
}

func TestCorruptRecordIsAnError(t *testing.T) {
	b := encode(t, sampleHeader(), sample())
	cases := map[string][]byte{
		"not a record": []byte("PK\x03\x04 this is a zip file, not a record"),
	}
	flipped := bytes.Clone(b)
	flipped[len(flipped)-3] ^= 0x40 // in the last frame's body
	cases["flipped byte"] = flipped
	huge := bytes.Clone(b)
	huge[len(Magic)+3] = 0xff // the header frame claims 4 GiB
	cases["huge frame"] = huge
	badHeader := append([]byte(Magic), encode(t, &Header{App: "x", Rank: 3, Size: 2}, nil)[len(Magic):]...)
	cases["bad header"] = badHeader
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := Read(c, nil)
			require.Nil(t, f)
			require.ErrorIs(t, err, ErrCorrupt)
			require.False(t, errors.Is(err, ErrTruncated))
		})
	}
}

func TestReadFileAndHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pe-1.0.rec")
	b := encode(t, sampleHeader(), sample())
	require.NoError(t, os.WriteFile(path, b, 0o644))
	h, err := ReadHeader(path)
	require.NoError(t, err)
	require.True(t, proto.Equal(sampleHeader(), h))
	f, err := ReadFile(path, nil)
	require.NoError(t, err)
	require.Equal(t, path, f.Path)

	require.NoError(t, os.WriteFile(path, b[:len(b)-2], 0o644))
	f, err = ReadFile(path, nil)
	require.ErrorIs(t, err, ErrTruncated)
	require.Contains(t, err.Error(), path)
	require.Equal(t, path, f.Path)

	require.NoError(t, os.WriteFile(path, []byte("garbage, and more garbage"), 0o644))
	_, err = ReadHeader(path)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = ReadFile(filepath.Join(dir, "missing.rec"), nil)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestWriterErrorSticks(t *testing.T) {
	w := NewWriter(failingWriter{}, sampleHeader())
	require.Error(t, w.Flush())
	w.Append(&Entry{Kind: Kind_RESUME})
	require.Error(t, w.Flush())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
