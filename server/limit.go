package server

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
)

// limitListener bounds the connections open at once on a listener, and
// the share of them one client address may hold. At the limit it makes
// room by closing, in this order, connections that hold a slot without
// using it (see listener.makeRoom): idle keep-alive ones (as nginx reuses
// them), HTTP/2 ones with no running handler, HTTP/1.1 ones still sending
// their request head, TLS handshakes in progress. A slowloris client,
// which drips header bytes to keep its slots, thus loses them to real
// clients instead of refusing them. If nothing can be closed the new
// connection is closed at once, so a flood of clients cannot take the
// memory of a small board. An accept that fails for want of file
// descriptors (EMFILE, ENFILE) makes room the same way.
type limitListener struct {
	net.Listener
	max     int64
	perAddr int // most connections from one client (maxPerAddr)
	n       atomic.Int64
	// makeRoom closes up to n unused connections (from one client
	// network, if valid) and returns how many; may be nil.
	makeRoom func(n int, from netip.Prefix) int

	mu     sync.Mutex
	byAddr map[netip.Prefix]int // by clientNet: IPv4 address, IPv6 /64

	refused atomic.Int64 // connections closed at once (limit or share)
}

// maxPerAddr is one client's share (an IPv4 address or an IPv6 /64, see
// clientNet) of max connections: a quarter,
// but never fewer than 64 (or max, if smaller), so that a shared address
// (a NAT) keeps room while one client alone cannot fill every slot. The
// spooled request bodies' budget (spoolBudget) shares its files and bytes
// the same way.
func maxPerAddr[T int | int64](limit T) T { return max(limit/4, min(limit, 64)) }

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), perAddr: maxPerAddr(max), byAddr: map[netip.Prefix]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.makeRoom != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
				// Out of file descriptors: a connection that holds a
				// slot without using it gives its descriptor back, as at
				// the connection limit, one per failed accept (the
				// accept loop retries, wire.Accept).
				l.makeRoom(1, netip.Prefix{})
			}
			return nil, err
		}
		addr := clientNet(remoteAddr(c))
		// A client at its share makes room among its own connections;
		// any other, at the limit, among all.
		l.mu.Lock()
		over := l.byAddr[addr] >= l.perAddr
		l.mu.Unlock()
		if over && (l.makeRoom == nil || l.makeRoom(1, addr) == 0) {
			l.refused.Add(1)
			c.Close()
			continue
		}
		l.mu.Lock()
		l.byAddr[addr]++
		l.mu.Unlock()
		// One connection closed for the one accepted: each closed is a
		// client's (a keep-alive one's next request pays a new handshake),
		// and closing a batch ahead buys nothing, as the search for a
		// candidate stops at the first one found.
		if l.n.Load() >= l.max && (l.makeRoom == nil || l.makeRoom(1, netip.Prefix{}) == 0) {
			l.release(addr)
			l.refused.Add(1)
			c.Close()
			continue
		}
		l.n.Add(1)
		lc := &limitConn{Conn: c, l: l, addr: addr}
		if tc, ok := c.(tcpConn); ok {
			return &limitTCPConn{limitConn: lc, tcp: tc}, nil
		}
		return lc, nil
	}
}

func (l *limitListener) release(addr netip.Prefix) {
	l.mu.Lock()
	if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
		delete(l.byAddr, addr)
	}
	l.mu.Unlock()
}

func remoteAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	addr netip.Prefix // clientNet of the remote address
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.n.Add(-1)
		c.l.release(c.addr)
	})
	return c.Conn.Close()
}

// tcpConn is what a TCP connection offers beyond net.Conn: sendfile and
// half-close (*net.TCPConn, *wire.RawTCPConn).
type tcpConn interface {
	io.Writer
	ReadFrom(io.Reader) (int64, error)
	CloseWrite() error
}

// limitTCPConn keeps sendfile and half-close available to the engine.
type limitTCPConn struct {
	*limitConn
	tcp tcpConn
}

func (c *limitTCPConn) ReadFrom(r io.Reader) (int64, error) { return c.tcp.ReadFrom(r) }
func (c *limitTCPConn) CloseWrite() error                   { return c.tcp.CloseWrite() }

// WriteBuffers writes b to the TCP connection in one writev (the HTTP/1.1
// engine's head and body; net.Buffers.WriteTo uses writev only for the
// net package's own types).
func (c *limitTCPConn) WriteBuffers(b *net.Buffers) (int64, error) {
	if bw, ok := c.tcp.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	}); ok {
		return bw.WriteBuffers(b) // a *wire.RawTCPConn
	}
	return b.WriteTo(c.tcp)
}
