package regioncheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gochare/gochare/actor"
)

var (
	// ErrNotCommutative reports a region whose messages, handled in
	// another order, leave another state or send something else: the
	// handler's commutative annotation is wrong.
	ErrNotCommutative = errors.New("regioncheck: handler annotated commutative is not")
	// ErrRerun reports a region the check could not re-run as it ran:
	// the state does not unpack, a message does not decode, the handler
	// panics in the delivery order, or the re-run in the delivery order
	// does not reproduce the task's state after the region.
	ErrRerun = errors.New("regioncheck: cannot re-run the region")
)

// Region is one completed commutative region of one task: the task's
// state before its first message and its messages as they were
// delivered.
type Region struct {
	Collection *actor.CollectionDef
	Handler    *actor.HandlerDef
	Index      actor.Index
	// Key is the region's key (the messages' key).
	Key uint64
	// Before is the task's packed state before the region's first message
	// (CollectionDef.PackTask); Expected the key it expected then.
	Before   []byte
	Expected uint64
	// Messages are the region's messages, in delivery order.
	Messages []Message
	// After, if not nil, is the task's packed state after the region's
	// last message (before its completion step): the re-run in delivery
	// order must give it back.
	After []byte
}

// Message is one message of a region.
type Message struct {
	// Payload is the message as encoded by the handler's codec.
	Payload []byte
	// From names the sender, for the report ("" if unknown).
	From string
}

// Env is what a re-run handler may ask its Context.
type Env struct {
	// Job declares the collections the handler may send to (their
	// codecs encode the captured sends).
	Job *actor.Job
	// PE and NumPEs answer Context.PE and NumPEs.
	PE, NumPEs int
	// AtSync answers Context.AtSync (nil: false). It must not change
	// anything: the re-runs are not the task.
	AtSync func(step uint64) bool
}

// effect is one thing a handler did through its Context: what (a
// description, compared too) and data (its bytes).
type effect struct {
	what string
	data []byte
}

// run is the outcome of one order.
type run struct {
	state    []byte
	expected uint64
	// effects[i] is what the handler of message i did.
	effects [][]effect
}

// Check re-runs the region in its delivery order and in each of orders
// (permutations of the message indices, see Orders) on fresh copies of the
// state before it, and returns an error wrapping ErrNotCommutative at the
// first order whose outcome differs, or ErrRerun if the region cannot be
// re-run. A region of one message has no other order: nil.
func Check(r Region, env Env, orders [][]int) error {
	n := len(r.Messages)
	if n < 2 {
		return nil
	}
	delivery := make([]int, n)
	for i := range delivery {
		delivery[i] = i
	}
	ref, err := r.rerun(env, delivery)
	if err != nil {
		return fmt.Errorf("%w: %s: in delivery order: %v", ErrRerun, r.name(), err)
	}
	if r.After != nil && !bytes.Equal(ref.state, r.After) {
		return fmt.Errorf("%w: %s: re-run in delivery order on a copy unpacked from the state before the region, the handler leaves a state other than the task's (%s): "+
			"the task's packing leaves out part of its state, or the handler depends on something besides the task and its messages",
			ErrRerun, r.name(), firstDifference(ref.state, r.After))
	}
	for _, order := range orders {
		if len(order) != n {
			return fmt.Errorf("%w: %s: order %v of %d messages for a region of %d", ErrRerun, r.name(), order, len(order), n)
		}
		got, err := r.rerun(env, order)
		if err != nil {
			return fmt.Errorf("%w: %s: in order %v (delivery order %v): %v%s", ErrNotCommutative, r.name(), order, delivery, err, r.senders())
		}
		if what := compare(ref, got); what != "" {
			return fmt.Errorf("%w: %s: in order %v (delivery order %v), %s%s", ErrNotCommutative, r.name(), order, delivery, what, r.senders())
		}
	}
	return nil
}

func (r Region) name() string {
	return fmt.Sprintf("collection %q, handler %q, region key %d (task %s%v)", r.Collection.Name, r.Handler.Name, r.Key, r.Collection.Name, r.Index)
}

