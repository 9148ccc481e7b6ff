package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/commutative"
	"github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler/record"
)

// Replaying one task (gochare replay): the task is built from its state
// at a recorded period's checkpoint, inside a PE of the recorded rank and
// size that hosts nothing else and sends nothing, and its code runs again
// on the period's recorded runs in their order (handlers, completion
// steps, ResumeFromSync), in this process, where a debugger can stop in
// it. Each send is compared, as it is made, with the recorded one
// (destination, handler, key, payload bytes), and each AtSync gets the
// recorded answer; the first difference is reported with the run it
// happened in. When the whole of a checkpointed period was replayed, the
// task's state is compared with the one of the checkpoint that ended it.

// Errors of Replay.
var (
	// ErrNoRecord: the directory holds no record (or not the one asked for).
	ErrNoRecord = errors.New("scheduler: no record")
	// ErrUnknownTask: the task named is not one of the recorded job.
	ErrUnknownTask = errors.New("scheduler: no such task")
	// ErrEpochNotRecorded: no period of the task starts at that epoch.
	ErrEpochNotRecorded = errors.New("scheduler: epoch not recorded")
	// ErrReplayMismatch: the replayed task did not do what was recorded.
	ErrReplayMismatch = errors.New("scheduler: replay differs from the record")
)

// ReplayConfig says what to replay.
type ReplayConfig struct {
	// Dir is the record directory (gochare run --record DIR).
	Dir string
	// Apps are the applications of this binary, by name: the record's
	// must be one of them.
	Apps map[string]actor.App
	// Task names the task: COLLECTION[i,j,...] (or with parentheses).
	Task string
	// FromEpoch is the epoch of the checkpoint the replay starts from
	// (0: the earliest recorded).
	FromEpoch uint64
	// ToStep, if positive, stops the replay after that many runs.
	ToStep int
	// Verbose writes a line per run to Out.
	Verbose bool
	// Out receives the replay's notes and the task's printed lines.
	Out io.Writer
}

// ReplayResult is what a replay did.
type ReplayResult struct {
	Task       string
	Epoch      uint64
	File       string
	Rank       int
	Generation uint64
	End        record.End
	// Steps is the number of runs replayed, of Recorded.
	Steps, Recorded int
	// Sends is the number of sends compared.
	Sends int
	// StateChecked: the state at the period's end equals the recorded
	// checkpoint's.
	StateChecked bool
}

