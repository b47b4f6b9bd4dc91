//go:build unix

package proxy

import (
	"net"
	"syscall"
)

// alive reports whether an idle upstream connection is still open: a
// non-blocking peek finds neither end of stream (the upstream closed it) nor
// unexpected bytes. One system call; used only for connections that sat
// idle for a while, where a close by the upstream's own idle timeout is
// likely.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var buf [1]byte
	open := true
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n > 0:
			open = false // bytes nobody asked for
		case n == 0 && err == nil:
			open = false // end of stream
		case err == syscall.EAGAIN:
			// Nothing to read: open and quiet, as it should be.
		default:
			open = false
		}
		return true
	})
	return err == nil && open
}
