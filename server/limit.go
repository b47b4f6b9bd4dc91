package server

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// limitListener bounds the connections open at once on a listener. At the
// limit it first closes idle keep-alive connections (as nginx reuses them);
// if none is idle the new connection is closed at once, so a flood of
// clients cannot take the memory of a small board.
type limitListener struct {
	net.Listener
	max       int64
	n         atomic.Int64
	closeIdle func(int) int // may be nil
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.n.Load() >= l.max && (l.closeIdle == nil || l.closeIdle(16) == 0) {
			c.Close()
			continue
		}
		l.n.Add(1)
		lc := &limitConn{Conn: c, l: l}
		if tc, ok := c.(*net.TCPConn); ok {
			return &limitTCPConn{limitConn: lc, tcp: tc}, nil
		}
		return lc, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.l.n.Add(-1) })
	return c.Conn.Close()
}

// limitTCPConn keeps sendfile and half-close available to the engine.
type limitTCPConn struct {
	*limitConn
	tcp *net.TCPConn
}

func (c *limitTCPConn) ReadFrom(r io.Reader) (int64, error) { return c.tcp.ReadFrom(r) }
func (c *limitTCPConn) CloseWrite() error                   { return c.tcp.CloseWrite() }
