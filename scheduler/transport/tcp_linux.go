package transport

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// localPEAddr is the Unix socket on which the endpoint listening on TCP
// address addr listens too: a name in the abstract namespace (no file to
// remove), which only the processes of the endpoint's network namespace
// reach (so PEs in separate namespaces, as on separate hosts, connect over
// TCP), and which no other endpoint has, since no other listens on addr
// there.
func localPEAddr(addr string) string { return "@gochare-pe " + addr }

// unixPeer returns the process id and user id of the process at the
// other end of the Unix socket nc (SO_PEERCRED: the process that made the
// socket at the other end, as the kernel recorded it).
func unixPeer(nc net.Conn) (pid, uid int, err error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, 0, fmt.Errorf("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if credErr != nil {
		return 0, 0, credErr
	}
	return int(cred.Pid), int(cred.Uid), nil
}

// UnixPeerUser checks that the process at the other end of the Unix
// socket nc runs as this process's user. A dialer calls it before it
// sends anything on a socket named in the abstract namespace, which any
// process of the host may have taken first (and could relay a handshake
// through, to read what follows).
func UnixPeerUser(nc net.Conn) error {
	pid, uid, err := unixPeer(nc)
	if err != nil {
		return err
	}
	if uid != os.Getuid() {
		return fmt.Errorf("the socket's process (pid %d) runs as user %d, this PE as %d", pid, uid, os.Getuid())
	}
	return nil
}

// The socket is non-blocking, so its reads and writes return at once:
// the short ones are made with RawSyscall, which skips the runtime's bookkeeping
// for a call that may block (entersyscall: on an otherwise idle process
// it wakes the runtime's monitor thread, a futex call for every read and
// write of a ping-pong). A read or write that would block waits in the
// netpoller as net.Conn's do.

// directWriter writes on the loop's goroutine without blocking: one
// writev of what the socket takes now.
type directWriter struct {
	iov   []syscall.Iovec
	want  int
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// maxIovecs is the most buffers one writev takes (IOV_MAX).
const maxIovecs = 1024

// rawWriteMax is the most bytes written with RawSyscall: a longer copy
// goes through Syscall, so that the runtime may hand this thread's
// processor to other goroutines while the kernel copies. Reads of
// frames larger than bigFrame go through net.Conn for the same reason.
const rawWriteMax = 64 << 10

// write writes bufs as far as the socket takes them without blocking and
// returns the rest (the unwritten part of bufs, sharing its memory).
func (d *directWriter) write(raw syscall.RawConn, bufs net.Buffers) (net.Buffers, error) {
	if d.fn == nil {
		d.fn = func(fd uintptr) bool {
			for {
				call := syscall.RawSyscall
				if d.want > rawWriteMax {
					call = syscall.Syscall // a long copy
				}
				n, _, errno := call(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&d.iov[0])), uintptr(len(d.iov)))
				if errno == syscall.EINTR {
					continue
				}
				d.n, d.errno = int(n), errno
				return true // never wait: what is left goes to the writer
			}
		}
	}
	for len(bufs) > 0 {
		d.iov = d.iov[:0]
		want := 0
		for _, b := range bufs {
			if len(d.iov) == maxIovecs {
				break
			}
			if len(b) == 0 {
				continue
			}
			v := syscall.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			d.iov = append(d.iov, v)
			want += len(b)
		}
		if len(d.iov) == 0 {
			return nil, nil
		}
		d.want = want
		err := raw.Write(d.fn)
		clear(d.iov)
		if err != nil {
			return bufs, err
		}
		if d.errno == syscall.EAGAIN {
			return bufs, nil
		}
		if d.errno != 0 {
			return bufs, d.errno
		}
		consume(&bufs, d.n)
		if d.n < want {
			return bufs, nil
		}
	}
	return nil, nil
}

