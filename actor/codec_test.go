package actor

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type inner struct {
	Name  string
	Count int32
}

type plainMessage struct {
	Step    uint64
	Weights []float64
	Small   float32
	Bytes   []byte
	Nil     []int
	Empty   []int
	ByName  map[string]int
	Nested  *inner
	Grid    [3]int16
	Entries []inner
}

// A plain message survives the codec bit for bit (NaN payloads, -0,
// float32, nil against empty slices), and the same value always gives
// the same bytes, whatever order its map was filled in.
func TestPlainCodecIsExactAndDeterministic(t *testing.T) {
	codec, err := CodecOf[*plainMessage]()
	require.NoError(t, err)
	require.Equal(t, "*github.com/gochare/gochare/actor.plainMessage", codec.Name)
	nan := math.Float64frombits(0x7ff8_0000_dead_beef)
	build := func(keys []string) *plainMessage {
		m := &plainMessage{
			Step: 7, Weights: []float64{1.5, math.Copysign(0, -1), nan, math.Inf(-1), 1e-310}, Small: 0.1,
			Bytes: []byte{0, 1, 2}, Empty: []int{}, ByName: map[string]int{}, Nested: &inner{"n", -3},
			Grid: [3]int16{1, -2, 3}, Entries: []inner{{"a", 1}, {"b", 2}},
		}
		for _, k := range keys {
			m.ByName[k] = int(k[0]) // same entries, another insertion order
		}
		return m
	}
	a, err := codec.Append(nil, build([]string{"x", "y", "z", "w"}))
	require.NoError(t, err)
	b, err := codec.Append([]byte("prefix"), build([]string{"w", "z", "y", "x"}))
	require.NoError(t, err)
	require.Equal(t, a, b[len("prefix"):], "same value, same bytes")

	back, err := codec.Decode(a)
	require.NoError(t, err)
	m := back.(*plainMessage)
	require.Equal(t, uint64(0x7ff8_0000_dead_beef), math.Float64bits(m.Weights[2]), "NaN payload kept")
	require.Equal(t, uint64(1)<<63, math.Float64bits(m.Weights[1]), "-0 kept")
	require.Equal(t, float32(0.1), m.Small)
	require.Nil(t, m.Nil)
	require.NotNil(t, m.Empty)
	m.Weights[2] = 0
	want := build([]string{"x", "y", "z", "w"})
	want.Weights[2] = 0
	require.Equal(t, want, m)
	again, err := codec.Append(nil, back)
	require.NoError(t, err)
	m.Weights[2] = nan
	again2, err := codec.Append(nil, m)
	require.NoError(t, err)
	require.Equal(t, a, again2, "decode then encode gives the bytes back")
	require.NotEqual(t, a, again)

	// A message of another type is an error, not a panic.
	_, err = codec.Append(nil, &inner{})
	require.ErrorContains(t, err, "for a handler of *github.com/gochare/gochare/actor.plainMessage")
	// Bytes of another layout are refused (an unknown field).
	other, err := CodecOf[inner]()
	require.NoError(t, err)
	_, err = other.Decode(a)
	require.Error(t, err)
}

// Value types, scalars and protobuf messages all have codecs.
func TestCodecKinds(t *testing.T) {
	u, err := CodecOf[uint64]()
	require.NoError(t, err)
	data, err := u.Append(nil, uint64(1<<40))
	require.NoError(t, err)
	back, err := u.Decode(data)
	require.NoError(t, err)
	require.Equal(t, uint64(1<<40), back)

	p, err := CodecOf[*wrapperspb.UInt64Value]()
	require.NoError(t, err)
	require.Equal(t, "google.protobuf.UInt64Value", p.Name)
	data, err = p.Append(nil, wrapperspb.UInt64(9))
	require.NoError(t, err)
	back, err = p.Decode(data)
	require.NoError(t, err)
	require.Equal(t, uint64(9), back.(*wrapperspb.UInt64Value).Value)
	require.Equal(t, ProtoCodec[*wrapperspb.UInt64Value]().Name, p.Name)
}

type withUnexported struct {
	Public  int
	private int
}

type withFunc struct{ F func() }
type withAny struct{ V any }
type withChan struct{ C []chan int }
type withTag struct {
	A int `json:"-"`
}

// The plain codec refuses what it would not carry whole, naming the field.
func TestPlainCodecRefusesWhatItCannotCarry(t *testing.T) {
	for _, tc := range []struct {
		codec func() (Codec, error)
		why   string
	}{
		{CodecOf[withUnexported], "actor.withUnexported.private is unexported"},
		{CodecOf[*withFunc], "actor.withFunc.F is of kind func"},
		{CodecOf[withAny], "actor.withAny.V is of kind interface"},
		{CodecOf[withChan], "actor.withChan.C[] is of kind chan"},
		{CodecOf[withTag], "withTag.A has a cbor or json tag"},
		{CodecOf[complex128], "is of kind complex128"},
	} {
		_, err := tc.codec()
		require.ErrorIs(t, err, ErrNotPlain)
		require.ErrorContains(t, err, tc.why)
	}
}

