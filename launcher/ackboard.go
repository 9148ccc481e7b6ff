package launcher

import (
	"sync/atomic"

	"github.com/gochare/gochare/logging"
)

// The acknowledgement board: a logger's latest acknowledgement of each
// creator in memory it shares with the PEs of its host, which read it
// between their handlers instead of reading reply frames from their
// sockets. On a PE's Unix connection (same host, no TLS) the logger sends
// first a board frame (kind 5, body: creators u32) with the board's
// memory file attached (SCM_RIGHTS; creators 0 and no file: no board,
// the PE gets reply frames as over TCP); it then writes no reply frames
// on that connection, and every Store updates the board. A batch thus
// costs the PE one write and the logger one wake-up and read, where a
// reply frame cost a write on the logger and the PE's reads of its
// socket until the reply came.
//
// The memory is 1 + 2 x creators little-endian words: a version, then
// per creator its acknowledgement's epoch and up-to. The logger (one
// writer, under its lock) makes the version odd, writes, and makes it
// even again; a reader that saw the same even version before and after
// reading the words read a consistent board, and otherwise tries at its
// next look (it never waits for the logger).
const elKindBoard = 5

func ackBoardBytes(creators int) int {
	const page = 4096
	return (8*(1+2*creators) + page - 1) / page * page
}

// ackBoard is the logger's side of the board.
type ackBoard struct {
	creators int
	fd       int
	words    []atomic.Uint64
}

// publish puts a on the board. The caller holds the event log server's
// lock (one writer).
func (b *ackBoard) publish(a logging.EventLogAck) {
	if b == nil || a.Creator < 0 || int(a.Creator) >= b.creators {
		return
	}
	v := b.words[0].Load()
	b.words[0].Store(v + 1)
	b.words[1+2*int(a.Creator)].Store(a.Epoch)
	b.words[2+2*int(a.Creator)].Store(a.UpTo)
	b.words[0].Store(v + 2)
}

type boardEntry struct{ epoch, upTo uint64 }

// ackView is a PE's view of a logger's board: the version it read last,
// and the entries it took then.
type ackView struct {
	words   []atomic.Uint64
	seen    uint64
	last    []boardEntry
	scratch []boardEntry
}

// take appends to into the acknowledgements of logger on the board that
// changed since the last take (none when the board did not change or
// was being written).
func (v *ackView) take(logger int, into []logging.EventLogAck) []logging.EventLogAck {
	ver := v.words[0].Load()
	if ver == v.seen || ver&1 != 0 {
		return into
	}
	for c := range v.scratch {
		v.scratch[c] = boardEntry{v.words[1+2*c].Load(), v.words[2+2*c].Load()}
	}
	if v.words[0].Load() != ver {
		return into // written meanwhile: at the next look
	}
	v.seen = ver
	for c, e := range v.scratch {
		if e.upTo == 0 || e == v.last[c] {
			continue
		}
		v.last[c] = e
		into = append(into, logging.EventLogAck{Logger: logger, Epoch: e.epoch, Creator: logging.PEID(c), UpTo: e.upTo})
	}
	return into
}
