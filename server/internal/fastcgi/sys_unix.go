//go:build unix

package fastcgi

import (
	"net"
	"syscall"

	"github.com/arkaweb/arka/server/internal/wire"
)

type kind int

const (
	kindMissing kind = iota
	kindFile
	kindDir
	kindOther
)

// fileKind stats the path a+b+c, following symbolic links, without
// allocating where the platform allows.
func fileKind(a, b, c string) kind {
	var st syscall.Stat_t
	for {
		err := stat(a, b, c, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			// ENOENT, ENOTDIR ("/photo.jpg/x.php"), EACCES: all "not here".
			return kindMissing
		}
		break
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return kindFile
	case syscall.S_IFDIR:
		return kindDir
	}
	return kindOther
}

// peeker tells whether an idle connection can no longer carry a request:
// the peer closed it (a php-fpm worker that reached pm.max_requests, a
// restarted php-fpm) or sent bytes nobody asked for. It peeks without
// blocking, one system call and no allocation per call (the raw
// connection and the callback are made once per connection).
type peeker struct {
	rc     syscall.RawConn
	fn     func(fd uintptr) bool
	closed bool
	buf    [1]byte
}

func (p *peeker) init(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.rc, p.fn = rc, p.peek
}

func (p *peeker) peek(fd uintptr) bool {
	n, err := wire.RecvPeek(int(fd), p.buf[:])
	switch {
	case err == syscall.EAGAIN || err == syscall.EINTR:
	case err != nil || n >= 0:
		// n == 0: orderly shutdown; n > 0: unexpected data.
		p.closed = true
	}
	return true
}

// peerClosed reports whether the peer closed the connection (see peeker).
// Connections that are no *net.TCPConn or *net.UnixConn report false.
func (p *peeker) peerClosed() bool {
	if p.rc == nil {
		return false
	}
	p.closed = false
	err := p.rc.Read(p.fn)
	return p.closed || err != nil
}