// plainTask is a task packed by the runtime from its exported fields.
type plainTask struct {
	Counts map[string]int
	Sum    float64
	Trail  []uint64
	config *string `actor:"transient"`
}

type emptyTask struct{}

type halfBinary struct{}

func (*halfBinary) MarshalBinary() ([]byte, error) { return nil, nil }

// A plain task is packed and unpacked into a fresh task exactly: the
// state is its exported fields (a map is replaced, not merged into what
// the constructor put there), a transient field keeps the constructor's
// value. A stateless task needs nothing. Types the runtime cannot pack
// are refused at declaration.
func TestPlainTaskPacking(t *testing.T) {
	cfg := "config"
	j := NewJob()
	c := NewCollection(j, "plain", Shape{2}, BlockMap, func(Index) *plainTask {
		return &plainTask{Counts: map[string]int{"constructor": 1}, config: &cfg}
	})
	empty := NewCollection(j, "empty", Shape{1}, BlockMap, func(Index) *emptyTask { return &emptyTask{} })
	require.NotContains(t, errString(j), "plain")

	task := &plainTask{Counts: map[string]int{"a": 1, "b": 2}, Sum: math.Pi, Trail: []uint64{3, 1, 4}}
	data, err := c.Def().PackTask(task)
	require.NoError(t, err)
	fresh := c.Def().New(Idx(0)).(*plainTask)
	require.NoError(t, c.Def().UnpackTask(fresh, data))
	require.Equal(t, task.Counts, fresh.Counts)
	require.Equal(t, task.Sum, fresh.Sum)
	require.Equal(t, task.Trail, fresh.Trail)
	require.Same(t, &cfg, fresh.config, "transient field from the constructor")
	again, err := c.Def().PackTask(fresh)
	require.NoError(t, err)
	require.Equal(t, data, again)
	require.Error(t, c.Def().UnpackTask(c.Def().New(Idx(1)), data[:len(data)-1]), "truncated state")

	data, err = empty.Def().PackTask(&emptyTask{})
	require.NoError(t, err)
	require.NoError(t, empty.Def().UnpackTask(&emptyTask{}, data))

	bad := NewJob()
	NewCollection(bad, "byvalue", Shape{1}, BlockMap, func(Index) plainTask { return plainTask{} })
	NewCollection(bad, "unexported", Shape{1}, BlockMap, func(Index) *withUnexported { return &withUnexported{} })
	NewCollection(bad, "half", Shape{1}, BlockMap, func(Index) *halfBinary { return &halfBinary{} })
	msg := errString(bad)
	require.Contains(t, msg, `collection "byvalue": actor: type cannot be encoded field by field: task type actor.plainTask is not a pointer to a struct`)
	require.Contains(t, msg, `collection "unexported": actor: type cannot be encoded field by field: *github.com/gochare/gochare/actor.withUnexported.private is unexported, so it would be lost (export it, or tag it actor:"transient"`)
	require.Contains(t, msg, `collection "half": actor: task cannot be packed: *actor.halfBinary has only one of MarshalBinary and UnmarshalBinary`)
}

func errString(j *Job) string {
	if err := j.Err(); err != nil {
		return err.Error()
	}
	return ""
}

// Handler IDs come from the names: two declarations of the same handlers
// in other orders give the same IDs and the same digest; another name
// gives another digest. A callback made before later declarations still
// reaches its handler.
func TestHandlerIDsComeFromNames(t *testing.T) {
	declare := func(names []string) (*Job, map[string]int32, Callback) {
		j := NewJob()
		c := NewCollection(j, "c", Shape{4}, BlockMap, func(Index) *emptyTask { return &emptyTask{} })
		var cb Callback
		ids := map[string]int32{}
		var defs []*HandlerDef
		for i, name := range names {
			p := Handle(c, name, AnnotateOrderDependent(), func(*emptyTask, Context, *ReductionResult) {})
			if i == 0 {
				cb = p.At(Idx(2))
			}
			defs = append(defs, p.Handler())
		}
		for _, h := range defs {
			ids[h.Name] = h.ID
		}
		return j, ids, cb
	}
	j1, ids1, cb1 := declare([]string{"zeta", "alpha", "mid"})
	j2, ids2, _ := declare([]string{"mid", "zeta", "alpha"})
	require.Equal(t, map[string]int32{"alpha": 0, "mid": 1, "zeta": 2}, ids1)
	require.Equal(t, ids1, ids2)
	require.Equal(t, j1.HandlerTable(), j2.HandlerTable())
	require.Equal(t, j1.Digest(), j2.Digest())
	require.Equal(t, int32(2), cb1.Target().Handler, "the callback made first, to zeta, follows zeta's ID")
	require.Equal(t, Idx(2), cb1.Target().Index)

	j3, _, _ := declare([]string{"zeta", "alpha", "other"})
	require.NotEqual(t, j1.Digest(), j3.Digest())
	require.Contains(t, j3.HandlerTable(), `handler 1 "other" order-dependent message gochare.actor.ReductionResult`)
}

