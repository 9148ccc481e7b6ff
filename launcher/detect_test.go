package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

// longStencilArgs is stencilArgs run long enough (120 sweeps) that a PE
// stopped after the second checkpoint is stopped well before the end.
var longStencilArgs = []string{"run", "stencil3d", "--pes", "4", "--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "120", "--checkpoint-every", "10"}

// A spawned PE that hangs (SIGSTOP) misses its heartbeats: the launcher
// declares it dead after the bound, SIGKILLs it, and the job recovers as
// from a crash and ends with the failure-free digest.
func TestStoppedPEIsKilledAndTheJobRecovers(t *testing.T) {
	want := cleanDigest(t, longStencilArgs)
	j := startJob(t, append(longStencilArgs, "--heartbeat-timeout", "2s")...)
	pids := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	j.waitLine(t, regexp.MustCompile(`checkpoint committed" epoch=2`), time.Minute)
	victim := pids[1]
	require.NoError(t, syscall.Kill(victim, syscall.SIGSTOP))
	stopped := time.Now()
	m := j.waitLine(t, regexp.MustCompile(fmt.Sprintf(
		`PE failed.*PE 1 \(pid %d .*\) missed heartbeats: silent for (\S+) \(bound 2s\); killed with SIGKILL`, victim)), 30*time.Second)
	detected := time.Since(stopped)
	silent, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	require.GreaterOrEqual(t, silent, 2*time.Second, m[0]) // printed to the millisecond
	// Not before the bound (less the heartbeat interval: the last sign of
	// life may precede the stop), and not long after it.
	require.Greater(t, detected, 2*time.Second-heartbeatInterval(2*time.Second))
	require.Less(t, detected, 12*time.Second, "a hung PE must be declared dead soon after the bound")
	j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE declared dead has ended" pe=1 pid=%d how="was killed by signal 9`, victim)), 10*time.Second)
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	require.True(t, gone(victim), "the stopped PE must really be dead")
	t.Logf("hung PE declared dead %v after SIGSTOP (bound 2s)", detected)
}

// pe is a PE process started by hand for a job with --external.
type pe struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *pe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *pe) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startPE starts PE rank of an external job whose launcher printed its
// address and secret.
func startPE(t *testing.T, launcher *job, rank, size int) *pe {
	t.Helper()
	addr := launcher.waitLine(t, regexp.MustCompile(`--coordinator (\S+)`), 30*time.Second)[1]
	secret := launcher.waitLine(t, regexp.MustCompile(`GOCHARE_JOB_SECRET=([0-9a-f]+)`), time.Second)[1]
	p := &pe{cmd: exec.Command(testbin.Gochare(t), "pe", "--coordinator", addr, "--rank", strconv.Itoa(rank), "--size", strconv.Itoa(size)), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "GOCHARE_JOB_SECRET="+secret)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait returns the PE's exit status and how long it took to end.
func (p *pe) wait(t *testing.T, timeout time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("PE still running after %v; output:\n%s", timeout, p.output())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), time.Since(start)
	}
	require.NoError(t, p.err)
	return 0, time.Since(start)
}

// When the coordinator falls silent (here: the launcher is stopped, its
// connections stay open), a PE stops itself with an error after the bound;
// and SIGTERM ends a PE at once, though it cannot reach its coordinator.
func TestPEStopsWhenItHearsNothingAndOnSIGTERM(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "2", "--external", "--heartbeat-timeout", "2s",
		"--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "100000000")
	pe0, pe1 := startPE(t, j, 0, 2), startPE(t, j, 1, 2)
	j.waitLine(t, regexp.MustCompile(`job begins`), 30*time.Second)
	require.NoError(t, j.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	t.Cleanup(func() { j.cmd.Process.Signal(syscall.SIGCONT) })

	require.NoError(t, pe1.cmd.Process.Signal(syscall.SIGTERM))
	status, took := pe1.wait(t, 30*time.Second)
	require.NotEqual(t, 0, status, pe1.output())
	require.Contains(t, pe1.output(), "launcher: PE 1: interrupted by a signal")
	require.Less(t, took, 2*time.Second, "SIGTERM must end a PE promptly; output:\n%s", pe1.output())

	status, _ = pe0.wait(t, 30*time.Second)
	silent := time.Since(stopped)
	require.NotEqual(t, 0, status, pe0.output())
	require.Regexp(t, `launcher: PE 0 heard nothing from the coordinator for \S+ \(bound 2s\): stopping`, pe0.output())
	require.Greater(t, silent, 2*time.Second-heartbeatInterval(2*time.Second))
	require.Less(t, silent, 12*time.Second)
	t.Logf("SIGTERM ended a cut-off PE in %v; the other stopped itself %v after its coordinator fell silent (bound 2s)", took, silent)
}

// A PE declared dead stays dead: continued after the launcher gave up on
// it, it finds its connection cut and exits with an error; a new PE for
// its rank is refused; the survivor's transport ignores whatever it still
// sends, and the job ends with the failure-free digest. (The job must
// still run when the new PE comes: 5000 steps, where 1000 sometimes ended
// first on a loaded machine once sync points no longer waited for a tick.)
func TestDeadPEStaysDead(t *testing.T) {
	args := []string{"run", "stencil3d", "--pes", "2", "--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "5000", "--checkpoint-every", "100"}
	want := cleanDigest(t, args)
	j := startJob(t, append(args, "--external", "--heartbeat-timeout", "2s")...)
	pe0, pe1 := startPE(t, j, 0, 2), startPE(t, j, 1, 2)
	j.waitLine(t, regexp.MustCompile(`job begins`), 30*time.Second)
	require.NoError(t, pe1.cmd.Process.Signal(syscall.SIGSTOP))
	j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 \(pid \d+ .*\) missed heartbeats: silent for \S+ \(bound 2s\)"`), 30*time.Second)
	// The launcher cannot kill a PE it did not start: it comes back.
	require.NoError(t, pe1.cmd.Process.Signal(syscall.SIGCONT))
	again := startPE(t, j, 1, 2)
	status, _ := again.wait(t, 30*time.Second)
	require.NotEqual(t, 0, status)
	require.Contains(t, again.output(), "refused by the coordinator")
	j.waitLine(t, regexp.MustCompile(`refused connection" peer=\S+ reason="PE 1 was declared dead: a failed PE never rejoins"`), 10*time.Second)
	status, _ = pe1.wait(t, 30*time.Second)
	require.NotEqual(t, 0, status, pe1.output())
	require.Regexp(t, `launcher: PE 1 (lost the coordinator|heard nothing from the coordinator)`, pe1.output())

	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	status, _ = pe0.wait(t, 30*time.Second)
	require.Equal(t, 0, status, pe0.output())
}