// senders lists the messages by their senders, when known.
func (r Region) senders() string {
	var b strings.Builder
	for i, m := range r.Messages {
		if m.From == "" {
			return ""
		}
		if i == 0 {
			b.WriteString("; messages by index: ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d from %s", i, m.From)
	}
	return b.String()
}

// compare describes the first difference of got from ref ("" if none).
func compare(ref, got run) string {
	if !bytes.Equal(ref.state, got.state) {
		return "the packed state differs: " + firstDifference(got.state, ref.state)
	}
	for i := range ref.effects {
		a, b := ref.effects[i], got.effects[i]
		for k := range max(len(a), len(b)) {
			switch {
			case k >= len(a):
				return fmt.Sprintf("the handler of message %d did more: %s (its action %d)", i, b[k].what, k)
			case k >= len(b):
				return fmt.Sprintf("the handler of message %d did less: not %s (its action %d)", i, a[k].what, k)
			case a[k].what != b[k].what:
				return fmt.Sprintf("the handler of message %d did %s where in delivery order it did %s (its action %d)", i, b[k].what, a[k].what, k)
			case !bytes.Equal(a[k].data, b[k].data):
				return fmt.Sprintf("the handler of message %d did %s with other bytes: %s (its action %d)", i, b[k].what, firstDifference(b[k].data, a[k].data), k)
			}
		}
	}
	if ref.expected != got.expected {
		return fmt.Sprintf("the task expects key %d after the region, %d in delivery order", got.expected, ref.expected)
	}
	return ""
}

// firstDifference describes where got first differs from want.
func firstDifference(got, want []byte) string {
	n := min(len(got), len(want))
	at := n
	for i := range n {
		if got[i] != want[i] {
			at = i
			break
		}
	}
	if at == n && len(got) != len(want) {
		return fmt.Sprintf("%d bytes, %d in delivery order", len(got), len(want))
	}
	return fmt.Sprintf("byte %d of %d is %#02x, %#02x in delivery order", at, len(got), got[at], want[at])
}

// rerun handles the region's messages in order on a fresh copy of the
// state before it.
func (r Region) rerun(env Env, order []int) (out run, err error) {
	task := r.Collection.New(r.Index)
	// Each run gets its own copies of the bytes: a task or a message that
	// kept the buffer it was decoded from must not change the next run's.
	if err := r.Collection.UnpackTask(task, slices.Clone(r.Before)); err != nil {
		return out, fmt.Errorf("unpack the state before the region: %v", err)
	}
	ctx := &captureContext{env: env, at: r.Index, expected: r.Expected}
	out.effects = make([][]effect, len(r.Messages))
	for _, i := range order {
		m, err := r.Handler.Message.Decode(slices.Clone(r.Messages[i].Payload))
		if err != nil {
			return out, fmt.Errorf("message %d does not decode: %v", i, err)
		}
		ctx.effects = nil
		if err := invoke(func() { r.Handler.Invoke(task, ctx, m) }); err != nil {
			return out, fmt.Errorf("the handler of message %d panicked: %v", i, err)
		}
		out.effects[i] = ctx.effects
	}
	out.state, err = r.Collection.PackTask(task)
	if err != nil {
		return out, fmt.Errorf("pack the state after the region: %v", err)
	}
	out.expected = ctx.expected
	return out, nil
}

func invoke(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v\n%s", r, debug.Stack())
		}
	}()
	fn()
	return nil
}

// captureContext is the actor.Context of a re-run: it records what the
// handler does instead of doing it.
type captureContext struct {
	env      Env
	at       actor.Index
	expected uint64
	effects  []effect
}

var _ actor.Context = (*captureContext)(nil)

func (c *captureContext) Index() actor.Index { return c.at }
func (c *captureContext) PE() int            { return c.env.PE }
func (c *captureContext) NumPEs() int        { return c.env.NumPEs }

func (c *captureContext) record(what string, data []byte) {
	c.effects = append(c.effects, effect{what: what, data: data})
}

