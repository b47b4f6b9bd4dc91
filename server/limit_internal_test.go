package server

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
)

// fakeConn is a connection from a chosen remote address (loopback routes
// only ::1 of IPv6, so other clients of a /64 cannot really connect).
type fakeConn struct {
	net.Conn
	remote net.Addr
}

func (c fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c fakeConn) Close() error         { return nil }

// queueListener accepts the connections queued in it, in order.
type queueListener struct {
	net.Listener
	q []net.Conn
}

func (l *queueListener) Accept() (net.Conn, error) {
	if len(l.q) == 0 {
		return nil, net.ErrClosed
	}
	c := l.q[0]
	l.q = l.q[1:]
	return c, nil
}

func from(s string) net.Conn {
	return fakeConn{remote: &net.TCPAddr{IP: net.ParseIP(s), Port: 1234}}
}

func TestClientNet(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":          "192.0.2.1/32",
		"::ffff:192.0.2.1":   "192.0.2.1/32",
		"2001:db8:1:2:3::9":  "2001:db8:1:2::/64",
		"2001:db8:1:2::ffff": "2001:db8:1:2::/64",
		"::1":                "::/64",
	} {
		if got := clientNet(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("clientNet(%s) = %s, want %s", in, got, want)
		}
	}
	if p := clientNet(netip.Addr{}); p.IsValid() {
		t.Errorf("clientNet of no address = %v", p)
	}
}

// TestShareByClientNet: the per-client share counts an IPv6 /64 as one
// client (an address beyond the share but in the same /64 is refused, the
// next /64 is not) and an IPv4 address as one (mapped or not).
func TestShareByClientNet(t *testing.T) {
	for _, tc := range []struct {
		name                string
		client, same, other func(i int) string
	}{
		{"IPv6 /64",
			func(i int) string { return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}).String() },
			func(int) string { return "2001:db8::ffff:1" },
			func(int) string { return "2001:db8:0:1::1" }},
		{"IPv4",
			func(int) string { return "192.0.2.1" },
			func(int) string { return "::ffff:192.0.2.1" },
			func(int) string { return "192.0.2.2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ql := &queueListener{}
			l := newLimitListener(ql, 256)
			share := l.perAddr // 64
			for i := range share {
				ql.q = append(ql.q, from(tc.client(i)))
			}
			ql.q = append(ql.q, from(tc.same(0)), from(tc.other(0)))
			var got []net.Conn
			for {
				c, err := l.Accept()
				if err != nil {
					break
				}
				got = append(got, c)
			}
			if len(got) != share+1 || l.refused.Load() != 1 {
				t.Fatalf("accepted %d, refused %d; want %d and 1", len(got), l.refused.Load(), share+1)
			}
			if last := got[len(got)-1].RemoteAddr().String(); last != from(tc.other(0)).RemoteAddr().String() {
				t.Errorf("last accepted from %s, want the other client", last)
			}
			// A connection closed gives its client a slot back.
			got[0].Close()
			ql.q = append(ql.q, from(tc.same(0)))
			if _, err := l.Accept(); err != nil {
				t.Errorf("after a close, same client: %v", err)
			}
		})
	}
}

// TestMakeRoomOnePerAccept: at the limit each accepted connection closes
// one unused one (not a batch); a client at its share makes room among its
// own /64.
func TestMakeRoomOnePerAccept(t *testing.T) {
	ql := &queueListener{}
	l := newLimitListener(ql, 4)
	type call struct {
		n    int
		from netip.Prefix
	}
	var calls []call
	l.makeRoom = func(n int, from netip.Prefix) int {
		calls = append(calls, call{n, from})
		return n
	}
	for i := range 6 {
		ql.q = append(ql.q, from(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}).String()))
	}
	for range 6 {
		if _, err := l.Accept(); err != nil {
			t.Fatal(err)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("makeRoom calls %v, want 2 (for the 5th and 6th connections)", calls)
	}
	for _, c := range calls {
		if c.n != 1 || c.from.IsValid() {
			t.Errorf("makeRoom(%d, %v), want (1, any client)", c.n, c.from)
		}
	}

	calls = nil
	l = newLimitListener(ql, 1024)
	l.makeRoom = func(n int, from netip.Prefix) int {
		calls = append(calls, call{n, from})
		return n
	}
	for i := range l.perAddr + 1 {
		ql.q = append(ql.q, from(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}).String()))
	}
	for range l.perAddr + 1 {
		if _, err := l.Accept(); err != nil {
			t.Fatal(err)
		}
	}
	if want := netip.MustParsePrefix("2001:db8::/64"); len(calls) != 1 || calls[0].n != 1 || calls[0].from != want {
		t.Errorf("makeRoom calls %v, want one (1, %v)", calls, want)
	}
}

// errListener fails every Accept with err.
type errListener struct {
	net.Listener
	err error
}

func (l errListener) Accept() (net.Conn, error) { return nil, l.err }

// TestOutOfFilesMakesRoom (QA H1): an accept that fails for want of file
// descriptors (EMFILE, ENFILE) closes a connection that holds a slot
// without using it, as the connection limit does, rather than wait for
// whoever holds the descriptors to leave; other errors close nothing.
func TestOutOfFilesMakesRoom(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, 1},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, 1},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}, 0},
	} {
		l := newLimitListener(errListener{err: tc.err}, 10)
		called := 0
		l.makeRoom = func(n int, from netip.Prefix) int {
			called += n
			if from.IsValid() {
				t.Errorf("%v: room made among %v's connections, want all", tc.err, from)
			}
			return n
		}
		if _, err := l.Accept(); !errors.Is(err, tc.err) {
			t.Errorf("Accept: %v, want %v", err, tc.err)
		}
		if called != tc.want {
			t.Errorf("%v: %d connections closed, want %d", tc.err, called, tc.want)
		}
	}
}
