//go:build linux

package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// maxRW is the most one read or write system call is asked to move, as in
// internal/poll.
const maxRW = 1 << 30

// RawConn is a socket connection whose Read and Write make raw system
// calls (see the package doc); everything else is the wrapped connection's. Like
// net.Conn it is safe for concurrent use: one Read and one Write may run
// at once, further ones wait.
type RawConn struct {
	net.Conn // *net.TCPConn or *net.UnixConn: Close, addresses, deadlines
	rc       syscall.RawConn

	rmu     sync.Mutex
	rp      []byte
	rn      int
	rerr    syscall.Errno
	reof    bool
	readFn  func(uintptr) bool // c.readStep, bound once
	wmu     sync.Mutex
	wp      []byte
	wn      int
	werr    syscall.Errno
	writeFn func(uintptr) bool // c.writeStep, bound once
}

// RawTCPConn is a RawConn over a *net.TCPConn: ReadFrom goes to it, so a
// file is sent with sendfile(2) (which may wait for the disk, so it keeps
// the runtime's bookkeeping).
type RawTCPConn struct {
	RawConn
	tcp *net.TCPConn
}

// ReadFrom is (*net.TCPConn).ReadFrom: sendfile(2) for an *os.File, bare
// or in an *io.LimitedReader.
func (c *RawTCPConn) ReadFrom(r io.Reader) (int64, error) { return c.tcp.ReadFrom(r) }

// WriteBuffers writes b in one writev(2) through the *net.TCPConn
// (net.Buffers.WriteTo uses writev only for the net package's own types):
// package h1's head and large body.
func (c *RawTCPConn) WriteBuffers(b *net.Buffers) (int64, error) { return b.WriteTo(c.tcp) }

// Raw wraps a *net.TCPConn (into a *RawTCPConn) or a *net.UnixConn (into
// a *RawConn) whose reads and writes then skip the runtime's system call
// bookkeeping; other connections are returned as they are.
func Raw(c net.Conn) net.Conn {
	switch t := c.(type) {
	case *net.TCPConn:
		rc, err := t.SyscallConn()
		if err != nil {
			return c
		}
		r := &RawTCPConn{tcp: t}
		r.init(t, rc)
		return r
	case *net.UnixConn:
		rc, err := t.SyscallConn()
		if err != nil {
			return c
		}
		r := &RawConn{}
		r.init(t, rc)
		return r
	}
	return c
}

func (c *RawConn) init(nc net.Conn, rc syscall.RawConn) {
	c.Conn, c.rc = nc, rc
	c.readFn, c.writeFn = c.readStep, c.writeStep
}

// readStep reads once, first: a wait that came before the read could miss
// bytes that arrived since the last one (see package h1's doc). It
// returns false, to wait for readiness, only on EAGAIN.
func (c *RawConn) readStep(fd uintptr) bool {
	for {
		n, e := sysRead(fd, c.rp)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			c.rerr = e
		case n == 0:
			c.reof = true
		default:
			c.rn = n
		}
		return true
	}
}

// Read reads into p, as (*net.TCPConn).Read: io.EOF at the end of the
// stream, a *net.OpError otherwise.
func (c *RawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	c.rmu.Lock()
	c.rp, c.rn, c.rerr, c.reof = p, 0, 0, false
	err := c.rc.Read(c.readFn)
	n, e, eof := c.rn, c.rerr, c.reof
	c.rp = nil
	c.rmu.Unlock()
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case e != 0:
		return 0, c.opError("read", os.NewSyscallError("read", e))
	case eof:
		return 0, io.EOF
	}
	return n, nil
}

// writeStep writes what is left of c.wp, returning false to wait when the
// socket's buffer is full.
func (c *RawConn) writeStep(fd uintptr) bool {
	for c.wn < len(c.wp) {
		p := c.wp[c.wn:]
		if len(p) > maxRW {
			p = p[:maxRW]
		}
		n, e := sysWrite(fd, p)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			c.werr = e
			return true
		case n == 0:
			c.werr = syscall.EIO // as internal/poll's io.ErrUnexpectedEOF: never seen on a socket
			return true
		}
		c.wn += n
	}
	return true
}

// Write writes all of p or returns why not, as (*net.TCPConn).Write.
func (c *RawConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.wmu.Lock()
	c.wp, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeFn)
	n, e := c.wn, c.werr
	c.wp = nil
	c.wmu.Unlock()
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case e != 0:
		return n, c.opError("write", os.NewSyscallError("write", e))
	}
	return n, nil
}

func (c *RawConn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err // RawConn's own ("raw-read"), for the deadline or Close
	}
	la := c.Conn.LocalAddr()
	return &net.OpError{Op: op, Net: la.Network(), Source: la, Addr: c.Conn.RemoteAddr(), Err: err}
}

// SyscallConn is the wrapped connection's (wire.Sender waits with it).
func (c *RawConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// CloseWrite shuts down the writing side (shutdown(2) SHUT_WR).
func (c *RawConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return syscall.EOPNOTSUPP
}

// CloseRead shuts down the reading side (shutdown(2) SHUT_RD).
func (c *RawConn) CloseRead() error {
	if cr, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return cr.CloseRead()
	}
	return syscall.EOPNOTSUPP
}

// NetConn returns the wrapped connection.
func (c *RawConn) NetConn() net.Conn { return c.Conn }
