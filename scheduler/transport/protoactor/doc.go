// Package protoactor is the transport.Endpoint over protoactor-go remote,
// which carries frames over gRPC streams: the runtime's transport before
// the TCP endpoint became the default, kept as a choice (`gochare run
// --transport protoactor`; cmd/gochare offers it, application binaries do
// not) and measured against it by bench/transportbench. It drives the
// transport's protocol core (transport.Core) from a PE actor; see package
// transport for the protocol.
//
// # Security
//
// Every gRPC call carries HMAC-SHA256(job secret, "gochare-transport") in
// its metadata; server interceptors refuse calls without it with
// codes.Unauthenticated, log the peer address and count it in
// Stats.Refused. Unary calls (protoactor's, whose handlers panic) are
// refused for everyone, and a panic of protoactor's stream reader on input
// it cannot decode ends that stream instead of the process. Frames from a
// rank outside the job or that do not fit are logged, counted in
// Stats.Malformed and dropped. Without TLS the token can be read off the
// wire: it keeps other jobs and strays out, not an eavesdropper.
//
// # protoactor settings
//
// The remote is configured for HPC traffic: endpoint writer queues start at
// 256 slots instead of a million (16 MB each), writer batches hold at most
// 64 frames, and gRPC's message limits are raised to fit a full batch of
// full frames. protoactor's own log lines are dropped (it reports the
// normal broken connections of shutdowns and failures as errors) unless
// Config.ProtoActorLog passes them to Config.Logger; configuration comes in
// through transport.Config only, this package reads no environment
// variable. protoactor's metrics stay off. Two globals remain that this
// package cannot avoid: remote.Start sets gRPC's global logger (so one
// process should run one endpoint or bare remote; the tests start PEs as
// child processes) and protoactor's serializer registry.
//
// NewBareRemote starts protoactor's remote configured as an endpoint's,
// without the transport's protocol above it: bench/transportbench measures
// the endpoints against it and against bare TCP (gochare bench transport).
//
// # Imports
//
// The standard library, protoactor-go (actor, remote, eventstream), gRPC,
// protobuf and scheduler/transport. Only cmd/gochare (through the
// launcher's Program.Transports) and bench/transportbench import it.
package protoactor
