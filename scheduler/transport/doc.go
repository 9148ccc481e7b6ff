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
// its owner. TCP (NewTCP) is the Endpoint the runtime uses by default:
// plain TCP connections of its own, one per pair of PEs. Config configures
// an endpoint; Stats counts what it did. Core is the protocol below both
// endpoints without I/O, for other drivers: the simulator (package sim)
// and the endpoint over protoactor-go remote, which lives in the
// subpackage scheduler/transport/protoactor so that a program that does
// not choose it links neither protoactor nor gRPC. transporttest holds the
// test suite both endpoints pass.
//
// # Protocol
//
// A connection may break and lose what was in flight (and protoactor loses
// messages when a stream fails, on reconnect, and for a batch above gRPC's
// message limit), so this layer has its own protocol, in a pure state
// machine (core) that an endpoint's goroutine drives:
//
//   - Each ordered pair of PEs is a channel. The payloads sent on it form a
//     byte stream of records (uvarint length, bytes), cut into frames of at
//     most Config.MaxFrame bytes with sequence numbers from 1: small
//     payloads sent in one work slice share a frame, large ones span
//     several. The frame being filled goes out on Flush, at the next tick,
//     or when full. Payloads from 16 KiB are not copied: a frame's head
//     holds the record header (and smaller records before it), its data
//     the payload's own memory. A payload may also be given in two parts
//     (SendParts: the scheduler's batch, then a large message payload
//     from its own memory): the head is copied into the frame, the body,
//     from 16 KiB, is not, and the caller may write it again once the
//     endpoint says it holds none (TCP.Released: all acknowledged and
//     written). The receiver accepts only the next sequence
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
//     while nothing is acknowledged), when a connection to that peer comes
//     up again (TCP) or protoactor reports the stream lost
//     (EndpointTerminatedEvent), and when the peer reports a gap (the
//     resend_from field of an ack).
//   - Flow control: at most Config.Window bytes are unacknowledged per peer;
//     further payloads wait in a queue. Backlog reports accepted and not yet
//     acknowledged bytes so that the scheduler can stop producing.
//   - A peer that failed for good is forgotten (Forget, called by the
//     scheduler): what was queued for it is dropped and nothing more is
//     sent to it or taken from it.
//
// Time is counted in ticks (Config.TickInterval, or values of Config.Ticks
// in tests); the core reads no clock.
//
// # The TCP endpoint
//
// One connection per pair of PEs, dialed by the PE of lower rank (so
// two PEs never dial each other at once; an acceptor refuses a dial from a
// higher rank). On Linux it is a Unix stream socket between PEs of one
// host (and network namespace): each endpoint also listens on a Unix
// socket in the abstract namespace named after its TCP address, and a
// dialer tries that first, after checking that the process listening
// there runs as its user; a peer elsewhere is not found there and is
// dialed over TCP, as is a peer whose name answers wrongly (from then
// on). Config.TCPOnly uses TCP alone. Everything below holds for both
// kinds of socket. When it breaks, the dialer dials again, pausing from 10 ms
// doubling to 1 s after failures and after connections that lasted under
// a second, until the peer is forgotten or the endpoint closes; a new
// connection from a peer replaces its old one, and when one comes up the
// core goes back and resends what is unacknowledged. Frames to a peer
// without a connection are dropped and resent later in the same way.
//
// Goroutines: the loop owns the core and runs the Handler, fed by a
// mailbox (frames, posted events, ticks, connections up and down); each
// connection has a reader and a writer. After each item it handles, the
// loop writes the frames it queued itself, in one vectored write
// (writev: a header, then the frame's head and data from their own
// memory), if the connection's writer is idle, and only as far as the
// socket takes them without blocking (Linux; elsewhere the writer writes
// everything); the rest, and what is queued while the writer is busy,
// the writer writes, so a peer that stops reading never blocks the loop.
// The reader reads as much as the socket holds into a 64 KiB chunk and
// passes the whole frames in it to the loop in one batch; their payloads
// are slices of the chunk, which is therefore never written again once it
// gave one out (the handler owns the payloads), and reading goes on in a
// new chunk. A frame above 16 KiB is read straight into a buffer of its
// own. A frame's head and data, contiguous in that memory, are one piece
// of the stream to the receiver, so a payload sent in parts that fits in
// a frame arrives as one slice of it, not joined in a copy. Acknowledged frames' buffers are reused for new frames while no
// writer holds a frame. TCP_NODELAY is on. So a small payload's round
// trip crosses one goroutine hand-off per side (reader to loop) and, in
// steady state, allocates nothing; a large payload is copied once per
// side (by the kernel; the bytes read along with its header twice). The
// readers' chunks and big frames' buffers are recycled: each carries a
// finalizer that, once the garbage collector finds nothing refers to it
// (the handler dropped every payload in it), puts it back in the
// endpoint's pool (up to 32 MiB) for a later read instead of freeing it,
// which spares the clearing of fresh memory and spaces the collections
// out (recvpool.go). A big frame whose bytes were all copied into a
// joined payload (a checkpoint's buddy copy spans dozens of frames), or
// dropped, goes back to the pool as soon as the loop handled it, without
// waiting for a collection: the next frame is read into it.
//
// Wire format (integers little-endian): a handshake (below), then frames,
// each a 36-byte header (from rank u32, head length u32, data length u32,
// seq u64, ack u64, resend_from u64) followed by head and data.
//
// # Security
//
// TCP and Unix sockets alike: before any frame, the dialer sends "GCT1", its rank, the rank it
// dials and a random nonce; the acceptor answers with its own nonce and
// HMAC-SHA256(job secret, "acceptor", both nonces, both ranks); the dialer
// checks it and answers with the same MAC for "dialer"; the acceptor
// checks that and confirms. So each side proves the secret to the other
// without sending it, bound to fresh nonces and to the two ranks. A
// connection that does not complete the handshake within 10 s, speaks
// another protocol, claims a rank outside the job or proves another secret
// is refused: logged with its address and counted in Stats.Refused, on
// either side. After the handshake, a frame that is malformed (longer than
// a frame, not from the connection's rank, or rejected by the core) is
// logged, counted in Stats.Malformed, and its connection dropped. No
// input makes the process panic (FuzzTCPFrames). Without TLS the traffic
// can be read and, by one on the path, altered: the handshake keeps other
// jobs and strays out, not an attacker on the network.
//
// With Config.TLS (gochare run --tls) every connection is mutual TLS
// first: the acceptor runs tls.Server, the dialer tls.Client, each
// presenting a certificate the other verifies, and the handshake above
// then runs inside it. A connection that fails TLS (no TLS, no
// certificate, a certificate of another CA) is refused, logged with its
// address and the TLS error, and counted in Stats.Refused. With TLS,
// frames are written as without it, by the loop when it can and by the
// writer goroutine otherwise: tls.Conn seals them into a buffer, never
// blocking, and that buffer goes to the socket (tcp_tls.go).
//
// The protoactor endpoint checks a job token on every gRPC call (see its
// package).
//
// # Imports
//
// The standard library and protobuf (Frame, the frame of the protoactor
// endpoint and of Core's drivers). It imports nothing else of gochare,
// nor protoactor-go or gRPC (a test in the launcher checks that programs
// do not link them); the scheduler implements its Net interface with an
// Endpoint, and the launcher chooses which.
package transport
