package transport

import (
	"net"
	"syscall"
	"unsafe"
)

// directWriter writes on the loop's goroutine without blocking: one
// writev of what the socket takes now.
type directWriter struct {
	iov   []syscall.Iovec
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// maxIovecs is the most buffers one writev takes (IOV_MAX).
const maxIovecs = 1024

// write writes bufs as far as the socket takes them without blocking and
// returns the rest (the unwritten part of bufs, sharing its memory).
func (d *directWriter) write(raw syscall.RawConn, bufs net.Buffers) (net.Buffers, error) {
	if d.fn == nil {
		d.fn = func(fd uintptr) bool {
			for {
				n, _, errno := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&d.iov[0])), uintptr(len(d.iov)))
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
