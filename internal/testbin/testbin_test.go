package testbin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// A package is built once: the second request returns the same binary
// without building again, and the binary runs.
func TestBuildOnceAndRun(t *testing.T) {
	exe := Build(t, "./testdata/echo")
	if filepath.Base(exe) != "echo" {
		t.Errorf("binary %s, want it named echo", exe)
	}
	before, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if again := Build(t, "./testdata/echo"); again != exe {
		t.Fatalf("second Build gave %s, first %s", again, exe)
	}
	after, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("the second Build rebuilt the binary")
	}
	out, err := exec.Command(exe, "hello", "there").Output()
	if err != nil || string(out) != "hello there\n" {
		t.Errorf("echo printed %q, %v", out, err)
	}
}

// Two packages with the same name get two binaries.
func TestSameNameDifferentPackages(t *testing.T) {
	a := Build(t, "./testdata/echo")
	b := Build(t, "github.com/gochare/gochare/internal/testbin/testdata/echo")
	if a == b || filepath.Base(a) != filepath.Base(b) {
		t.Errorf("binaries %s and %s", a, b)
	}
}

// A failed build is an error that names the package and carries go
// build's output, and it is reported again without another build.
func TestBuildFailureIsClear(t *testing.T) {
	const pkg = "./testdata/missing"
	_, err := binary(pkg)
	if err == nil {
		t.Fatal("building a missing package succeeded")
	}
	for _, want := range []string{"testbin: go build", pkg, "testdata/missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, again := binary(pkg); again == nil || again.Error() != err.Error() {
		t.Errorf("second request: %v, want the first error", again)
	}
}

func TestBuildOutsideRunIsRefused(t *testing.T) {
	state.mu.Lock()
	state.running = false
	state.mu.Unlock()
	defer func() {
		state.mu.Lock()
		state.running = true
		state.mu.Unlock()
	}()
	if _, err := binary("./testdata/echo"); !errors.Is(err, ErrOutsideRun) {
		t.Errorf("Build outside Run: %v, want %v", err, ErrOutsideRun)
	}
}
