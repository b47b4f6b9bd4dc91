//go:build unix

package proxy

import (
	"net"
	"syscall"
)

// alive reports whether an idle upstream connection is still open and
// quiet: a non-blocking peek finds neither end of stream (the upstream
// closed it) nor bytes nobody asked for. One system call, made on the
// descriptor directly (RawConn.Control): neither the poller nor a read
// deadline left armed by the last exchange is involved.
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
	err = rc.Control(func(fd uintptr) {
		for {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EINTR:
				continue
			case n > 0:
				open = false // bytes nobody asked for
			case n == 0 && err == nil:
				open = false // end of stream
			case err == syscall.EAGAIN:
				// Nothing to read: open and quiet, as it should be.
			default:
				open = false
			}
			return
		}
	})
	return err == nil && open
}