// Replay replays one period of one task of a record (see above). An error
// wraps ErrReplayMismatch when the task did not do what was recorded; the
// result says how far it got.
func Replay(cfg ReplayConfig) (ReplayResult, error) {
	var res ReplayResult
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	files, err := filepath.Glob(filepath.Join(cfg.Dir, "pe-*.rec"))
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrNoRecord, err)
	}
	if len(files) == 0 {
		if _, err := os.Stat(cfg.Dir); err != nil {
			return res, fmt.Errorf("%w: %v", ErrNoRecord, err)
		}
		return res, fmt.Errorf("%w: %s holds no record file (pe-R.N.rec, written by gochare run --record %s)", ErrNoRecord, cfg.Dir, cfg.Dir)
	}
	slices.Sort(files)
	hdr, err := record.ReadHeader(files[0])
	if err != nil {
		return res, err
	}
	app, ok := cfg.Apps[hdr.App]
	if !ok {
		return res, fmt.Errorf("%w: the record is of application %q, which this binary does not have (replay with the binary that ran it)", ErrNoRecord, hdr.App)
	}
	jobDef, err := Define(app, hdr.Args)
	if err != nil {
		return res, err
	}
	defs := append(append([]*actor.CollectionDef(nil), jobDef.Collections()...), reducerCollection(jobDef))
	coll, lin, err := parseTask(defs, cfg.Task)
	if err != nil {
		return res, err
	}
	def := defs[coll]
	id := TaskID(def.ID, lin)
	res.Task = taskName(def, lin)

	// Every period of the task, in every file.
	var segs []*record.Segment
	var movedIn []*record.Entry
	keep := func(e *record.Entry) bool { return e.Task == id || e.Kind == record.Kind_ROLLBACK }
	for _, path := range files {
		f, err := record.ReadFile(path, keep)
		if errors.Is(err, record.ErrTruncated) && f != nil {
			fmt.Fprintf(cfg.Out, "replay: note: %v; using the frames before it\n", err)
		} else if err != nil {
			return res, err
		}
		if f.Header.JobId != hdr.JobId || f.Header.App != hdr.App {
			return res, fmt.Errorf("%w: %s is of another job than %s (one record per directory)", ErrNoRecord, path, files[0])
		}
		segs = append(segs, record.Segments(f, uint64(id))...)
		for _, e := range f.Entries {
			if e.Kind == record.Kind_STATE && e.MovedIn {
				movedIn = append(movedIn, e)
			}
		}
	}
	byEpoch := map[uint64][]*record.Segment{}
	var epochs []uint64
	for _, s := range segs {
		if len(byEpoch[s.Epoch]) == 0 {
			epochs = append(epochs, s.Epoch)
		}
		byEpoch[s.Epoch] = append(byEpoch[s.Epoch], s)
	}
	slices.Sort(epochs)
	if len(epochs) == 0 {
		return res, fmt.Errorf("%w: %s has no recorded period in %s", ErrEpochNotRecorded, res.Task, cfg.Dir)
	}
	epoch := cfg.FromEpoch
	if epoch == 0 {
		epoch = epochs[0]
	}
	seg := record.Choose(byEpoch[epoch])
	if seg == nil {
		return res, fmt.Errorf("%w: %s has no period from epoch %d; recorded epochs: %v", ErrEpochNotRecorded, res.Task, epoch, epochs)
	}
	res.Epoch, res.File, res.End, res.Generation = epoch, seg.File.Path, seg.End, seg.Generation
	res.Rank = int(seg.File.Header.Rank)
	res.Recorded = len(seg.Steps)
	// The state a checkpointed period ends in is the next checkpoint's; a
	// period that ends with a move, the one the move brought to the
	// other PE.
	var end *record.Entry
	switch seg.End {
	case record.Checkpointed:
		end = seg.Next
	case record.Left:
		for _, e := range movedIn {
			if e.Epoch == seg.Epoch && e.Generation == seg.Generation {
				end = e
			}
		}
	}
	return replaySegment(cfg, app, seg, end, coll, lin, res)
}

