package chaos

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gochare/gochare/internal/child"
	"github.com/gochare/gochare/internal/testbin"
)

// The test binary doubles as a fake launcher and fake PEs for the tests of
// the job runner (CHAOS_TEST_ROLE), so that they control what the
// "launcher" prints and when its "PEs" end.
const (
	roleEnv     = "CHAOS_TEST_ROLE"
	scenarioEnv = "CHAOS_TEST_SCENARIO"
	pesEnv      = "CHAOS_TEST_PES"
	impostorEnv = "CHAOS_TEST_IMPOSTOR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "launcher":
		os.Exit(fakeLauncher(os.Getenv(scenarioEnv)))
	case "pe":
		fakePE(os.Getenv(scenarioEnv))
		os.Exit(0)
	}
	os.Exit(testbin.Run(m))
}

// gochareExe is the gochare binary for the tests that run real jobs,
// built once per test process.
func gochareExe(t *testing.T) string {
	t.Helper()
	return testbin.Gochare(t)
}

// fakePE says it is ready on its standard output (its signal handlers
// are in place), then blocks until it is killed; in the "pause" scenario
// it ends when it is continued after a stop.
func fakePE(scenario string) {
	ch := make(chan os.Signal, 1)
	if scenario == "pause" {
		signal.Notify(ch, syscall.SIGCONT)
	} else {
		signal.Notify(ch, syscall.SIGUSR1)
	}
	fmt.Println("ready")
	<-ch
}

// fakeLauncher starts CHAOS_TEST_PES fake PEs, prints the launcher's
// "started PEs" line (in the "impostor" scenario PE 0's pid is
// CHAOS_TEST_IMPOSTOR, a process that is not its child), and a "PE
// failed" line as each PE ends; once all have ended it prints a result
// line and exits 0. In the "hang" scenario the PEs never end. In the
// "logger" scenario it also starts one fake logger after the PEs, prints
// the "started loggers" line (one pid, unquoted, as the launcher logs
// it), a "logger failed; the job goes on" line when it ends and a
// "logger failed after the job's end" line for it at the end.
func fakeLauncher(scenario string) int {
	n, _ := strconv.Atoi(os.Getenv(pesEnv))
	var cmds []*exec.Cmd
	var pids []string
	if scenario == "impostor" {
		pids = append(pids, os.Getenv(impostorEnv))
	}
	if scenario == "logger" {
		n++
	}
	for range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"=pe")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = child.Attr()
		ready, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err == nil {
			_, err = bufio.NewReader(ready).ReadString('\n')
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gochare: fake launcher:", err)
			return 1
		}
		cmds = append(cmds, cmd)
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
	}
	var logger *exec.Cmd
	if scenario == "logger" {
		logger, cmds = cmds[len(cmds)-1], cmds[:len(cmds)-1]
		pids = pids[:len(pids)-1]
	}
	fmt.Fprintf(os.Stderr, "level=INFO msg=\"started PEs\" app=fake pes=%d pids=\"[%s]\" coordinator=127.0.0.1:1\n", len(pids), strings.Join(pids, " "))
	if logger != nil {
		fmt.Fprintf(os.Stderr, "level=INFO msg=\"started loggers\" loggers=1 pids=[%d]\n", logger.Process.Pid)
		go func() {
			logger.Wait()
			fmt.Fprintf(os.Stderr, "level=ERROR msg=\"logger failed; the job goes on\" detail=\"logger 0 (pid %d on vm) was killed by signal 9\" loggers_left=0\n", logger.Process.Pid)
		}()
	}
	fmt.Fprintf(os.Stderr, "level=INFO msg=\"all PEs ready; job begins\" pes=%d ft=none\n", len(pids))
	ended := make(chan int)
	for r, cmd := range cmds {
		go func() {
			cmd.Wait()
			ended <- r
		}()
	}
	for range cmds {
		r := <-ended
		fmt.Fprintf(os.Stderr, "level=ERROR msg=\"PE failed\" detail=\"PE %d ended\"\n", r)
	}
	if logger != nil {
		// As the launcher may say of a logger it declared dead and
		// killed just before the end, whose exit it reaps after.
		fmt.Fprintf(os.Stderr, "level=WARN msg=\"logger failed after the job's end\" logger=0 detail=\"was killed by signal 9 (killed)\"\n")
	}
	fmt.Println(`{"app":"fake","digest":"feed"}`)
	return 0
}
