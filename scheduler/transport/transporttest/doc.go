// Package transporttest is the test suite every transport.Endpoint must
// pass, for the test packages of the endpoints (scheduler/transport for
// TCP, scheduler/transport/protoactor): a job of PEs, each a child process
// of the test binary driven over stdin and stdout, and a Handler that
// checks every payload's content and order. Main is the TestMain of such
// a package, Run the suite.
//
// It imports scheduler/transport and the standard library; only tests
// import it.
package transporttest
