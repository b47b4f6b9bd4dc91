//go:build unix

package fastcgi

import (
	"net"
	"syscall"
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

// peerClosed reports whether an idle connection can no longer carry a
// request: the peer closed it (a php-fpm worker that reached
// pm.max_requests, or a restarted php-fpm) or sent bytes nobody asked for.
// It peeks without blocking and costs one system call.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
		case err != nil || n >= 0:
			// n == 0: orderly shutdown; n > 0: unexpected data.
			closed = true
		}
		return true
	})
	return closed || err != nil
}
