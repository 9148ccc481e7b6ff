// Package testbin builds the programs that integration tests start as real
// processes (the gochare command, test programs), once per test process.
//
// A test asks for a binary with Gochare(t) or Build(t, pkg). The first
// request for a package runs `go build` into a temporary directory the test
// process shares; later requests return the same path, or the same build
// error, without building again. A failed build fails the test with go
// build's output. Build only works inside Run, which a package's TestMain
// calls so that the directory is removed when the tests end:
//
//	func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }
//
// Binaries are built without -race whatever the test binary is built with:
// they are the programs users run.
//
// The package keeps one piece of process-wide state, the directory and the
// builds made in it; sharing them across the tests of a process is its
// purpose. It imports nothing of gochare; only tests import it.
package testbin
