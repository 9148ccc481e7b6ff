package transporttest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// squatEnv, in the environment of a test binary, makes it a squatter on
// the Unix socket name it holds (see StartSquatter).
const squatEnv = "GOCHARE_TEST_SQUAT"

// Squat makes this process the squatter StartSquatter started, and
// returns only if it was not started so: a test package that starts
// squatters calls it from an init function.
func Squat() {
	if name := os.Getenv(squatEnv); name != "" {
		os.Exit(squat(name))
	}
}

// squat becomes user nobody (65534), listens on the Unix socket name,
// says "ready", and for each connection prints how many bytes it read
// before the dialer hung up; it ends with its stdin.
func squat(name string) int {
	if err := syscall.Setgid(65534); err != nil {
		fmt.Println("setgid:", err)
		return 1
	}
	if err := syscall.Setuid(65534); err != nil {
		fmt.Println("setuid:", err)
		return 1
	}
	ln, err := net.Listen("unix", name)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("ready")
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				b, _ := io.ReadAll(nc)
				fmt.Printf("read %d\n", len(b))
			}()
		}
	}()
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// A Squatter is a process of another user (nobody) holding a Unix socket
// name, as anyone on a host may take a name in the abstract namespace
// first.
type Squatter struct {
	lines *bufio.Scanner
}

// StartSquatter starts this test binary (whose package calls Squat from
// an init function) as a squatter on the Unix socket name, and stops it
// when the test ends. It skips the test without root, which starting a
// process of another user needs.
func StartSquatter(t testing.TB, name string) *Squatter {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root, to start a process of another user")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), squatEnv+"="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	s := &Squatter{lines: bufio.NewScanner(out)}
	if !s.lines.Scan() || s.lines.Text() != "ready" {
		t.Fatalf("the squatter did not start: %q", s.lines.Text())
	}
	return s
}

// Read waits until a connection to the squatter ends and returns the
// bytes it read from it.
func (s *Squatter) Read(t testing.TB) int {
	t.Helper()
	if !s.lines.Scan() || !strings.HasPrefix(s.lines.Text(), "read ") {
		t.Fatalf("the squatter said %q", s.lines.Text())
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s.lines.Text(), "read "))
	if err != nil {
		t.Fatalf("the squatter said %q", s.lines.Text())
	}
	return n
}