func (c *captureContext) Post(t actor.Target, key uint64, m any) {
	colls := c.env.Job.Collections()
	if int(t.Collection) >= len(colls) || int(t.Handler) >= len(colls[t.Collection].Handlers) {
		panic(fmt.Sprintf("regioncheck: post to unknown handler %d of collection %d", t.Handler, t.Collection))
	}
	coll := colls[t.Collection]
	h := coll.Handlers[t.Handler]
	payload, err := h.Message.Append(nil, m)
	if err != nil {
		panic(fmt.Sprintf("regioncheck: marshal %T for %s.%s: %v", m, coll.Name, h.Name, err))
	}
	var to string
	switch t.Scope {
	case actor.ScopeOne:
		to = fmt.Sprintf("%s%v", coll.Name, t.Index)
	case actor.ScopeSection:
		to = fmt.Sprintf("section %v of %s", t.Section, coll.Name)
	default:
		to = "all of " + coll.Name
	}
	c.record(fmt.Sprintf("send to %s.%s key %d", to, h.Name, key), payload)
}

func (c *captureContext) Expect(key uint64) {
	c.expected = key
	c.record(fmt.Sprintf("Expect(%d)", key), nil)
}

func (c *captureContext) Contribute(r actor.Reducer, v actor.Value, cb actor.Callback) {
	var data []byte
	data = binary.AppendUvarint(data, uint64(len(v.Floats)))
	for _, f := range v.Floats {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(f))
	}
	data = binary.AppendUvarint(data, uint64(len(v.Ints)))
	for _, i := range v.Ints {
		data = binary.AppendVarint(data, i)
	}
	data = append(data, v.Bytes...)
	c.record(fmt.Sprintf("Contribute(%s) to %+v", r.Name(), cb.Target()), data)
}

func (c *captureContext) StartQuiescence(cb actor.CallbackTo[*actor.Quiescence]) {
	c.record(fmt.Sprintf("StartQuiescence to %+v", cb.Target()), nil)
}

func (c *captureContext) AtSync(step uint64) bool {
	taken := c.env.AtSync != nil && c.env.AtSync(step)
	c.record(fmt.Sprintf("AtSync(%d)", step), nil)
	return taken
}

func (c *captureContext) Exit(status int) { c.record(fmt.Sprintf("Exit(%d)", status), nil) }

func (c *captureContext) Printf(format string, args ...any) {
	c.record("Printf", []byte(fmt.Sprintf(format, args...)))
}

// Logf writes diagnostics, no part of what the task does: not compared.
func (c *captureContext) Logf(string, ...any) {}

// Orders returns up to k orders of n messages other than the delivery
// order (0, 1, ..., n-1), for Check: the reverse first, then orders drawn
// from seed. When k covers every other order, it returns them all.
func Orders(n, k int, seed uint64) [][]int {
	if n < 2 || k < 1 {
		return nil
	}
	if n <= 8 && factorial(n)-1 <= k {
		return allOrders(n)[1:]
	}
	identity := make([]int, n)
	reverse := make([]int, n)
	for i := range n {
		identity[i], reverse[i] = i, n-1-i
	}
	out := [][]int{reverse}
	seen := map[string]bool{orderKey(identity): true, orderKey(reverse): true}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for tries := 0; len(out) < k && tries < 16*k; tries++ {
		p := rng.Perm(n)
		if key := orderKey(p); !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	return out
}

// AllOrders returns every order of n messages but the delivery order, for
// a region small enough to try them all (n at most 8).
func AllOrders(n int) [][]int {
	if n < 2 || n > 8 {
		panic(fmt.Sprintf("regioncheck: AllOrders(%d): want 2 to 8 messages", n))
	}
	return allOrders(n)[1:]
}

// allOrders returns the n! orders, the delivery order first.
func allOrders(n int) [][]int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	out := [][]int{slices.Clone(p)}
	for nextPermutation(p) {
		out = append(out, slices.Clone(p))
	}
	return out
}

// nextPermutation steps p to the next order in lexicographic order; false
// after the last.
func nextPermutation(p []int) bool {
	i := len(p) - 2
	for i >= 0 && p[i] >= p[i+1] {
		i--
	}
	if i < 0 {
		return false
	}
	j := len(p) - 1
	for p[j] <= p[i] {
		j--
	}
	p[i], p[j] = p[j], p[i]
	slices.Reverse(p[i+1:])
	return true
}

func factorial(n int) int {
	f := 1
	for i := 2; i <= n; i++ {
		f *= i
	}
	return f
}

func orderKey(p []int) string {
	b := make([]byte, 0, 2*len(p))
	for _, v := range p {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return string(b)
}
