package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/internal/testbin"
	"github.com/gochare/gochare/scheduler"
	"github.com/gochare/gochare/scheduler/record"
	"github.com/gochare/gochare/sim/gen"
)

// leanmdSmall is a LeanMD run of 3×3×3 cells (1-away, 10 atoms per cell,
// 12 steps) with checkpoints at the end of steps 4 and 9 (epochs 2 and 3;
// epoch 1 is the initial one). With the block map on 3 PEs, cells[1,*,*]
// are on PE 1.
var leanmdSmall = []string{"--checkpoint-every", "5", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10", "--steps", "12", "--migrate-every", "10"}

// replayed runs gochare replay and returns its exit status and output.
func replayed(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	j := startBinary(t, bin, append([]string{"replay"}, args...)...)
	status := j.wait(t, 2*time.Minute)
	return status, j.output()
}

// cellID is the task id of cells[x,y,z] of a 3×3×3 LeanMD run.
func cellID(t *testing.T, dir string, x, y, z int) uint64 {
	t.Helper()
	h, err := record.ReadHeader(filepath.Join(dir, "pe-0.0.rec"))
	require.NoError(t, err)
	j, err := scheduler.Define(leanmd.App, h.Args)
	require.NoError(t, err)
	for _, def := range j.Collections() {
		if def.Name == "cells" {
			return scheduler.TaskID(def.ID, (x*3+y)*3+z)
		}
	}
	t.Fatal("no cells collection")
	return 0
}

func TestRecordAndReplayLeanMDCell(t *testing.T) {
	bin := testbin.Gochare(t)
	dir := filepath.Join(t.TempDir(), "rec")
	run := startBinary(t, bin, append([]string{"run", "leanmd", "--pes", "3", "--ft", "partialdet", "--record", dir}, leanmdSmall...)...)
	require.Equal(t, 0, run.wait(t, 2*time.Minute), run.output())
	for r := 0; r < 3; r++ {
		require.FileExists(t, filepath.Join(dir, fmt.Sprintf("pe-%d.0.rec", r)))
	}

	// Every period of a cell replays: its sends are the recorded ones,
	// and a period that reached its checkpoint ends in that state.
	sends := regexp.MustCompile(`replay: (\d+) of (\d+) runs replayed as recorded \((\d+) sends\)`)
	for epoch, end := range map[int]string{1: "checkpointed", 2: "checkpointed", 3: "open"} {
		status, out := replayed(t, bin, "--record", dir, "--task", "cells[1,1,1]", "--from-epoch", strconv.Itoa(epoch))
		require.Equal(t, 0, status, out)
		require.Regexp(t, fmt.Sprintf(`cells\[1,1,1\] from its checkpoint %d, recorded on PE 1 \(generation 0\) in pe-1.0.rec, period %s`, epoch, end), out)
		m := sends.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		require.Equal(t, m[1], m[2], "every run replayed")
		n, _ := strconv.Atoi(m[3])
		require.Positive(t, n, out)
		if end == "checkpointed" {
			require.Contains(t, out, "state at the period's end as recorded")
		} else {
			require.NotContains(t, out, "state at the period's end")
		}
	}

	// Without --from-epoch: the first period; --to-step stops early.
	status, out := replayed(t, bin, "--record", dir, "--task", "cells[0,2,1]", "--to-step", "2", "-v")
	require.Equal(t, 0, status, out)
	require.Regexp(t, `cells\[0,2,1\] from its checkpoint 1, recorded on PE 0`, out)
	require.Regexp(t, `replay: run 2: \w+`, out)
	require.NotContains(t, out, "replay: run 3:")
	require.Regexp(t, `replay: 2 of \d+ runs replayed as recorded`, out)

	// The main task keeps the wall-clock time of its start in its state
	// (for the elapsed time it reports, appkit.Main): its sends replay,
	// its state at the next checkpoint does not, from that field on.
	status, out = replayed(t, bin, "--record", dir, "--task", "driver[0]")
	require.Equal(t, 1, status, out)
	// The start time is a little-endian int64 at bytes 6-13 of the state:
	// the two runs' times differ from its first byte, or from a later one
	// when the lowest bytes happen to agree (1 in 256 for the first).
	differ := regexp.MustCompile(`replay differs from the record: after the 2 runs of the period, the state of driver\[0\] \(59 bytes\) is not the one its checkpoint 2 recorded \(59 bytes\): they differ from byte (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, differ, out)
	at, _ := strconv.Atoi(differ[1])
	require.True(t, at >= 6 && at <= 13, "the first byte that differs, %d, is in the start time (bytes 6-13)\n%s", at, out)
	require.Regexp(t, `(?m)^replay: 2 of 2 runs replayed as recorded \(\d+ sends\)$`, out)

	// Clear errors.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--record", filepath.Join(dir, "missing"), "--task", "cells[0,0,0]"}, "no record: stat"},
		{[]string{"--record", t.TempDir(), "--task", "cells[0,0,0]"}, "holds no record file"},
		{[]string{"--record", dir, "--task", "cells[3,0,0]"}, `"cells[3,0,0]" is outside cells's shape [3 3 3]`},
		{[]string{"--record", dir, "--task", "atoms[1]"}, `no collection "atoms"`},
		{[]string{"--record", dir, "--task", "cells[1,1,1]", "--from-epoch", "9"}, "cells[1,1,1] has no period from epoch 9; recorded epochs: [1 2 3]"},
	} {
		status, out := replayed(t, bin, c.args...)
		require.Equal(t, 1, status, out)
		require.Contains(t, out, c.want)
	}
	status, out = replayed(t, bin, "--task", "cells[0,0,0]")
	require.Equal(t, 2, status, out)
	require.Contains(t, out, "replay needs --record DIR")

	// A record directory holds one run.
	again := startBinary(t, bin, append([]string{"run", "leanmd", "--pes", "3", "--record", dir}, leanmdSmall...)...)
	require.Equal(t, 2, again.wait(t, time.Minute), again.output())
	require.Contains(t, again.output(), "already holds a record (pe-0.0.rec)")

	t.Run("altered record", func(t *testing.T) {
		// One byte of one send of cells[1,1,1] in its first period is
		// changed (the frames stay well formed): the replay names the run
		// and the send.
		altered := filepath.Join(t.TempDir(), "rec")
		require.NoError(t, os.MkdirAll(altered, 0o755))
		for r := 0; r < 3; r++ {
			name := fmt.Sprintf("pe-%d.0.rec", r)
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(altered, name), b, 0o644))
		}
		id := cellID(t, dir, 1, 1, 1)
		path := filepath.Join(altered, "pe-1.0.rec")
		f, err := record.ReadFile(path, nil)
		require.NoError(t, err)
		seg := record.Segments(f, id)[0]
		run := -1
		for i, s := range seg.Steps {
			if sends := s.Sends(); len(sends) >= 2 && len(sends[1].Payload) > 0 {
				sends[1].Payload[len(sends[1].Payload)/2] ^= 1
				run = i + 1
				break
			}
		}
		require.Positive(t, run, "a run with two sends")
		out, err := os.Create(path)
		require.NoError(t, err)
		w := record.NewWriter(out, f.Header)
		for _, e := range f.Entries {
			w.Append(e)
		}
		require.NoError(t, w.Flush())
		require.NoError(t, out.Close())

		status, text := replayed(t, bin, "--record", altered, "--task", "cells[1,1,1]")
		require.Equal(t, 1, status, text)
		require.Regexp(t, fmt.Sprintf(`replay differs from the record: run %d of cells\[1,1,1\] \(\w+.*\): send 2 differs: replayed to .*, recorded to .* \(payloads differ from byte \d+\)`, run), text)
		require.Regexp(t, fmt.Sprintf(`replay: %d of \d+ runs replayed as recorded`, run-1), text)
	})
}

