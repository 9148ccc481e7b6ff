// Package transport is the reliable PE-to-PE transport of gochare: it moves
// byte payloads (the scheduler's serialized batches of envelopes) between
// the PEs of a job, exactly once and in send order per pair of PEs, and runs
// everything it delivers on one goroutine per PE.
//
// # Types
//
// Endpoint is one PE's end; Handler is what it delivers to: Receive for
// each payload from another PE, Event for each value given to Post. The
// scheduler's state lives behind the Handler and has that one goroutine as
// its owner. ProtoActor (NewProtoActor) is the Endpoint over protoactor-go
// remote, which carries frames over gRPC streams; another transport can sit
// behind the same interface. Config configures it; Stats counts what it did.
// NewBareRemote starts protoactor's remote configured as an endpoint's,
// without this package's protocol above it: bench/transportbench measures
// the endpoint against it and against bare TCP (gochare bench transport).
//
// # Protocol
//
// protoactor loses messages when a stream fails, on reconnect, and for a
// batch above gRPC's message limit, so this layer adds its own, in a pure
// state machine (core) that the endpoint's actor drives:
//
//   - Each ordered pair of PEs is a channel. The payloads sent on it form a
//     byte stream of records (uvarint length, bytes), cut into frames of at
//     most Config.MaxFrame bytes with sequence numbers from 1: small
//     payloads sent in one work slice share a frame, large ones span
//     several. The frame being filled goes out on Flush, at the next tick,
//     or when full. Payloads from 16 KiB are not copied: a frame's head
//     holds the record header (and smaller records before it), its data
//     the payload's own memory. The receiver accepts only the next sequence
//     number and unpacks whole payloads; one that lies within a frame is
//     delivered without a copy. Duplicates and frames after a gap are
//     dropped.
//   - Acknowledgements are cumulative and ride on data frames going the
//     other way. Without return traffic a standalone ack goes out after 32
//     frames or a quarter window of bytes, or at the next tick; Flush sends
//     only acks owed since an earlier tick, so a busy one-way stream costs
//     one ack per 32 frames, not one per frame.
//   - Resend is go-back-N: all unacknowledged frames to a peer go again when
//     the oldest is older than Config.ResendAfter (doubling up to 32 times
//     while nothing is acknowledged), when protoactor reports the stream to
//     that peer lost (EndpointTerminatedEvent), and when the peer reports a
//     gap (the resend_from field of an ack).
//   - Flow control: at most Config.Window bytes are unacknowledged per peer;
//     further payloads wait in a queue. Backlog reports accepted and not yet
//     acknowledged bytes so that the scheduler can stop producing.
//
// Time is counted in ticks (Config.TickInterval, or values of Config.Ticks
// in tests); the core reads no clock.
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
// through Config only, this package reads no environment variable.
// protoactor's metrics stay off. Two globals remain that this package
// cannot avoid: remote.Start sets gRPC's global logger (so one process
// should run one endpoint or bare remote; the tests start PEs as child
// processes) and protoactor's serializer registry.
//
// # Imports
//
// The standard library, protoactor-go (actor, remote, eventstream), gRPC
// and protobuf. It imports nothing else of gochare; the scheduler imports
// it (or implements its Net interface with it).
package transport
