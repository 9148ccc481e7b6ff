package launcher

import (
	"errors"
	"fmt"
	"net"
)

// ErrUnreachablePE is the error of a job in which a PE listens for the
// other PEs where some of them cannot reach it.
var ErrUnreachablePE = errors.New("launcher: a PE listens where PEs on other hosts cannot reach it")

// unreachablePE returns an error when a PE's transport listens on a
// loopback address and a PE on another host would have to dial it: the
// dial could never succeed, and the job would stall. (A PE listens where
// it reached the coordinator from, so a PE on the coordinator's host that
// dials a name mapped to 127.0.1.1 listens there.) With lowerDials (the
// TCP transport: of two PEs, the lower rank dials), only a PE of lower
// rank dials; otherwise any PE may. A PE is on another host when its
// control connection comes from an address that is not loopback and not
// one of this host's (isLocal).
func unreachablePE(peers []*peer, lowerDials bool, isLocal func(net.IP) bool) error {
	elsewhere := func(p *peer) bool {
		a, ok := p.conn.raw.RemoteAddr().(*net.TCPAddr)
		return ok && !a.IP.IsLoopback() && !isLocal(a.IP)
	}
	for _, p := range peers {
		if p == nil {
			continue
		}
		host, _, err := net.SplitHostPort(p.hello.GetTransportAddr())
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			continue
		}
		for _, q := range peers {
			if q == nil || q == p || lowerDials && q.rank > p.rank || !elsewhere(q) {
				continue
			}
			return fmt.Errorf("%w: PE %d listens on %s, a loopback address, and PE %d, which dials it, joined from %s, another host: "+
				"give the PEs on this host a --coordinator address that does not resolve to loopback, or --host with an address the other hosts reach",
				ErrUnreachablePE, p.rank, p.hello.GetTransportAddr(), q.rank, q.conn.raw.RemoteAddr())
		}
	}
	return nil
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
