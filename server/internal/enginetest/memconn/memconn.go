// Package memconn is the in-memory connection the engines' fuzz tests
// (server/internal/h1, server/internal/h2) serve: the client's bytes are
// given up front, so no timer decides when an input is over and each
// input costs microseconds. Only tests import it.
package memconn

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// MaxOut is how many bytes a Conn keeps of what the server writes; a
// write past it fails with io.ErrShortWrite.
const MaxOut = 1 << 20

// Conn is a net.Conn whose client sent In and then closed its side; what
// the server writes is kept (up to MaxOut bytes). Deadlines are ignored;
// Close does nothing. Its addresses are 127.0.0.1 port 40000 (client) and
// Local (127.0.0.1:80 when nil).
type Conn struct {
	In    io.Reader
	Local net.Addr
	// Busy, when set, counts the server's handlers that are running. At
	// the end of In, Read then lets the handlers run and the server write
	// (yielding until no handler runs and nothing was written for a
	// while, a bounded number of times: a handler may wait for a body
	// that never comes) before the server sees the end, so that an
	// engine running handlers beside its reads (HTTP/2) writes their
	// responses too.
	Busy *atomic.Int32

	waited bool
	mu     sync.Mutex
	out    bytes.Buffer
}

func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.In.Read(p)
	if err == io.EOF && c.Busy != nil && !c.waited {
		c.waited = true
		last, quiet := -1, 0
		for i := 0; i < 1000 && quiet < 50; i++ {
			runtime.Gosched()
			c.mu.Lock()
			n := c.out.Len()
			c.mu.Unlock()
			if n != last || c.Busy.Load() > 0 {
				last, quiet = n, 0
			} else {
				quiet++
			}
		}
	}
	return n, err
}

func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out.Len()+len(p) > MaxOut {
		return 0, io.ErrShortWrite
	}
	return c.out.Write(p)
}

// Out returns what the server wrote; call it once the server is done.
func (c *Conn) Out() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Bytes()
}

func (c *Conn) Close() error { return nil }

func (c *Conn) LocalAddr() net.Addr {
	if c.Local != nil {
		return c.Local
	}
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
}

func (c *Conn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}

func (c *Conn) SetDeadline(t time.Time) error      { return nil }
func (c *Conn) SetReadDeadline(t time.Time) error  { return nil }
func (c *Conn) SetWriteDeadline(t time.Time) error { return nil }
