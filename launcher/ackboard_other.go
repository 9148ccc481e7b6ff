//go:build !linux

package launcher

import (
	"errors"
	"io"
	"net"
)

// newAckBoard: no board on this system (nor a Unix socket to the logger).
func newAckBoard(int) (*ackBoard, error) {
	return nil, errors.New("launcher: no acknowledgement board on this system")
}

// offer sends a board frame without a board.
func (b *ackBoard) offer(uc *net.UnixConn) error {
	var w elWriter
	at := w.begin(elKindBoard)
	w.u32(0)
	w.end(at)
	_, err := uc.Write(w.b)
	return err
}

// takeAckBoard reads the board frame: no board on this system.
func takeAckBoard(uc *net.UnixConn) (*ackView, error) {
	var frame [elHeaderSize + 4]byte
	if _, err := io.ReadFull(uc, frame[:]); err != nil {
		return nil, err
	}
	if frame[0] != elKindBoard {
		return nil, errEventLogFrame
	}
	return nil, nil
}
