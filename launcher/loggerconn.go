package launcher

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gochare/gochare/scheduler/transport"
)

// A logger's connections from the PEs: the dump stream (dumpstream.go)
// and the event logger's record stream (eventlogstream.go) open the same
// way, on the logger's one listener, and differ by their magic, which
// also labels the proofs (a proof made for one stream does not open the
// other):
//
//	PE     -> logger: magic [4], PE rank u32, logger u32, PE nonce [16]
//	logger -> PE:     logger nonce [16], HMAC(secret, label+" logger", nonces, rank, logger) [32]
//	PE     -> logger: HMAC(secret, label+" pe", nonces, rank, logger) [32]
//	logger -> PE:     1 (accepted)
//
// under --tls after a mutual TLS handshake with the job's certificates.
// Integers are little-endian.
//
// On Linux a logger also listens on a Unix socket in the abstract
// namespace named after its TCP address (localLoggerAddr), and a PE opens
// its event log stream there when it can (same host and network
// namespace), over TCP otherwise: a small write and read through a Unix
// socket costs about half of one through TCP on the loopback, and the
// stream makes two of each per batch of records.

// loggerStream is a kind of PE-to-logger connection.
type loggerStream struct {
	magic string // 4 bytes
	label string // of the proofs
	name  string // in errors
}

var (
	dumpStream     = loggerStream{magic: dumpMagic, label: "gochare-dump", name: "dump"}
	eventLogStream = loggerStream{magic: "GCE1", label: "gochare-eventlog", name: "event log"}
)

const loggerHelloSize = 4 + 4 + 4 + dumpNonce

func (k loggerStream) mac(secret []byte, role string, peNonce, loggerNonce []byte, pe, logger int) []byte {
	return transport.ProofMAC(secret, k.label+" "+role, peNonce, loggerNonce, pe, logger)
}

// acceptLoggerConn runs logger's side of the handshake of a connection of
// one of kinds from a PE of a job of pes PEs; it returns the connection
// (TLS wrapped if tlsCfg is set), the PE's rank and the stream's kind.
func acceptLoggerConn(nc net.Conn, tlsCfg *tls.Config, secret []byte, logger, pes int, kinds ...loggerStream) (net.Conn, int, loggerStream, error) {
	nc.SetDeadline(time.Now().Add(dumpHandshakeLimit))
	if tlsCfg != nil {
		tc := tls.Server(nc, tlsCfg)
		if err := tc.Handshake(); err != nil {
			return nil, 0, loggerStream{}, fmt.Errorf("%w: TLS: %w", errDumpRefused, err)
		}
		nc = tc
	}
	var hello [loggerHelloSize]byte
	if _, err := io.ReadFull(nc, hello[:]); err != nil {
		return nil, 0, loggerStream{}, fmt.Errorf("%w: no handshake: %w", errDumpRefused, err)
	}
	var kind loggerStream
	for _, k := range kinds {
		if string(hello[:4]) == k.magic {
			kind = k
		}
	}
	if kind.magic == "" {
		return nil, 0, kind, fmt.Errorf("%w: not a gochare logger stream", errDumpRefused)
	}
	pe, l := int64(binary.LittleEndian.Uint32(hello[4:])), int(binary.LittleEndian.Uint32(hello[8:]))
	if l != logger || pe >= int64(pes) {
		return nil, 0, kind, fmt.Errorf("%w: PE %d opening a %s stream to logger %d (this is logger %d of a job of %d PEs)", errDumpRefused, pe, kind.name, l, logger, pes)
	}
	peNonce := hello[12:]
	var reply [dumpNonce + sha256.Size]byte
	rand.Read(reply[:dumpNonce])
	copy(reply[dumpNonce:], kind.mac(secret, "logger", peNonce, reply[:dumpNonce], int(pe), logger))
	if _, err := nc.Write(reply[:]); err != nil {
		return nil, 0, kind, fmt.Errorf("%w: %w", errDumpRefused, err)
	}
	var proof [sha256.Size]byte
	if _, err := io.ReadFull(nc, proof[:]); err != nil {
		return nil, 0, kind, fmt.Errorf("%w: PE %d gave no proof of the job secret: %w", errDumpRefused, pe, err)
	}
	if !hmac.Equal(proof[:], kind.mac(secret, "pe", peNonce, reply[:dumpNonce], int(pe), logger)) {
		return nil, 0, kind, fmt.Errorf("%w: PE %d does not know the job secret", errDumpRefused, pe)
	}
	if _, err := nc.Write([]byte{1}); err != nil {
		return nil, 0, kind, fmt.Errorf("%w: %w", errDumpRefused, err)
	}
	nc.SetDeadline(time.Time{})
	return nc, int(pe), kind, nil
}

