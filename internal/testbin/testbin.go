package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// GocharePackage is the import path of the gochare command.
const GocharePackage = "github.com/gochare/gochare/cmd/gochare"

// ErrOutsideRun is the error of a Build called while no Run is under way.
var ErrOutsideRun = errors.New("testbin: Build called outside testbin.Run (call os.Exit(testbin.Run(m)) from TestMain)")

// state is the process's build directory and the builds made in it.
var state struct {
	mu      sync.Mutex
	running bool
	dir     string // created by the first build, "" before
	builds  map[string]*build
}

// build is one package's binary, built once.
type build struct {
	once sync.Once
	path string
	err  error
}

// Run runs the tests of m and then removes the binaries built for them. It
// returns the exit code for os.Exit.
func Run(m *testing.M) int {
	state.mu.Lock()
	if state.running {
		state.mu.Unlock()
		panic("testbin: Run called twice")
	}
	state.running = true
	state.builds = map[string]*build{}
	state.mu.Unlock()

	code := m.Run()

	state.mu.Lock()
	defer state.mu.Unlock()
	state.running = false
	if state.dir != "" {
		if err := os.RemoveAll(state.dir); err != nil {
			fmt.Fprintf(os.Stderr, "testbin: removing the built binaries: %v\n", err)
		}
		state.dir = ""
	}
	return code
}

// Gochare returns the path of the gochare command, built on first use.
func Gochare(t testing.TB) string {
	t.Helper()
	return Build(t, GocharePackage)
}

// Build returns the path of the binary of the main package pkg (an import
// path, or a directory relative to the test's working directory such as
// "."), built on first use. A failed build fails t with go build's output.
// The binary keeps the package's name, so that it prints as it would when
// a user runs it.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	exe, err := binary(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// binary returns the path of pkg's binary, building it if no earlier call
// did.
func binary(pkg string) (string, error) {
	state.mu.Lock()
	if !state.running {
		state.mu.Unlock()
		return "", ErrOutsideRun
	}
	if state.dir == "" {
		dir, err := os.MkdirTemp("", "gochare-testbin-")
		if err != nil {
			state.mu.Unlock()
			return "", fmt.Errorf("testbin: directory for the binaries: %w", err)
		}
		state.dir = dir
	}
	b, ok := state.builds[pkg]
	if !ok {
		b = &build{}
		// One directory per package, so that two packages with the same
		// name do not overwrite each other.
		b.path = filepath.Join(state.dir, strconv.Itoa(len(state.builds)), binaryName(pkg))
		state.builds[pkg] = b
	}
	state.mu.Unlock()

	b.once.Do(func() { b.err = goBuild(pkg, b.path) })
	if b.err != nil {
		return "", b.err
	}
	return b.path, nil
}

// binaryName is the name go build gives pkg's binary.
func binaryName(pkg string) string {
	name := path.Base(filepath.ToSlash(pkg))
	if name == "." || name == ".." || name == "/" {
		if abs, err := filepath.Abs(pkg); err == nil {
			name = filepath.Base(abs)
		}
	}
	return name
}

func goBuild(pkg, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("testbin: building %s: %w", pkg, err)
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testbin: go build -o %s %s: %w\n%s", out, pkg, err, output)
	}
	return nil
}
