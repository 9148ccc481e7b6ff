package launcher

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gochare/gochare/internal/child"
)

// exitHow says how a process ended, in words.
func exitHow(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}

// gomaxprocsEnv is what gochare run adds to the environment of the
// PE and logger processes it starts on this machine (procs: the PEs),
// so that together the PEs run no more threads of Go code than the CPUs
// this process may use (cpus: runtime.GOMAXPROCS, which follows the
// CPU affinity mask and a cgroup's CPU limit): GOMAXPROCS = cpus/procs,
// at least 1. Nothing when that is every CPU anyway, or when environ
// already sets GOMAXPROCS (the user's choice reaches the PEs as it is).
//
// A PE runs its tasks on one goroutine, so more threads serve only the
// collector and the transport's goroutines; with two PE processes on two
// cores, each free to run two threads, a message that arrives wakes
// threads the other process's work needed, and the 64-byte round trip
// took 1.5-2x as long (docs/benchmarks.md, "GOMAXPROCS of the PEs").
func gomaxprocsEnv(environ []string, cpus, procs int) []string {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return nil
		}
	}
	n := max(1, cpus/max(procs, 1))
	if n >= cpus {
		return nil
	}
	return []string{"GOMAXPROCS=" + strconv.Itoa(n)}
}

// idlePollFlag is what gochare run adds to the arguments of the PE
// processes it starts on this machine (procs of them, loggers included,
// on cpus CPUs as for gomaxprocsEnv): --idle-poll 0 when they outnumber
// the CPUs, nothing otherwise (the pe command's default poll).
//
// A PE waiting for input polls its connections for a while before it
// sleeps (transport.Config.IdlePoll): with a core of its own that time
// is free, and a message that arrives meanwhile costs no wake-up, most
// of a short round trip. With more PEs than cores, the time one PE
// polls is time another PE needed.
func idlePollFlag(cpus, procs int) []string {
	if procs > cpus {
		return []string{"--idle-poll", "0"}
	}
	return nil
}

// spawner starts the PE processes of a job on this machine and streams
// their output with a PE prefix.
type spawner struct {
	exe       string
	secret    string
	transport string // --transport given to every PE
	tcpOnly   bool   // --tcp-only given to every PE
	// tlsDir, when not empty, is the --secret-dir of a job run with
	// --tls: PEs get --tls --secret-dir and no secret in the environment.
	tlsDir string
	stdout io.Writer
	stderr io.Writer
	// extraEnv is added to every PE's environment.
	extraEnv []string
	// idlePoll is added to every PE's arguments (idlePollFlag).
	idlePoll []string
	// logger: the processes are the job's loggers (gochare pe --logger),
	// rank their number.
	logger bool

	mu sync.Mutex // guards the writers, so prefixed lines do not interleave
	// procs is, by rank, the PE's current process; all is every process
	// started (a PE started again before the job began has two), done
	// closed as each ends.
	procs []*exec.Cmd
	all   []*exec.Cmd
	wg    sync.WaitGroup
	done  []chan struct{}
	// stopKilled are the pids stop killed (guarded by mu).
	stopKilled map[int]bool
	// size, addr and report are start's arguments, for restart.
	size   int
	addr   string
	report func(processExited)
}