// The digest also covers a plain message's layout: a field added to a
// message type changes it.
func TestDigestCoversMessageLayouts(t *testing.T) {
	digest := func(declare func(*Collection[*emptyTask])) string {
		j := NewJob()
		declare(NewCollection(j, "c", Shape{1}, BlockMap, func(Index) *emptyTask { return &emptyTask{} }))
		return j.Digest()
	}
	a := digest(func(c *Collection[*emptyTask]) {
		Handle(c, "h", AnnotateOrderDependent(), func(*emptyTask, Context, inner) {})
	})
	b := digest(func(c *Collection[*emptyTask]) {
		Handle(c, "h", AnnotateOrderDependent(), func(*emptyTask, Context, struct {
			Name  string
			Count int32
			Extra bool
		}) {
		})
	})
	require.NotEqual(t, a, b)
	require.Len(t, a, 24)
}

// AnnotateCommutativeBy gives each task and key its own region size.
func TestRegionSizesAtRunTime(t *testing.T) {
	a := AnnotateCommutativeBy(func(at Index, key uint64) int { return int(at[0]) + int(key) })
	require.True(t, a.SizedAtRunTime())
	require.Equal(t, 5, a.RegionSizeAt(Idx(2), 3))
	require.Equal(t, "commutative(sized at run time)", a.String())
	require.False(t, AnnotateCommutative(3).SizedAtRunTime())
	require.Equal(t, 3, AnnotateCommutative(3).RegionSizeAt(Idx(9), 9))
}

// A reduction sent to a callback of a handler of another message does not
// compile; nor does a quiescence callback to a reduction handler.
func TestWrongCallbackTypesDoNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	dir, err := os.Getwd()
	require.NoError(t, err)
	for name, body := range map[string]string{
		"reduction":  `ctx.Contribute(actor.Sum, actor.Value{}, p.At(actor.Idx(0)))`,
		"quiescence": `ctx.StartQuiescence(r.At(actor.Idx(0)))`,
		"right":      `ctx.Contribute(actor.Sum, actor.Value{}, r.At(actor.Idx(0))); ctx.StartQuiescence(q.All())`,
	} {
		src := `package wrongcallback

import "github.com/gochare/gochare/actor"

func use(ctx actor.Context, p *actor.Proxy[*actor.Start], r *actor.Proxy[*actor.ReductionResult], q *actor.Proxy[*actor.Quiescence]) {
	` + body + `
}
`
		fake := filepath.Join(dir, "internal", "wrongcallback", "use.go")
		file := filepath.Join(t.TempDir(), "use.go")
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {fake: file}})
		require.NoError(t, err)
		overlayFile := filepath.Join(t.TempDir(), "overlay.json")
		require.NoError(t, os.WriteFile(overlayFile, overlay, 0o644))
		out, err := exec.Command("go", "build", "-overlay", overlayFile, "./internal/wrongcallback").CombinedOutput()
		if name == "right" {
			require.NoError(t, err, "%s", out)
			continue
		}
		require.Error(t, err, name)
		require.Contains(t, string(out), "cannot use", "%s: %s", name, out)
		t.Logf("%s: %s", name, out)
	}
}

// appendingTask packs itself with MarshalBinary and, into a given
// buffer, with AppendBinary; appends counts the latter's calls.
type appendingTask struct {
	V       byte
	appends int
}

func (a *appendingTask) MarshalBinary() ([]byte, error) { return []byte{'m', a.V}, nil }
func (a *appendingTask) AppendBinary(b []byte) ([]byte, error) {
	a.appends++
	return append(b, 'm', a.V), nil
}
func (a *appendingTask) UnmarshalBinary(b []byte) error {
	if len(b) != 2 || b[0] != 'm' {
		return errors.New("bad state")
	}
	a.V = b[1]
	return nil
}

// AppendTask appends what PackTask returns after what the buffer held:
// through AppendBinary for a task that has it, through the task's
// MarshalBinary or the plain codec for the others.
func TestAppendTaskAppendsThePackedState(t *testing.T) {
	j := NewJob()
	app := NewCollection(j, "appending", Shape{1}, BlockMap, func(Index) *appendingTask { return &appendingTask{} })
	plain := NewCollection(j, "plain", Shape{1}, BlockMap, func(Index) *plainTask { return &plainTask{} })
	require.NotContains(t, errString(j), "appending")

	task := &appendingTask{V: 7}
	buf := make([]byte, 0, 64)
	got, err := app.Def().AppendTask(append(buf, "head"...), task)
	require.NoError(t, err)
	require.Equal(t, "headm\x07", string(got))
	require.Equal(t, 1, task.appends, "AppendBinary packed it")
	require.Same(t, &buf[:1][0], &got[0], "packed into the buffer given")

	p := &plainTask{Sum: 2.5, Trail: []uint64{1, 2}}
	want, err := plain.Def().PackTask(p)
	require.NoError(t, err)
	got, err = plain.Def().AppendTask([]byte("x"), p)
	require.NoError(t, err)
	require.Equal(t, append([]byte("x"), want...), got)
}
