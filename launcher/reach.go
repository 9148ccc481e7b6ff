package launcher

import (
	"errors"
	"fmt"
	"net"
)

// ErrUnreachablePE is the error of a job in which a PE listens for the
// other PEs where some of them cannot reach it.
var ErrUnreachablePE = errors.New("launcher: a PE listens where PEs on other hosts cannot reach it")

// unreachablePE returns an error when one PE's transport listens on a
// loopback address while another PE joined from another host: the second
// could never connect to the first, and the job would stall. (A PE
// listens where it reached the coordinator from, so a PE on the
// coordinator's host that dials a name mapped to 127.0.1.1 listens
// there.) A PE is on another host when its control connection comes from
// an address that is not loopback and not one of this host's (isLocal).
func unreachablePE(peers []*peer, isLocal func(net.IP) bool) error {
	var onLoopback, elsewhere *peer
	for _, p := range peers {
		if p == nil {
			continue
		}
		if host, _, err := net.SplitHostPort(p.hello.GetTransportAddr()); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() && onLoopback == nil {
				onLoopback = p
			}
		}
		if a, ok := p.conn.raw.RemoteAddr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && !isLocal(a.IP) && elsewhere == nil {
			elsewhere = p
		}
	}
	if onLoopback == nil || elsewhere == nil {
		return nil
	}
	return fmt.Errorf("%w: PE %d listens on %s, a loopback address, and PE %d joined from %s, another host, which cannot reach it: "+
		"give the PEs on this host a --coordinator address that does not resolve to loopback, or --host with an address the other hosts reach",
		ErrUnreachablePE, onLoopback.rank, onLoopback.hello.GetTransportAddr(), elsewhere.rank, elsewhere.conn.raw.RemoteAddr())
}

// localIP reports whether ip is an address of one of this host's
// interfaces.
func localIP(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