// start launches PE rank of size, connecting to the coordinator at addr.
// When it ends, report is called with how.
func (s *spawner) start(rank, size int, addr string, report func(processExited)) error {
	cmd := exec.Command(s.exe, "pe", "--coordinator", addr, "--rank", strconv.Itoa(rank), "--size", strconv.Itoa(size))
	if s.logger {
		cmd.Args = append(cmd.Args, "--logger")
	}
	if s.transport != "" && !s.logger {
		cmd.Args = append(cmd.Args, "--transport", s.transport)
	}
	if s.tcpOnly && !s.logger {
		cmd.Args = append(cmd.Args, "--tcp-only")
	}
	if !s.logger {
		cmd.Args = append(cmd.Args, s.idlePoll...)
	}
	cmd.Env = append(os.Environ(), s.extraEnv...)
	if s.tlsDir != "" {
		cmd.Args = append(cmd.Args, "--tls", "--secret-dir", s.tlsDir)
	} else {
		cmd.Env = append(cmd.Env, secretEnv+"="+s.secret)
	}
	// The PE dies with the launcher, so a killed launcher leaves no orphans.
	cmd.SysProcAttr = child.Attr()
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("launcher: PE %d stdout: %w", rank, err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("launcher: PE %d stderr: %w", rank, err)
	}
	if err := cmd.Start(); err != nil {
		if s.logger {
			return fmt.Errorf("launcher: start logger %d: %w", rank, err)
		}
		return fmt.Errorf("launcher: start PE %d: %w", rank, err)
	}
	done := make(chan struct{})
	for len(s.procs) <= rank {
		s.procs = append(s.procs, nil)
	}
	s.procs[rank] = cmd
	s.all = append(s.all, cmd)
	s.done = append(s.done, done)
	s.size, s.addr, s.report = size, addr, report
	var streams sync.WaitGroup
	streams.Add(2)
	go s.stream(&streams, rank, outPipe, s.stdout)
	go s.stream(&streams, rank, errPipe, s.stderr)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Wait closes the pipes: read them to the end first, or the last
		// lines of a PE that died while the launcher was not reading (a
		// stopped or busy launcher) are lost.
		streams.Wait()
		err := cmd.Wait()
		close(done)
		report(processExited{rank: rank, pid: cmd.Process.Pid, state: cmd.ProcessState, err: err})
	}()
	return nil
}

func (s *spawner) stream(wg *sync.WaitGroup, rank int, r io.Reader, w io.Writer) {
	defer wg.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		s.mu.Lock()
		if s.logger {
			fmt.Fprintf(w, "[logger %d] %s\n", rank, sc.Bytes())
		} else {
			fmt.Fprintf(w, "[pe %d] %s\n", rank, sc.Bytes())
		}
		s.mu.Unlock()
	}
}

// stop waits up to grace for every PE to end by itself, then kills the rest
// (the whole process group of each) and waits for them.
func (s *spawner) stop(grace time.Duration) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for i, cmd := range s.all {
		select {
		case <-s.done[i]:
			continue
		case <-deadline.C:
		}
		s.mu.Lock()
		if s.stopKilled == nil {
			s.stopKilled = map[int]bool{}
		}
		s.stopKilled[cmd.Process.Pid] = true
		s.mu.Unlock()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
		// Later PEs get no further grace.
		deadline.Reset(0)
	}
	s.wg.Wait()
}

// killedByStop reports whether stop killed process pid.
func (s *spawner) killedByStop(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopKilled[pid]
}

// kill sends sig to PE rank: failure injection, or to make sure a PE
// declared dead is. A PE already waited for is not signalled (its pid may
// belong to another process by now).
func (s *spawner) kill(rank int, sig syscall.Signal) (int, error) {
	if rank < 0 || rank >= len(s.procs) {
		return 0, fmt.Errorf("launcher: no PE %d", rank)
	}
	p := s.procs[rank].Process
	return p.Pid, p.Signal(sig)
}

// restart starts PE rank again (it failed before the job began); its
// new process becomes the PE's.
func (s *spawner) restart(rank int) (int, error) {
	if err := s.start(rank, s.size, s.addr, s.report); err != nil {
		return 0, err
	}
	return s.procs[rank].Process.Pid, nil
}

// pid is PE rank's current process id (0 if none).
func (s *spawner) pid(rank int) int {
	if rank < 0 || rank >= len(s.procs) || s.procs[rank] == nil {
		return 0
	}
	return s.procs[rank].Process.Pid
}

// pids returns the process ids of the PEs started so far.
func (s *spawner) pids() []int {
	var p []int
	for _, c := range s.procs {
		p = append(p, c.Process.Pid)
	}
	return p
}

// waitAll blocks until every spawned PE has ended or ctx is done.
func (s *spawner) waitAll(ctx context.Context) {
	for _, d := range s.done {
		select {
		case <-d:
		case <-ctx.Done():
			return
		}
	}
}
