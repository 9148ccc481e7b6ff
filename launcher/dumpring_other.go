//go:build !linux

package launcher

import (
	"errors"
	"log/slog"
	"net"

	"github.com/gochare/gochare/logging"
)

// dumpRing is Linux's (dumpring_linux.go): elsewhere the dumps go
// through the socket.
type dumpRing struct{}

func offerDumpRing(*net.UnixConn, *sharedLog) (*dumpRing, error) {
	return nil, errors.New("no shared dump memory on this system")
}

func (r *dumpRing) alloc(int) ([]byte, uint64, bool) { return nil, 0, false }

func (r *dumpRing) position([]byte) (uint64, bool) { return 0, false }

func (r *dumpRing) take([]byte, uint64) error {
	return errors.New("no shared dump memory on this system")
}

func (r *dumpRing) unmap() {}

func (r *dumpRing) publishAck(uint64, int) bool { return false }

func (r *dumpRing) ack() (uint64, uint64, int, bool) { return 0, 0, 0, false }

func (r *dumpRing) askWake() {}

type rightsReader struct{}

func newRightsReader(*net.UnixConn) *rightsReader { return nil }

func (r *rightsReader) Read([]byte) (int, error) {
	return 0, errors.New("no shared dump memory on this system")
}

func (r *rightsReader) close() {}

func acceptDumpRing(*rightsReader, int) (*dumpRing, error) {
	return nil, errors.New("no shared dump memory on this system")
}

// sharedLog is Linux's (sharedlog_linux.go).
type sharedLog struct{}

func (c *dumpClient) shareLog(int) {}

func (c *dumpClient) DumpPlaced(int) bool { return false }

func (c *dumpClient) SharedLogMemory() logging.SharedLogMemory { return nil }

func (s *dumpServer) expandPlaced(*dumpRing, []byte, int, uint64, int, uint64) ([]byte, int, error) {
	return nil, 0, errors.New("no shared dump memory on this system")
}

func acceptSharedLog(*rightsReader, int) ([]byte, error) {
	return nil, errors.New("no shared dump memory on this system")
}

func unmapSharedLog([]byte) {}

func (s *sharedLog) countPlaced() {}

func (s *sharedLog) logStats(*slog.Logger) {}