func replaySegment(cfg ReplayConfig, app actor.App, seg *record.Segment, end *record.Entry, coll, lin int, res ReplayResult) (ReplayResult, error) {
	h := seg.File.Header
	control := &replayControl{out: cfg.Out, task: res.Task}
	pe, err := New(Config{
		Rank: int(h.Rank), Size: int(h.Size), JobID: h.JobId, App: app, Args: h.Args, Protocol: logging.KindNone,
		Net: replayNet{}, Control: control, Stderr: cfg.Out, CheckpointEvery: h.CheckpointEvery,
	})
	if err != nil {
		return res, err
	}
	rp := &replayer{}
	pe.replay = rp
	cp, err := migrate.UnmarshalPECheckpoint(seg.State)
	if err != nil || len(cp.Tasks) != 1 {
		return res, fmt.Errorf("%w: the state of %s at epoch %d in %s: %v", record.ErrCorrupt, res.Task, res.Epoch, res.File, err)
	}
	rec := cp.Tasks[0]
	if int(rec.Collection) != coll || rec.Lin != int64(lin) {
		return res, fmt.Errorf("%w: the state recorded for %s is of task %d[%d]", record.ErrCorrupt, res.Task, rec.Collection, rec.Lin)
	}
	el, _, err := pe.unpackRecord(rec)
	if err != nil {
		return res, err
	}
	steps := seg.Steps
	if cfg.ToStep > 0 && cfg.ToStep < len(steps) {
		steps = steps[:cfg.ToStep]
	}
	for i, step := range steps {
		rp.begin(i+1, step)
		what, err := pe.replayRun(el, step.Delivery)
		if err != nil {
			return res, fmt.Errorf("run %d of %s (%s): %w", i+1, res.Task, what, err)
		}
		if control.failed != nil {
			return res, fmt.Errorf("run %d of %s (%s): %w", i+1, res.Task, what, control.failed)
		}
		rp.end(pe)
		if rp.mismatch != "" {
			return res, fmt.Errorf("%w: run %d of %s (%s): %s", ErrReplayMismatch, i+1, res.Task, what, rp.mismatch)
		}
		res.Steps++
		res.Sends += rp.sends
		if cfg.Verbose {
			fmt.Fprintf(cfg.Out, "replay: run %d: %s: %d sends as recorded\n", i+1, what, rp.sends)
		}
	}
	if res.Steps == len(seg.Steps) && end != nil {
		got, err := packState(el)
		if err != nil {
			return res, err
		}
		next, err := migrate.UnmarshalPECheckpoint(end.Record)
		if err != nil || len(next.Tasks) != 1 {
			return res, fmt.Errorf("%w: the state of %s at the end of its period in the record: %v", record.ErrCorrupt, res.Task, err)
		}
		what := fmt.Sprintf("its checkpoint %d recorded", end.Epoch)
		if end.MovedIn {
			what = "its move to another PE carried"
		}
		if want := next.Tasks[0].Task; !bytes.Equal(got.Task, want) {
			return res, fmt.Errorf("%w: after the %d runs of the period, the state of %s (%d bytes) is not the one %s (%d bytes): they differ from byte %d",
				ErrReplayMismatch, res.Steps, res.Task, len(got.Task), what, len(want), firstDifference(got.Task, want))
		}
		res.StateChecked = true
	}
	return res, nil
}

// replayRun runs the task code of one recorded run; it returns what ran.
func (pe *PE) replayRun(el *element, e *record.Entry) (string, error) {
	ctx := &pe.ctx
	ctx.el = el
	if e.Kind == record.Kind_RESUME {
		el.atSync = false
		r, ok := el.task.(actor.Resumer)
		if !ok {
			return "ResumeFromSync", fmt.Errorf("%w: the task has no ResumeFromSync", ErrReplayMismatch)
		}
		pe.call(el, nil, "", func() { r.ResumeFromSync(ctx) })
		return "ResumeFromSync", nil
	}
	c, hi := splitHandler(e.Handler)
	if c != int(el.coll.def.ID) || hi >= len(el.coll.def.Handlers) {
		return fmt.Sprintf("handler %#x", e.Handler), fmt.Errorf("%w: the record names handler %#x, not one of %s", record.ErrCorrupt, e.Handler, el.coll.def.Name)
	}
	h := el.coll.def.Handlers[hi]
	if e.Kind == record.Kind_COMPLETE {
		what := fmt.Sprintf("%s (region complete), key %d", h.Name, e.Key)
		if h.Complete == nil {
			return what, fmt.Errorf("%w: handler %s has no completion step", record.ErrCorrupt, h.Name)
		}
		pe.call(el, h, " (region complete)", func() { h.Complete(el.task, ctx, e.Key) })
		return what, nil
	}
	what := fmt.Sprintf("%s from %s, %d bytes", h.Name, pe.describeTask(commutative.TaskID(e.Sender)), len(e.Payload))
	if h.Keyed {
		what = fmt.Sprintf("%s, key %d from %s, %d bytes", h.Name, e.Key, pe.describeTask(commutative.TaskID(e.Sender)), len(e.Payload))
	}
	m, err := h.Message.Decode(e.Payload)
	if err != nil {
		return what, fmt.Errorf("%w: the recorded message does not decode: %v", record.ErrCorrupt, err)
	}
	pe.call(el, h, "", func() { h.Invoke(el.task, ctx, m) })
	return what, nil
}

