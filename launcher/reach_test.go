package launcher

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/launcher/controlpb"
)

// fromAddr is a net.Conn that only tells its remote address.
type fromAddr struct {
	net.Conn
	remote *net.TCPAddr
}

func (f fromAddr) RemoteAddr() net.Addr { return f.remote }

func TestUnreachablePE(t *testing.T) {
	local := func(ip net.IP) bool { return ip.Equal(net.ParseIP("192.0.2.2")) }
	pe := func(rank int, from, listens string) *peer {
		return &peer{rank: rank, conn: &conn{raw: fromAddr{remote: &net.TCPAddr{IP: net.ParseIP(from), Port: 40000}}},
			hello: &controlpb.Hello{TransportAddr: listens}}
	}
	for _, tc := range []struct {
		name       string
		lowerDials bool
		peers      []*peer
		err        string
	}{
		{"all on this host, on loopback", true, []*peer{pe(0, "127.0.0.1", "127.0.0.1:1"), pe(1, "127.0.0.1", "127.0.0.1:2")}, ""},
		{"all on other hosts", true, []*peer{pe(0, "10.0.0.1", "10.0.0.1:1"), pe(1, "10.0.0.2", "10.0.0.2:2")}, ""},
		{"this host by its own address, and loopback", true, []*peer{pe(0, "127.0.0.1", "127.0.0.1:1"), pe(1, "192.0.2.2", "192.0.2.2:2")}, ""},
		{"not joined yet", true, []*peer{pe(0, "127.0.0.1", "127.0.0.1:1"), nil}, ""},
		{"loopback, dialed only from this host", true, []*peer{pe(0, "127.0.1.1", "127.0.1.1:1"), pe(1, "127.0.1.1", "127.0.1.1:2"), pe(2, "10.0.0.3", "10.0.0.3:3")}, ""},
		{"loopback, dialed from another host", true, []*peer{pe(0, "10.0.0.1", "10.0.0.1:1"), pe(1, "127.0.1.1", "127.0.1.1:2"), pe(2, "10.0.0.3", "10.0.0.3:3")},
			"PE 1 listens on 127.0.1.1:2, a loopback address, and PE 0, which dials it, joined from 10.0.0.1:40000, another host"},
		{"loopback, any PE dials", false, []*peer{pe(0, "::1", "[::1]:1"), pe(1, "2001:db8::5", "[2001:db8::5]:2")},
			"PE 0 listens on [::1]:1, a loopback address, and PE 1, which dials it, joined from [2001:db8::5]:40000, another host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unreachablePE(tc.peers, tc.lowerDials, local)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnreachablePE)
			require.ErrorContains(t, err, tc.err)
		})
	}
}