// lineIndex returns the index of the first output line matching re, or -1.
func (j *job) lineIndex(re *regexp.Regexp) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, l := range j.lines {
		if re.MatchString(l) {
			return i
		}
	}
	return -1
}

// Each trigger fires at its moment. Where the job's outcome depends on
// what a failure at that moment does to recovery, only the moment is
// checked.
func TestKillTriggers(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	// run runs the job with kills and returns it ended, and its status.
	run := func(t *testing.T, kills []string, extra ...string) (*job, int) {
		args := append(append([]string(nil), stencilArgs...), extra...)
		for _, k := range kills {
			args = append(args, "--kill", k)
		}
		j := startJob(t, args...)
		return j, j.wait(t, 2*time.Minute)
	}
	injected := func(pe int, kill string) *regexp.Regexp {
		return regexp.MustCompile(fmt.Sprintf(`msg="injected failure" pe=%d kill="%s" signal=SIGKILL`, pe, regexp.QuoteMeta(kill)))
	}
	t.Run("step of a checkpoint, and the start of a recovery", func(t *testing.T) {
		// At step 29 the fourth checkpoint is due (steps 9, 19, 29 with
		// --checkpoint-every 10): the PE dies as its first task offers
		// 29, before every task is at the sync point, so before the
		// checkpoint starts. PE 3 dies as soon as PE 1's recovery starts.
		j, _ := run(t, []string{"pe=1,at=step:29", "pe=3,at=recovery:1"})
		j.waitLine(t, regexp.MustCompile(`\[pe 1\] .*failure injection: killing this PE" pe=1 step=29`), time.Second)
		first := j.lineIndex(injected(1, "pe=1,at=step:29"))
		require.GreaterOrEqual(t, first, 0, j.output())
		require.Greater(t, j.lineIndex(regexp.MustCompile(`checkpoint committed" epoch=3`)), -1)
		if c4 := j.lineIndex(regexp.MustCompile(`checkpoint committed" epoch=4`)); c4 >= 0 {
			require.Less(t, first, c4, "the kill at step 29 fires before checkpoint 4")
		}
		failed := j.lineIndex(regexp.MustCompile(`PE failed.*PE 1 `))
		second := j.lineIndex(injected(3, "pe=3,at=recovery:1"))
		require.Greater(t, failed, first)
		require.Greater(t, second, failed, "the kill at recovery 1 fires after PE 1 failed:\n%s", j.output())
		if restored := j.lineIndex(regexp.MustCompile(`recovery: tasks restored`)); restored >= 0 {
			require.Greater(t, restored, second, "and before recovery 1 restored the tasks")
		}
		j.waitLine(t, regexp.MustCompile(`PE failed.*PE 3 .*killed by signal 9`), time.Second)
	})
	t.Run("start of a checkpoint", func(t *testing.T) {
		j, _ := run(t, []string{"pe=2,at=checkpoint:3"})
		at := j.lineIndex(injected(2, "pe=2,at=checkpoint:3"))
		require.Greater(t, at, j.lineIndex(regexp.MustCompile(`checkpoint committed" epoch=2`)), j.output())
		if c3 := j.lineIndex(regexp.MustCompile(`checkpoint committed" epoch=3`)); c3 >= 0 {
			require.Less(t, at, c3, "the kill fires while checkpoint 3 is being taken")
		}
		j.waitLine(t, regexp.MustCompile(`PE failed.*PE 2 .*killed by signal 9`), time.Second)
	})
	t.Run("SIGSTOP", func(t *testing.T) {
		j, status := run(t, []string{"pe=2,at=step:20,signal=STOP"}, "--heartbeat-timeout", "2s")
		require.Equal(t, 0, status, j.output())
		j.waitLine(t, regexp.MustCompile(`msg="injected failure" pe=2 kill="pe=2,at=step:20,signal=STOP" signal=SIGSTOP`), time.Second)
		j.waitLine(t, regexp.MustCompile(`PE failed.*PE 2 .*missed heartbeats: silent for \S+ \(bound 2s\); killed with SIGKILL`), time.Second)
		require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	})
	t.Run("several for one PE, and kills that did not fire", func(t *testing.T) {
		// Both kills of PE 2 are kept: the earlier fires, the later finds
		// PE 2 dead. The job ends long before ten minutes.
		j, status := run(t, []string{"pe=2,at=step:35", "pe=2,at=step:20", "pe=3,after=10m"})
		require.Equal(t, 0, status, j.output())
		j.waitLine(t, regexp.MustCompile(`\[pe 2\] .*failure injection: killing this PE" pe=2 step=20`), time.Second)
		j.waitLine(t, injected(2, "pe=2,at=step:20"), time.Second)
		require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
		j.waitLine(t, regexp.MustCompile(`injected failure did not fire" kill="pe=2,at=step:35" reason="PE 2 had already failed"`), time.Second)
		j.waitLine(t, regexp.MustCompile(`injected failure did not fire" kill="pe=3,after=10m0s" reason="the job ended before it was due"`), time.Second)
		require.Equal(t, -1, j.lineIndex(regexp.MustCompile(`PE failed.*PE 3 `)))
	})
	t.Run("random", func(t *testing.T) {
		j, status := run(t, []string{"random,seed=8"})
		require.Equal(t, 0, status, j.output())
		m := j.waitLine(t, regexp.MustCompile(`--kill random,seed=8 chose (pe=(\d),at=step:(\d+)) \(any PE, any step from 1 to 58\)`), time.Second)
		k, _, err := parseKill(m[1], stencil60, 0)
		require.NoError(t, err)
		require.Equal(t, 0, k.Rank, "seed 8 picks PE 0, which a random kill once never chose")
		j.waitLine(t, injected(k.Rank, m[1]), time.Second)
		j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`PE failed.*PE %d .*killed by signal 9`, k.Rank)), time.Second)
		require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	})
}