// consume drops the first n bytes of bufs.
func consume(bufs *net.Buffers, n int) {
	for len(*bufs) > 0 {
		b := (*bufs)[0]
		if len(b) > n {
			(*bufs)[0] = b[n:]
			return
		}
		n -= len(b)
		(*bufs)[0] = nil
		*bufs = (*bufs)[1:]
	}
}

// rawReader reads a plain TCP socket: what net.Conn.Read does, with the
// read made by RawSyscall, and a short poll before waiting (see spinner).
type rawReader struct {
	raw   syscall.RawConn
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
	spin  *spinner
	// skip is how many more times the reader waits without polling,
	// and misses how many polls in a row found nothing.
	skip, misses int
}

// A reader that finds its socket empty reads it again for up to the
// endpoint's idle poll (Config.IdlePoll) before it parks in the
// netpoller: a message that arrives meanwhile is read at once, without
// the wake-up of a parked thread (epoll, futex), which is most of a
// short round trip's time. Between two reads the reader yields its core
// (sched_yield): a process the kernel queued on this core, the peer
// that is to answer among them, runs at once instead of waiting for the
// poll to end. The kernel tends to wake a reader parked on a socket on
// the core of the process that wrote to it, so two PEs that park in
// turn end up sharing a core while another is idle, and a poll that
// does not yield keeps the peer off the core it shares
// (docs/benchmarks.md, "rtt"). A reader stops polling as soon as the
// loop or a connection's writer has work (their goroutines need the
// thread this poll holds) and does not poll while they do. A poll that
// finds nothing makes the reader wait without polling the next 2, 4,
// ... up to maxSkip times, so a reader whose messages come seldom stops
// spending CPU on it. One reader per endpoint polls at a time
// (spinner): a PE with many peers takes at most one core to poll.
const maxSkip = 1 << 10

func newRawReader(raw syscall.RawConn, s *spinner) *rawReader {
	r := &rawReader{raw: raw, spin: s}
	read := func(fd uintptr) (bool, syscall.Errno) {
		for {
			n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.p[0])), uintptr(len(r.p)))
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false, 0
			}
			r.n = int(n)
			return true, errno
		}
	}
	r.fn = func(fd uintptr) bool {
		got, errno := read(fd)
		if got {
			r.errno = errno
			return true
		}
		if !r.spinning() {
			return false // wait until the socket is readable
		}
		defer r.spin.taken.Store(false)
		r.count(func(c *counters) { c.idlePolls.Add(1) })
		deadline := time.Now().Add(r.spin.poll)
		for {
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			if got, errno = read(fd); got {
				r.misses = 0
				r.errno = errno
				r.count(func(c *counters) { c.idlePollHits.Add(1) })
				return true
			}
			if r.spin.busy != nil && r.spin.busy() {
				// The loop's or a writer's goroutine needs this thread.
				r.count(func(c *counters) { c.idlePollsCut.Add(1) })
				return false
			}
			if time.Now().After(deadline) {
				r.missed()
				return false
			}
		}
	}
	return r
}

// count updates the endpoint's counters, if the reader has them.
func (r *rawReader) count(update func(*counters)) {
	if r.spin.stats != nil {
		update(r.spin.stats)
	}
}

// missed notes a poll that found nothing: the reader waits without
// polling the next 2, 4, ... up to maxSkip times.
func (r *rawReader) missed() {
	r.misses++
	r.skip = min(1<<min(r.misses, 10), maxSkip)
}

// spinning says whether the reader polls before this wait, taking the
// endpoint's spinner if so.
func (r *rawReader) spinning() bool {
	if r.spin == nil || r.spin.poll <= 0 {
		return false
	}
	if r.skip > 0 {
		r.skip--
		return false
	}
	if r.spin.busy != nil && r.spin.busy() {
		return false
	}
	return r.spin.taken.CompareAndSwap(false, true)
}

// Read reads into p what the socket has, waiting for at least one
// byte; io.EOF once the peer has closed its side.
func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.raw.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.errno != 0:
		return 0, r.errno
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}