// firstDifference is the first index where a and b differ (the shorter
// one's length if one is a prefix of the other).
func firstDifference(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// describeTask names a task of the PE's job (or the runtime of a PE).
func (pe *PE) describeTask(id commutative.TaskID) string {
	c, lin := splitTaskID(id)
	if c == systemCollection {
		return fmt.Sprintf("the runtime of PE %d", lin)
	}
	if c >= len(pe.colls) || lin >= int64(pe.colls[c].n) {
		return fmt.Sprintf("task %#x", uint64(id))
	}
	return taskName(pe.colls[c].def, int(lin))
}

func taskName(def *actor.CollectionDef, lin int) string {
	at := def.Shape.At(lin)
	parts := make([]string, len(def.Shape))
	for d := range parts {
		parts[d] = strconv.Itoa(int(at[d]))
	}
	return def.Name + "[" + strings.Join(parts, ",") + "]"
}

// parseTask reads COLLECTION[i,j,...] (or COLLECTION(i,j,...)).
func parseTask(defs []*actor.CollectionDef, spec string) (coll, lin int, err error) {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	open := strings.IndexAny(spec, "[(")
	if open < 0 || !strings.HasSuffix(spec, "]") && !strings.HasSuffix(spec, ")") {
		return 0, 0, fmt.Errorf("%w: %q: want COLLECTION[i,j,...] (collections: %s)", ErrUnknownTask, spec, strings.Join(names, ", "))
	}
	name := spec[:open]
	coll = slices.Index(names, name)
	if coll < 0 {
		return 0, 0, fmt.Errorf("%w: no collection %q (collections: %s)", ErrUnknownTask, name, strings.Join(names, ", "))
	}
	def := defs[coll]
	fields := strings.Split(spec[open+1:len(spec)-1], ",")
	if len(fields) != len(def.Shape) {
		return 0, 0, fmt.Errorf("%w: %q: %s has %d dimensions (shape %v)", ErrUnknownTask, spec, name, len(def.Shape), def.Shape)
	}
	var idx actor.Index
	for d, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %q: coordinate %q is not a number", ErrUnknownTask, spec, f)
		}
		idx[d] = int32(n)
	}
	if !def.Shape.Contains(idx) {
		return 0, 0, fmt.Errorf("%w: %q is outside %s's shape %v", ErrUnknownTask, spec, name, def.Shape)
	}
	return coll, def.Shape.Linear(idx), nil
}

// replayer compares a replayed run's sends and AtSync calls with the
// recorded ones (PE.send and PE.atSync call it in a replay).
type replayer struct {
	run      int
	effects  []*record.Entry
	at       int
	sends    int
	mismatch string
}

func (r *replayer) begin(run int, step record.Step) {
	r.run, r.effects, r.at, r.sends, r.mismatch = run, step.Effects, 0, 0, ""
}

func (r *replayer) next() *record.Entry {
	if r.at >= len(r.effects) {
		return nil
	}
	e := r.effects[r.at]
	r.at++
	return e
}

func (r *replayer) sent(pe *PE, from commutative.TaskID, m logging.Message) {
	if r.mismatch != "" {
		return
	}
	r.sends++
	e := r.next()
	got := pe.describeSend(uint64(m.To), m.Handler, m.Key, m.Payload)
	switch {
	case e == nil:
		r.mismatch = fmt.Sprintf("send %d (%s) was not recorded: the run recorded %d", r.sends, got, r.sends-1)
	case e.Kind != record.Kind_SEND:
		r.mismatch = fmt.Sprintf("send %d (%s) where the record has AtSync(%d)", r.sends, got, e.Step)
	case e.To != uint64(m.To) || e.Handler != m.Handler || e.Key != m.Key || !bytes.Equal(e.Payload, m.Payload):
		r.mismatch = fmt.Sprintf("send %d differs: replayed %s, recorded %s", r.sends, got, pe.describeSend(e.To, e.Handler, e.Key, e.Payload))
		if e.To == uint64(m.To) && e.Handler == m.Handler && e.Key == m.Key {
			r.mismatch += fmt.Sprintf(" (payloads differ from byte %d)", firstDifference(e.Payload, m.Payload))
		}
	}
}