// dialLoggerConn opens and authenticates a connection of kind from PE
// rank to logger at addr, within dumpHandshakeLimit. The stream
// goes through the logger's Unix socket when the PE can reach it (on the
// logger's host; localLoggerAddr) and a process of the PE's user holds it,
// and through TCP otherwise.
func dialLoggerConn(ctx context.Context, kind loggerStream, addr string, rank, logger int, secret []byte, tlsCfg *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dumpHandshakeLimit)
	defer cancel()
	if local := localLoggerAddr(addr); local != "" {
		// Half the time at most, so that whatever answers there (the
		// name is anyone's on this host to take) leaves TCP time to
		// reach the logger.
		localCtx, cancel := context.WithTimeout(ctx, dumpHandshakeLimit/2)
		nc, err := dialLoggerConnOn(localCtx, "unix", local, kind, rank, logger, secret, tlsCfg)
		cancel()
		if err == nil {
			return nc, nil
		}
	}
	return dialLoggerConnOn(ctx, "tcp", addr, kind, rank, logger, secret, tlsCfg)
}

// dialLoggerConnOn is dialLoggerConn on network.
func dialLoggerConnOn(ctx context.Context, network, addr string, kind loggerStream, rank, logger int, secret []byte, tlsCfg *tls.Config) (net.Conn, error) {
	nc, err := new(net.Dialer).DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("launcher: logger %d at %s: %w", logger, addr, err)
	}
	if network == "unix" {
		// Anyone on the host may have taken the name first: send
		// nothing to another user's process.
		if err := transport.UnixPeerUser(nc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("%w: logger %d at %s: %w", errDumpRefused, logger, addr, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	sock := nc
	if tlsCfg != nil {
		tc := tls.Client(nc, tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			sock.Close()
			return nil, fmt.Errorf("%w: TLS with logger %d at %s: %w", errDumpRefused, logger, addr, err)
		}
		nc = tc
	}
	fail := func(err error) (net.Conn, error) {
		sock.Close()
		return nil, err
	}
	var hello [loggerHelloSize]byte
	copy(hello[:], kind.magic)
	binary.LittleEndian.PutUint32(hello[4:], uint32(rank))
	binary.LittleEndian.PutUint32(hello[8:], uint32(logger))
	rand.Read(hello[12:])
	if _, err := nc.Write(hello[:]); err != nil {
		return fail(err)
	}
	var reply [dumpNonce + sha256.Size]byte
	if _, err := io.ReadFull(nc, reply[:]); err != nil {
		return fail(fmt.Errorf("%w: no handshake reply from logger %d: %w", errDumpRefused, logger, err))
	}
	if !hmac.Equal(reply[dumpNonce:], kind.mac(secret, "logger", hello[12:], reply[:dumpNonce], rank, logger)) {
		return fail(fmt.Errorf("%w: the logger at %s does not know the job secret", errDumpRefused, addr))
	}
	if _, err := nc.Write(kind.mac(secret, "pe", hello[12:], reply[:dumpNonce], rank, logger)); err != nil {
		return fail(err)
	}
	var ok [1]byte
	if _, err := io.ReadFull(nc, ok[:]); err != nil || ok[0] != 1 {
		return fail(fmt.Errorf("%w: logger %d refused the handshake", errDumpRefused, logger))
	}
	if !stop() {
		return fail(ctx.Err())
	}
	nc.SetDeadline(time.Time{})
	return nc, nil
}