// A kill at the last step an application offers fires: the apps'
// LastStep are right. One past it is refused.
func TestKillAtTheLastStep(t *testing.T) {
	for _, app := range [][]string{
		{"stencil3d", "58", "--grid", "24,24,24", "--chunk", "8,8,8", "--iterations", "60", "--checkpoint-every", "10"},
		{"leanmd", "11", "--cells", "3,3,3", "--kaway", "1,1,1", "--atoms", "10", "--steps", "12", "--migrate-every", "10", "--checkpoint-every", "5"},
		{"lulesh", "49", "--size", "10", "--chunk", "5,5,5", "--iterations", "50", "--checkpoint-every", "10"},
	} {
		t.Run(app[0], func(t *testing.T) {
			last, _ := strconv.Atoi(app[1])
			args := append([]string{"run", app[0], "--pes", "3"}, app[2:]...)
			j := startJob(t, append(args, "--kill", fmt.Sprintf("pe=1,at=step:%d", last))...)
			require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
			j.waitLine(t, regexp.MustCompile(fmt.Sprintf(`\[pe 1\] .*failure injection: killing this PE" pe=1 step=%d`, last)), time.Second)
			j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 .*killed by signal 9`), time.Second)

			out, err := exec.Command(testbin.Gochare(t), append(args, "--kill", fmt.Sprintf("pe=1,at=step:%d", last+1))...).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, 2, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), fmt.Sprintf("can never fire: %s with these arguments offers steps up to %d", app[0], last))
		})
	}
}

// A kill that can never fire stops the launcher before any PE starts.
func TestKillsThatCanNeverFireAreRefused(t *testing.T) {
	for spec, why := range map[string]string{
		"pe=1,at=step:59":      "offers steps up to 58",
		"pe=1,at=step:0":       "the earliest step a kill can use is 1",
		"pe=4,at=step:3":       "pe must be 0..3",
		"pe=1,at=recovery:4":   "at most 3 recoveries",
		"pe=1,at=checkpoint:7": "this job takes checkpoints 1 to 6",
	} {
		out, err := exec.Command(testbin.Gochare(t), append(append([]string(nil), stencilArgs...), "--kill", spec)...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, spec)
		require.Equal(t, 2, ee.ExitCode(), "%s: %s", spec, out)
		require.Contains(t, string(out), why, spec)
		require.NotContains(t, string(out), "started PEs", spec)
	}
}

// A PE the launcher did not start is killed by itself when its kill is
// due: the launcher asks it to send itself the signal.
func TestKillOfAnExternalPE(t *testing.T) {
	args := []string{"run", "stencil3d", "--pes", "2", "--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "300", "--checkpoint-every", "10"}
	want := cleanDigest(t, args)
	j := startJob(t, append(args, "--external", "--kill", "pe=1,at=step:100")...)
	pe0, pe1 := startPE(t, j, 0, 2), startPE(t, j, 1, 2)
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`msg="injected failure" pe=1 kill="pe=1,at=step:100" signal=SIGKILL .*by="the PE itself"`), time.Second)
	j.waitLine(t, regexp.MustCompile(`PE failed.*PE 1 `), time.Second)
	require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	pe1.wait(t, 30*time.Second)
	ws, ok := pe1.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "PE 1 ended by %v; output:\n%s", pe1.cmd.ProcessState, pe1.output())
	require.Contains(t, pe1.output(), "failure injection: the launcher asks this PE to signal itself")
	status, _ := pe0.wait(t, 30*time.Second)
	require.Equal(t, 0, status, pe0.output())
}

// A spawned PE stopped before it joined the job (no heartbeat yet) does
// not hold the job forever: after --join-timeout the launcher kills it
// and starts it again (or, if it had got its setup, the heartbeats catch
// it and the job begins without it), and the job ends with the
// failure-free digest.
func TestPEStoppedBeforeJoiningIsReplaced(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	j := startJob(t, append(append([]string(nil), stencilArgs...), "--join-timeout", "3s", "--heartbeat-timeout", "3s")...)
	pids := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	require.NoError(t, syscall.Kill(pids[2], syscall.SIGSTOP))
	t.Cleanup(func() { syscall.Kill(pids[2], syscall.SIGKILL) })
	require.Equal(t, 0, j.wait(t, time.Minute), j.output())
	require.Regexp(t, `PE 2 .*(did not join the job and get ready within 3s|missed heartbeats)`, j.output())
	require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
}

// A PE that dies after every PE got its setup but before the job began
// (PE 0, which holds the main task, too): the job begins without it, its
// tasks created on the other PEs, and ends with the failure-free digest.
func TestPEFailingBeforeTheJobBeganIsReplaced(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	for _, pe := range []string{"0", "2"} {
		j := startJob(t, append(append([]string(nil), stencilArgs...), "--kill", "pe="+pe+",at=setup")...)
		require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
		j.waitLine(t, regexp.MustCompile(`PE failed before the job began; its tasks will be created on the other PEs.*PE `+pe+` `), time.Second)
		require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	}
	t.Run("PEs started by hand", func(t *testing.T) {
		// Such a PE signals itself when the launcher asks, which it reads
		// only after it said it is ready: its Ready must not begin the
		// job.
		j := startJob(t, append(append([]string(nil), stencilArgs...), "--external", "--kill", "pe=2,at=setup")...)
		for r := range 4 {
			startPE(t, j, r, 4)
		}
		require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
		j.waitLine(t, regexp.MustCompile(`PE failed before the job began; its tasks will be created on the other PEs.*PE 2 `), time.Second)
		require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
	})
}

// A PE killed as soon as the launcher started it, before the PEs have
// all joined: nothing depends on it yet, so the launcher starts it again
// (or, if it had got its setup, the job begins without it) and the job
// ends with the failure-free digest.
func TestPEKilledAtStartIsStartedAgain(t *testing.T) {
	want := cleanDigest(t, stencilArgs)
	j := startJob(t, stencilArgs...)
	pids := parsePids(t, j.waitLine(t, pidsLine, 30*time.Second)[1])
	require.NoError(t, syscall.Kill(pids[1], syscall.SIGKILL))
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	require.Regexp(t, `PE failed before it joined the job; started again.*PE 1 |PE failed before the job began; its tasks will be created on the other PEs.*PE 1 `, j.output())
	require.Equal(t, want, j.waitLine(t, digestLine, time.Second)[1])
}
