package wire

import (
	"syscall"
	"unsafe"
)

// RecvPeek reads into b with MSG_PEEK|MSG_DONTWAIT (the liveness check of
// a kept upstream or php-fpm connection) and no source address,
// so nothing is allocated (syscall.Recvfrom makes a Sockaddr for unix
// sockets).
func RecvPeek(fd int, b []byte) (int, error) {
	n, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
