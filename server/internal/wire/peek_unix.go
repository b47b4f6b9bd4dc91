//go:build unix && !linux

package wire

import "syscall"

// RecvPeek reads into b with MSG_PEEK|MSG_DONTWAIT (the liveness check of
// a kept upstream or php-fpm connection).
func RecvPeek(fd int, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
