// Package transportbench measures the PE-to-PE transport: round-trip
// latency and one-way throughput between two PEs for four stacks, this
// runtime's two transport endpoints (gochare-tcp: transport.TCP, the
// default; gochare-protoactor: scheduler/transport/protoactor), bare
// protoactor remote with the same remote configuration as that endpoint's
// (actor to actor, no sequence numbers or acknowledgements;
// protoactor.NewBareRemote builds it), and bare TCP on loopback
// (length-prefixed frames, one goroutine each side).
//
// The same code serves `go test -bench` (BenchmarkTransport, both sides in
// one process) and `gochare bench transport` (Main, with the echo side in a
// child process that runs Peer: `gochare bench transport-peer`).
// docs/benchmarks.md records the figures.
//
// Traffic: a payload's first byte says what the echo side does with it:
// 'P' echo it back, 'S' nothing, 'C' answer with the one-byte credit 'A'.
// A one-way stream marks every creditEvery-th payload 'C' and keeps at most
// 4*creditEvery payloads unanswered, about 4 MiB: without it bare
// protoactor queues without bound.
//
// # Imports
//
// The standard library, protoactor-go (actor, remote),
// scheduler/transport and scheduler/transport/protoactor. Nothing of the runtime imports it; cmd/gochare
// reaches it through the bench package.
package transportbench