func (r *replayer) atSync(pe *PE, el *element, step uint64) bool {
	if r.mismatch != "" {
		return pe.takeSyncPoint(el, step)
	}
	e := r.next()
	switch {
	case e == nil:
		r.mismatch = fmt.Sprintf("AtSync(%d) was not recorded", step)
	case e.Kind != record.Kind_AT_SYNC:
		r.mismatch = fmt.Sprintf("AtSync(%d) where the record has a send (%s)", step, pe.describeSend(e.To, e.Handler, e.Key, e.Payload))
	case e.Step != step:
		r.mismatch = fmt.Sprintf("AtSync(%d) where the record has AtSync(%d)", step, e.Step)
	default:
		el.atSync = el.atSync || e.Taken
		pe.noteStep(el, step)
		return e.Taken
	}
	return pe.takeSyncPoint(el, step)
}

// end checks that the run made every recorded send.
func (r *replayer) end(pe *PE) {
	if r.mismatch != "" || r.at >= len(r.effects) {
		return
	}
	e := r.effects[r.at]
	if e.Kind == record.Kind_AT_SYNC {
		r.mismatch = fmt.Sprintf("the record has AtSync(%d) after the %d sends replayed, the replay none", e.Step, r.sends)
		return
	}
	r.mismatch = fmt.Sprintf("the record has %d more effects after the %d sends replayed, the first: send %s",
		len(r.effects)-r.at, r.sends, pe.describeSend(e.To, e.Handler, e.Key, e.Payload))
}

func (pe *PE) describeSend(to uint64, handler uint32, key uint64, payload []byte) string {
	c, hi := splitHandler(handler)
	name := fmt.Sprintf("handler %#x", handler)
	if c < len(pe.colls) && hi < len(pe.colls[c].def.Handlers) {
		name = pe.colls[c].def.Handlers[hi].Name
	}
	return fmt.Sprintf("to %s.%s, key %d, %d bytes", pe.describeTask(commutative.TaskID(to)), name, key, len(payload))
}

// replayNet is the Net of a replay: nothing leaves.
type replayNet struct{}

func (replayNet) Send(int, []byte) {}
func (replayNet) Flush()           {}
func (replayNet) Post(any)         {}
func (replayNet) Backlog() int     { return 0 }

// replayControl is the Control of a replay: the task's printed lines go
// to out, a failure (a handler's panic) is kept.
type replayControl struct {
	out    io.Writer
	task   string
	failed error
}

func (c *replayControl) Output(task, seq uint64, line string) {
	fmt.Fprintf(c.out, "replay: %s printed: %s\n", c.task, line)
}
func (c *replayControl) Exit(int)                                     {}
func (c *replayControl) Idle(job.IdleStatus)                          {}
func (c *replayControl) RequestQuiescence()                           {}
func (c *replayControl) CheckpointStaged(uint64, int, int)            {}
func (c *replayControl) BuddyStored(uint64, int, uint64)              {}
func (c *replayControl) Committed(uint64)                             {}
func (c *replayControl) DiskWritten(uint64, migrate.FileEntry, error) {}
func (c *replayControl) Restored(uint64, int, job.Progress)           {}
func (c *replayControl) Reached(uint64, uint64)                       {}
func (c *replayControl) Fail(err error) {
	if c.failed == nil {
		c.failed = err
	}
}
func (c *replayControl) Loads([]migrate.TaskLoad) {}
func (c *replayControl) Migrated()                {}
func (c *replayControl) Progress(uint64)          {}
func (c *replayControl) Diagnosis(string)         {}