// A handler whose sends depend on more than its inputs (the faults ring
// with --nondet: worker 5 puts its process id in its tokens) is caught at
// its first send; the other workers replay.
func TestReplayReportsANondeterministicHandler(t *testing.T) {
	bin := testbin.Build(t, faultsPackage)
	dir := filepath.Join(t.TempDir(), "rec")
	run := startBinary(t, bin, "run", "faults", "--pes", "3", "--steps", "6", "--nondet", "--record", dir)
	require.Equal(t, 0, run.wait(t, time.Minute), run.output())

	status, out := replayed(t, bin, "--record", dir, "--task", "workers[5]")
	require.Equal(t, 1, status, out)
	require.Contains(t, out, "replay differs from the record: run 1 of workers[5] (token, key 0 from main[0], 2 bytes): send 1 differs: replayed to workers[6].token, key 1")
	require.Contains(t, out, "(payloads differ from byte 4)")

	status, out = replayed(t, bin, "--record", dir, "--task", "workers[4]")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "replay: 6 of 6 runs replayed as recorded (6 sends)")
}

// A PE killed in the middle of a period leaves its recording of the
// period open (or cut short); the task's next incarnation records the
// period again where it is restored, and the replay takes that one.
func TestRecordSurvivesAKilledPE(t *testing.T) {
	bin := testbin.Gochare(t)
	for _, ft := range []string{"partialdet", "none"} {
		t.Run(ft, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rec")
			run := startBinary(t, bin, append([]string{"run", "leanmd", "--pes", "3", "--ft", ft, "--record", dir, "--kill", "pe=1,at=step:7"}, leanmdSmall...)...)
			require.Equal(t, 0, run.wait(t, 2*time.Minute), run.output())
			run.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 \(pid \d+.*killed by signal 9`), time.Second)

			// PE 1's own recording of the period from epoch 2 ends open.
			id := cellID(t, dir, 1, 1, 1)
			f, err := record.ReadFile(filepath.Join(dir, "pe-1.0.rec"), nil)
			if err != nil {
				require.ErrorIs(t, err, record.ErrTruncated)
			}
			var open bool
			for _, s := range record.Segments(f, id) {
				open = open || s.Epoch == 2 && s.End == record.Open
			}
			require.True(t, open, "PE 1's period from epoch 2 is open")

			status, out := replayed(t, bin, "--record", dir, "--task", "cells[1,1,1]", "--from-epoch", "2")
			require.Equal(t, 0, status, out)
			require.Regexp(t, `cells\[1,1,1\] from its checkpoint 2, recorded on PE [02] \(generation [1-9]\) in pe-[02].0.rec, period checkpointed`, out)
			require.Contains(t, out, "state at the period's end as recorded")
			// A cell of a PE that lived replays its period too.
			status, out = replayed(t, bin, "--record", dir, "--task", "cells[2,0,1]", "--from-epoch", "2")
			require.Equal(t, 0, status, out)
			require.Contains(t, out, "state at the period's end as recorded")
		})
	}
}

// A task the load balancer moves: its period ends on the PE it left,
// in the state the move carried, and its next one is recorded where it
// went.
func TestReplayOfAMovedTask(t *testing.T) {
	bin := testbin.Gochare(t)
	dir := filepath.Join(t.TempDir(), "rec")
	run := startBinary(t, bin, "run", "gen", "--seed", "7", "--pes", "3", "--lb", "greedy", "--checkpoint-every", "3", "--record", dir)
	require.Equal(t, 0, run.wait(t, 2*time.Minute), run.output())
	run.waitLine(t, regexp.MustCompile(`load balancing \(greedy\): [1-9]\d* tasks move`), time.Second)

	h, err := record.ReadHeader(filepath.Join(dir, "pe-0.0.rec"))
	require.NoError(t, err)
	j, err := scheduler.Define(gen.App, h.Args)
	require.NoError(t, err)
	var task string
	var from int
	var epoch uint64
	for r := 0; r < 3 && task == ""; r++ {
		f, err := record.ReadFile(filepath.Join(dir, fmt.Sprintf("pe-%d.0.rec", r)), nil)
		require.NoError(t, err)
		epochOf := map[uint64]uint64{}
		for _, e := range f.Entries {
			if e.Kind == record.Kind_STATE {
				epochOf[e.Task] = e.Epoch
			}
			if e.Kind == record.Kind_LEAVE && int(e.Task>>48) < len(j.Collections()) {
				def := j.Collections()[e.Task>>48]
				at := def.Shape.At(int(e.Task & (1<<48 - 1)))
				coords := make([]string, len(def.Shape))
				for d := range coords {
					coords[d] = strconv.Itoa(int(at[d]))
				}
				task, from, epoch = def.Name+"["+strings.Join(coords, ",")+"]", r, epochOf[e.Task]
				break
			}
		}
	}
	require.NotEmpty(t, task, "a task moved")
	status, out := replayed(t, bin, "--record", dir, "--task", task, "--from-epoch", fmt.Sprint(epoch))
	require.Equal(t, 0, status, out)
	require.Contains(t, out, fmt.Sprintf("recorded on PE %d (generation 0) in pe-%d.0.rec, period left (the task moved to another PE)", from, from))
	require.Contains(t, out, "state at the period's end as recorded")
	status, out = replayed(t, bin, "--record", dir, "--task", task, "--from-epoch", fmt.Sprint(epoch+1))
	require.Equal(t, 0, status, out)
	require.NotContains(t, out, fmt.Sprintf("recorded on PE %d ", from))

	// A program without the recorded application cannot replay it.
	status, out = replayed(t, testbin.Build(t, faultsPackage), "--record", dir, "--task", task)
	require.Equal(t, 1, status, out)
	require.Contains(t, out, `the record is of application "gen", which this binary does not have (replay with the binary that ran it)`)
}

// The replay under a debugger (README): a breakpoint in a LeanMD cell's
// handler stops the replay there, with the replay's frames below. It
// needs dlv on PATH.
func TestReplayUnderDelve(t *testing.T) {
	dlv, err := exec.LookPath("dlv")
	if err != nil {
		t.Skip("dlv is not on PATH (go install github.com/go-delve/delve/cmd/dlv@latest)")
	}
	bin := testbin.Gochare(t)
	dir := filepath.Join(t.TempDir(), "rec")
	run := startBinary(t, bin, "run", "leanmd", "--pes", "2", "--record", dir, "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10", "--steps", "4")
	require.Equal(t, 0, run.wait(t, 2*time.Minute), run.output())
	script := filepath.Join(t.TempDir(), "dlv-init")
	require.NoError(t, os.WriteFile(script, []byte("break github.com/gochare/gochare/apps/leanmd.(*cellTask).receiveForces\ncontinue\nstack 6\nexit\n"), 0o644))
	j := startBinary(t, dlv, "exec", bin, "--allow-non-terminal-interactive=true", "--init", script, "--", "replay", "--record", dir, "--task", "cells[1,1,1]")
	require.Equal(t, 0, j.wait(t, 3*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`\[Breakpoint 1\] github.com/gochare/gochare/apps/leanmd.\(\*cellTask\).receiveForces\(\)`), time.Second)
	j.waitLine(t, regexp.MustCompile(`scheduler.\(\*PE\).replayRun`), time.Second)
}

// A handler that panicked stops the job; its delivery is in the record,
// and the replay runs into the same panic at the same run, where a
// debugger can stop before it.
func TestReplayReproducesAHandlerPanic(t *testing.T) {
	bin := testbin.Build(t, faultsPackage)
	dir := filepath.Join(t.TempDir(), "rec")
	run := startBinary(t, bin, "run", "faults", "--pes", "3", "--panic-at", "4", "--record", dir)
	require.NotEqual(t, 0, run.wait(t, time.Minute), run.output())
	run.waitLine(t, regexp.MustCompile(`handler panicked: workers\(5\), handler token`), time.Second)

	status, out := replayed(t, bin, "--record", dir, "--task", "workers[5]")
	require.Equal(t, 1, status, out)
	require.Contains(t, out, "replay: 3 of 4 runs replayed as recorded (3 sends)")
	require.Contains(t, out, "run 4 of workers[5] (token, key 3 from workers[4], 2 bytes): scheduler: handler panicked: workers(5), handler token")
	require.Contains(t, out, "worker 5 was told to panic at step 4")
	status, out = replayed(t, bin, "--record", dir, "--task", "workers[5]", "--to-step", "3")
	require.Equal(t, 0, status, out)
}
